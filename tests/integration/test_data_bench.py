"""dtrain data bench with the real binary: it reads a streamed JPEG input as training
would and reports sane numbers (examples/s from its own counts and time, the
features' mean against Pillow's decode of the same files, its VmHWM against the
process's peak RSS measured from outside), --json parses, and bad input gives the
loader's own errors."""
import io
import json
import re
import subprocess

import numpy as np
import pytest
from PIL import Image

from conftest import SOURCE_ROOT, dtrain_bin, peak_rss_command, read_peak_rss_kib, run_dtrain
from jpeg_shards import jpegs, write_shards

SHARDS, RECORDS, SIZE, DISTINCT = 2, 40, 32, 8

JOB = """
model:
  input: {{shape: [{crop}, {crop}, 3]}}
  layers:
    - {{type: global_avg_pool2d}}
    - {{type: dense, units: 10}}
  loss: sparse_softmax_cross_entropy
optimizer: {{type: sgd, learning_rate: 0.1}}
data:
  train: {{format: tfrecord, files: "shards/data-*.tfrecord", stream: true, label_feature: label, batch_size: 16,
          features: {{image: {{dtype: bytes, decode: jpeg, shape: [{size}, {size}, 3]}}, label: {{dtype: int64}}}},
          shuffle: 20, num_parallel_calls: 2, map: {map}}}
run: {{model_dir: {model_dir}, max_steps: 10, seed: 5}}
"""

IMAGENET_MAP = ("[{random_resized_crop: {size: [24, 24], scale: [0.08, 1.0], ratio: [0.75, 1.3333]}}, "
                "{random_flip: horizontal}, {normalize: {mean: [123.7, 116.3, 103.5], std: [58.4, 57.1, 57.4]}}]")


def make_job(tmp_path, crop=24, map_text=IMAGENET_MAP):
    shards = tmp_path / "shards"
    if not shards.exists():
        shards.mkdir()
        write_shards(shards, SHARDS, RECORDS, SIZE, distinct=DISTINCT)
    job = tmp_path / "job.yaml"
    job.write_text(JOB.format(crop=crop, size=SIZE, map=map_text, model_dir=tmp_path / "run"))
    return job


def test_text_report_has_every_field(tmp_path):
    out = run_dtrain("data", "bench", make_job(tmp_path), "--batches", "3", "--warmup", "1")
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    size = sum(p.stat().st_size for p in (tmp_path / "shards").iterdir()) / 2**20
    assert lines.pop(0) == f"data.train: 2 tfrecord files, {size:.1f} MiB: streaming (stream: true)"
    assert lines[0] == ("data.train: streaming 2 of 2 tfrecord files (file order shuffled each epoch), interleave "
                        "1 x 1, shuffle buffer 20 records, 2 decode threads, prefetch 2 batches of 0.1 MiB; "
                        "no max_buffer_mb")
    assert lines[1].startswith("threads: ") and lines[1].endswith("; input 2")
    assert re.fullmatch(r"data\.train: 3 batches \(48 examples\) of global batch 16 after 1 warm-up; features "
                        r"\[24, 24, 3\], mean -?\d+\.\d{4}, std \d+\.\d{4}, all finite", lines[2]), lines[2]
    values = {}
    for line in lines[3:]:
        key, _, rest = line.partition(": ")
        values[key] = float(rest.split()[0])
    assert set(values) == {"examples/s", "batches/s", "MiB/s", "time", "peak RSS"}
    seconds = values["time"]
    assert seconds > 0
    assert values["examples/s"] == pytest.approx(48 / seconds, rel=0.01)
    assert values["batches/s"] == pytest.approx(3 / seconds, rel=0.01)
    assert values["MiB/s"] == pytest.approx(48 * 24 * 24 * 3 * 4 / 2**20 / seconds, rel=0.01)
    assert 5 < values["peak RSS"] < 1024


def pillow_pixel_mean():
    """Mean of every pixel value 0..255 of one epoch, decoded by Pillow: record r of shard s holds
    image (r + s) % DISTINCT (jpeg_shards.write_shards)."""
    decoded = [np.asarray(Image.open(io.BytesIO(j)).convert("RGB"), dtype=np.float64) for j in jpegs(DISTINCT, SIZE)]
    total = sum(decoded[(r + s) % DISTINCT].sum() for s in range(SHARDS) for r in range(RECORDS))
    return total / (SHARDS * RECORDS * SIZE * SIZE * 3)


def test_json_one_epoch_counts_every_example_and_matches_pillow(tmp_path):
    # No map: the features are the decoded pixels, whose mean Pillow gives independently.
    job = make_job(tmp_path, crop=SIZE, map_text="[]")
    report = tmp_path / "rss"
    cmd = peak_rss_command([dtrain_bin(), "data", "bench", job, "--batches", "0", "--warmup", "0", "--json",
                            "--set", "data.train.repeat=false"], report)
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    r = json.loads(out.stdout)
    assert r["split"] == "train" and r["ended"] is True
    assert r["stream"].endswith(": streaming (stream: true)")
    assert r["batches"] == 5 and r["examples"] == SHARDS * RECORDS and r["warmup_batches"] == 0
    assert r["global_batch"] == 16 and r["feature_shape"] == [SIZE, SIZE, 3]
    assert r["examples_per_sec"] == pytest.approx(r["examples"] / r["seconds"], rel=1e-9)
    assert 0 <= r["check_seconds"] <= r["seconds"]
    assert abs(r["feature_mean"] - pillow_pixel_mean()) < 0.05
    assert 20 < r["feature_std"] < 128
    # Its own VmHWM against the peak RSS seen from outside the process.
    outside = read_peak_rss_kib(report)
    assert 0.8 * outside <= r["peak_rss_kib"] <= outside * 1.05 + 1024, (r["peak_rss_kib"], outside)


