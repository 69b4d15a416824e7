"""Streaming by default (data.*.stream: auto) with the real binary: a job of 400,000
MNIST-sized tf.Examples in 8 TFRecord shards and no stream key trains 200 steps under
300 MiB peak RSS (read whole it held 320 MB of float32 pixels, 2.4 GiB at its peak);
start-up says in one line what each source does and why; stream: false still reads
tfrecord whole, auto reads whole what cannot stream (skip, other formats), and
cache: memory streams from the records kept in memory."""
import re
import subprocess
import time

import pytest
from safetensors import safe_open

from conftest import MLP_JOB, SAMPLE_IMAGES, SAMPLE_LABELS, dtrain_bin, peak_rss_command, read_peak_rss_kib, \
    run_dtrain
from mnist_shards import write_mnist_shards

JOB = """
model:
  input: {{shape: [28, 28, 1]}}
  layers:
    - {{type: conv2d, filters: 8, kernel: 3, padding: same, activation: relu}}
    - {{type: max_pool2d, size: 2}}
    - {{type: flatten}}
    - {{type: dense, units: 10}}
  loss: sparse_softmax_cross_entropy
optimizer: {{type: sgd, learning_rate: 0.05, momentum: 0.9}}
data:
  train: {{format: tfrecord, files: "{files}", label_feature: label, batch_size: 64, shuffle: 10000,
           scale: 0.00392156862745098,
           features: {{image: {{dtype: bytes, decode: raw_uint8, shape: [28, 28, 1]}}, label: {{dtype: int64}}}}{data}}}
run: {{model_dir: {model_dir}, max_steps: {steps}, save_checkpoints_steps: {steps}, save_summary_steps: 1000,
      log_step_count_steps: 1000, seed: 3}}
"""

MIB = 1 << 20


def write_job(tmp_path, name, shards, steps, data=""):
    path = tmp_path / f"{name}.yaml"
    path.write_text(JOB.format(files=shards / "data-*.tfrecord", model_dir=tmp_path / name, steps=steps,
                               data=", " + data if data else ""))
    return path, tmp_path / name


def metadata(path):
    with safe_open(str(path), "np") as f:
        return f.metadata()


@pytest.fixture(scope="module")
def mnist_400k(tmp_path_factory):
    """400,000 examples in 8 shards (about 320 MiB), written once for the module."""
    shards = tmp_path_factory.mktemp("mnist400k")
    paths, total = write_mnist_shards(shards, 8, 400_000)
    return shards, total


def test_400k_example_tfrecord_job_without_a_stream_key_trains_200_steps_under_300_mib(tmp_path, mnist_400k):
    shards, total = mnist_400k
    path, model_dir = write_job(tmp_path, "big", shards, 200)
    assert "stream" not in path.read_text()
    report, log = tmp_path / "peak-rss", tmp_path / "big.log"
    start = time.time()
    with open(log, "w") as f:
        proc = subprocess.run(peak_rss_command([dtrain_bin(), "train", path, "--no-eval", "--log-format", "plain"],
                                               report), stdout=f, stderr=subprocess.STDOUT, timeout=600)
    elapsed = time.time() - start
    text = log.read_text()
    assert proc.returncode == 0, text[-3000:]
    peak = read_peak_rss_kib(report) * 1024
    assert f"data.train: 8 tfrecord files, {total / MIB:.1f} MiB: streaming (stream: auto: format tfrecord streams)\n" \
        in text, text[:3000]
    assert "data.train: streaming 8 of 8 tfrecord files (file order shuffled each epoch)" in text
    ckpt = model_dir / "model.ckpt-200.safetensors"
    assert "input_state" in metadata(ckpt)  # a streamed input's exact position
    print(f"\n400,000 examples in 8 shards ({total / MIB:.1f} MiB): 200 steps of 64 in {elapsed:.1f} s, "
          f"peak RSS {peak / MIB:.0f} MiB (read whole as float32: {400_000 * 785 * 4 / MIB:.0f} MiB of data)")
    assert peak < 300 * MIB


@pytest.fixture
def small_shards(tmp_path):
    shards = tmp_path / "shards"
    shards.mkdir()
    _, total = write_mnist_shards(shards, 2, 600, seed=1)
    return shards, total


def train(path, *args):
    out = run_dtrain("train", path, "--no-eval", "--log-format", "plain", *args)
    assert out.returncode == 0, out.stderr[-3000:]
    return out.stderr


def test_tfrecord_streams_unless_stream_false_or_skip_and_start_up_says_why(tmp_path, small_shards):
    shards, total = small_shards
    size = f"2 tfrecord files, {total / MIB:.1f} MiB"

    auto, auto_dir = write_job(tmp_path, "auto", shards, 12)
    log = train(auto)
    assert f"data.train: {size}: streaming (stream: auto: format tfrecord streams)\n" in log, log
    assert "data.train: streaming 2 of 2 tfrecord files" in log
    assert "input_state" in metadata(auto_dir / "model.ckpt-12.safetensors")

    whole, whole_dir = write_job(tmp_path, "whole", shards, 12, "stream: false")
    log = train(whole)
    assert re.search(rf"^data\.train: {re.escape(size)}: read whole \(stream: false\)$", log, re.M), log
    assert "data.train: 600 examples held in memory as float32 (1.8 MiB; streaming reads the files as training " \
        "goes)" in log
    assert "streaming" not in log.replace("streaming reads", "")
    assert "input_state" not in metadata(whole_dir / "model.ckpt-12.safetensors")

    skip, _ = write_job(tmp_path, "skip", shards, 12, "skip: 100")
    log = train(skip)
    assert re.search(rf"^data\.train: {re.escape(size)}: read whole \(stream: auto: skip and take count the examples "
                     r"of the whole data set\)$", log, re.M), log
    assert "examples held in memory as float32" in log

    cached, _ = write_job(tmp_path, "cached", shards, 30, "cache: memory")
    log = train(cached)
    assert f"data.train: {size}: streaming, the encoded records kept in memory once read (stream: auto: format " \
        "tfrecord streams)\n" in log, log
    assert "cache memory: later epochs read the records from memory" in log

    forced, _ = write_job(tmp_path, "forced", shards, 12, "stream: true")
    assert f"data.train: {size}: streaming (stream: true)\n" in train(forced)


def test_cache_memory_on_a_source_read_whole_is_a_config_error(tmp_path, small_shards):
    shards, _ = small_shards
    path, _ = write_job(tmp_path, "bad", shards, 12, "stream: false, cache: memory")
    out = run_dtrain("train", path, "--no-eval", "--log-format", "plain")
    assert out.returncode == 2, out.stderr
    assert out.stderr.strip().endswith(
        "data.train: cache: memory applies to streamed input, and this one is read whole (stream: false); a source "
        "read whole is held in memory already"), out.stderr


def test_formats_that_do_not_stream_are_read_whole_without_a_line_unless_it_may_not_fit(tmp_path):
    job = tmp_path / "idx.yaml"
    job.write_text(MLP_JOB.format(images=SAMPLE_IMAGES, labels=SAMPLE_LABELS, model_dir=tmp_path / "run", max_steps=20,
                                  save_steps=20, keep=1))
    out = run_dtrain("train", job, "--log-format", "plain")
    assert out.returncode == 0, out.stderr[-3000:]
    size = (SAMPLE_IMAGES.stat().st_size + SAMPLE_LABELS.stat().st_size) / MIB
    # Nothing to choose and it fits: the log stays quiet (dtrain data bench still prints the line).
    assert "read whole" not in out.stderr and f"{size:.1f} MiB" not in out.stderr, out.stderr
    out = run_dtrain("train", job, "--no-eval", "--set", "data.train.stream=true")
    assert out.returncode == 2
    assert out.stderr.strip().endswith("data.train: stream: true reads format tfrecord only (format idx is read whole; "
                                       "write it as tfrecord shards with dtrain data convert)"), out.stderr


def test_stream_takes_auto_true_or_false(tmp_path, small_shards):
    shards, _ = small_shards
    path, _ = write_job(tmp_path, "job", shards, 12)
    out = run_dtrain("validate", path)
    assert out.returncode == 0, out.stderr
    assert "stream: auto" in out.stdout
    out = run_dtrain("validate", path, "--set", "data.train.stream=false")
    assert out.returncode == 0, out.stderr
    assert "stream: false" in out.stdout
    out = run_dtrain("validate", path, "--set", "data.train.stream=sometimes")
    assert out.returncode == 2
    assert 'data.train.stream: expected "auto" or true or false, got "sometimes"' in out.stderr, out.stderr