def test_eval_split_reads_data_eval_to_its_end():
    out = run_dtrain("data", "bench", SOURCE_ROOT / "sample_configs/mnist_cnn.yaml", "--split", "eval",
                     "--batches", "0", "--warmup", "0", "--json")
    assert out.returncode == 0, out.stderr
    r = json.loads(out.stdout)
    # data.eval: the last 1000 of the sample's 10,000 digits (skip 9000) in batches of 500, scaled to 0..1.
    assert (r["split"], r["ended"], r["batches"], r["examples"], r["global_batch"]) == ("eval", True, 2, 1000, 500)
    assert r["feature_shape"] == [28, 28, 1] and 0.05 < r["feature_mean"] < 0.25
    assert r["stream"].startswith("data.eval: 2 idx files, ") and \
        r["stream"].endswith(": read whole (stream: auto: format idx does not stream)")


def test_missing_split_is_a_job_error(tmp_path):
    out = run_dtrain("data", "bench", make_job(tmp_path), "--split", "eval")
    assert out.returncode == 2
    assert out.stderr == (f"dtrain: {tmp_path}/job.yaml: data.eval: not in the job, so there is no input to read; "
                          "give the job a data.eval section, or read data.train (--split train)\n")


def test_batches_zero_on_a_repeating_input_is_refused(tmp_path):
    out = run_dtrain("data", "bench", make_job(tmp_path), "--batches", "0")
    assert out.returncode == 2
    assert out.stderr == (f"dtrain: {tmp_path}/job.yaml:10:10: data.train: --batches 0 reads to the end of the "
                          "input, but data.train repeats forever; add --set data.train.repeat=false, or give "
                          "--batches N\n")


def test_bad_data_gives_the_loaders_error(tmp_path):
    job = make_job(tmp_path, crop=16, map_text="[]")
    out = run_dtrain("data", "bench", job, "--set", "data.train.features.image.shape=[16,16,3]")
    assert out.returncode == 3
    assert re.fullmatch(r"dtrain: .*/shards/data-0000[01]-of-00002\.tfrecord: record \d+: feature \"image\": JPEG "
                        r"is 32x32 \(height x width\) but the shape needs 16x16\n", out.stderr), out.stderr
    missing = run_dtrain("data", "bench", job, "--set", "data.train.files=nothing-*.tfrecord")
    assert missing.returncode == 3
    assert missing.stderr == f"dtrain: {tmp_path}/nothing-*.tfrecord: no file matches\n"
    assert missing.stdout == ""


def test_jpeg_decode_limit_decodes_every_image_whole(tmp_path):
    """bench/jpeg_decode_limit, bench_images.py's ceiling: every record decoded at full size
    (the pixel count of a pass) to the pixels Pillow decodes (their mean)."""
    tool = SOURCE_ROOT / "build/bench/jpeg_decode_limit"
    if not tool.exists():
        pytest.skip(f"{tool} not built")
    make_job(tmp_path)
    out = subprocess.run([tool, tmp_path / "shards/data-*.tfrecord", "--min-seconds", "0.05"], capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    r = json.loads(out.stdout)
    assert r["images"] == SHARDS * RECORDS and r["pixels_per_pass"] == SHARDS * RECORDS * SIZE * SIZE
    assert r["passes"] >= 1 and r["images_per_sec"] == pytest.approx(r["passes"] * r["images"] / r["seconds"], rel=1e-4)
    assert abs(r["pixel_mean"] - pillow_pixel_mean()) < 0.05
    bad = subprocess.run([tool, tmp_path / "none-*.tfrecord"], capture_output=True, text=True, timeout=60)
    assert bad.returncode == 3 and bad.stderr.startswith("jpeg_decode_limit: ")


def test_a_value_that_is_not_finite_is_a_data_error(tmp_path):
    x = np.arange(40, dtype=np.float32).reshape(10, 4)
    x[5, 2] = np.nan
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "y.npy", np.arange(10) % 3)
    job = tmp_path / "nan.yaml"
    job.write_text("model:\n  input: {shape: [4]}\n  layers: [{type: dense, units: 3}]\n"
                   "  loss: sparse_softmax_cross_entropy\noptimizer: {type: sgd, learning_rate: 0.1}\n"
                   "data:\n  train: {format: npy, images: x.npy, labels: y.npy, batch_size: 4}\n"
                   f"run: {{model_dir: {tmp_path / 'run'}, max_steps: 1}}\n")
    out = run_dtrain("data", "bench", job, "--warmup", "0", "--batches", "3")
    assert out.returncode == 3
    assert out.stderr == (f"dtrain: {job}:7:10: data.train: batch 1 holds nan at example 5 of the source (value 2 of "
                          "its features): every feature must be finite\n")
    assert out.stdout == ""
    # The batch before it is fine: one batch is read and reported.
    ok = run_dtrain("data", "bench", job, "--warmup", "0", "--batches", "1", "--json")
    assert ok.returncode == 0, ok.stderr
    r = json.loads(ok.stdout)
    assert r["examples"] == 4 and r["feature_mean"] == pytest.approx(np.arange(16).mean())
    assert r["feature_std"] == pytest.approx(np.arange(16).std(), rel=1e-6)
