"""data.train.stream: true with the real binary: training on streamed TFRecord
shards of JPEGs (read every epoch, or cached in memory after the first) equals
training on the same shards loaded whole; a run killed
with SIGKILL mid-epoch resumes from the checkpoint's input state to the
uninterrupted run's variables and input state, bit for bit; 1 GiB of shards
trains under a 512 MiB address-space limit for the whole dtrain process."""
import json
import os
import resource
import signal
import subprocess
import time

import numpy as np
from safetensors import safe_open
from safetensors.numpy import load_file

from conftest import dtrain_bin, peak_rss_command, read_peak_rss_kib, run_dtrain
from jpeg_shards import write_shards

JOB = """
model:
  input: {{shape: [{size}, {size}, 3]}}
  layers:
    - {{type: conv2d, filters: 4, kernel: 3, strides: 2, activation: relu}}
    - {{type: global_avg_pool2d}}
{extra_layers}    - {{type: dense, units: 10}}
  loss: sparse_softmax_cross_entropy
optimizer: {{type: sgd, learning_rate: 0.05, momentum: 0.9}}
data:
  train: {{format: tfrecord, files: "{files}", label_feature: label, batch_size: {batch}, scale: 0.0039215686,
           features: {{image: {{dtype: bytes, decode: jpeg, shape: [{size}, {size}, 3]}}, label: {{dtype: int64}}}},
           {data}}}
run: {{model_dir: {model_dir}, max_steps: {steps}, save_checkpoints_steps: {save}, keep_checkpoint_max: 50,
      save_summary_steps: 1000, log_step_count_steps: 1000, seed: 3, deterministic: true}}
"""


def job(tmp_path, name, shards, size, batch, steps, save, data, extra_layers=""):
    path = tmp_path / f"{name}.yaml"
    path.write_text(JOB.format(size=size, files=shards / "data-*.tfrecord", batch=batch, steps=steps, save=save,
                               data=data, extra_layers=extra_layers, model_dir=tmp_path / name))
    return path, tmp_path / name


def assert_same(a_path, b_path):
    a, b = load_file(str(a_path)), load_file(str(b_path))
    assert a.keys() == b.keys()
    for k in a:
        assert np.array_equal(a[k], b[k]), k


def metadata(path):
    with safe_open(str(path), "np") as f:
        return f.metadata()


def test_streamed_shards_train_as_the_same_shards_loaded_whole(tmp_path):
    shards = tmp_path / "shards"
    shards.mkdir()
    write_shards(shards, 2, 100, 16, distinct=16)
    env = {"OMP_NUM_THREADS": "1"}
    streamed, _ = job(tmp_path, "stream", shards, 16, 10, 30, 30, "stream: true, num_parallel_calls: 2")
    whole, _ = job(tmp_path, "whole", shards, 16, 10, 30, 30, "stream: false")
    cached, _ = job(tmp_path, "cached", shards, 16, 10, 30, 30, "stream: true, cache: memory")
    for path in (streamed, whole, cached):
        out = run_dtrain("train", path, "--no-eval", "--log-format", "plain", env=env)
        assert out.returncode == 0, out.stderr[-3000:]
    assert_same(tmp_path / "stream" / "model.ckpt-30.safetensors", tmp_path / "whole" / "model.ckpt-30.safetensors")
    assert_same(tmp_path / "cached" / "model.ckpt-30.safetensors", tmp_path / "whole" / "model.ckpt-30.safetensors")
    state = json.loads(metadata(tmp_path / "stream" / "model.ckpt-30.safetensors")["input_state"])
    assert state["epoch"] == 1 and state["draws"] == 100  # 300 records: one epoch of 200 and half the next
    assert "input_state" not in metadata(tmp_path / "whole" / "model.ckpt-30.safetensors")


def test_sigkill_mid_epoch_then_resume_is_bit_identical(tmp_path):
    shards = tmp_path / "shards"
    shards.mkdir()
    write_shards(shards, 4, 250, 16, distinct=32)
    data = "stream: true, shuffle: 200, interleave: {cycle_length: 2, block_length: 4}, num_parallel_calls: 2"
    dropout = "    - {type: dropout, rate: 0.2}\n"
    ref, ref_dir = job(tmp_path, "ref", shards, 16, 8, 200, 10, data, dropout)
    out = run_dtrain("train", ref, "--no-eval", "--log-format", "plain")
    assert out.returncode == 0, out.stderr[-3000:]
    assert ("data.train: streaming 4 of 4 tfrecord files (file order shuffled each epoch), interleave 2 x 4, "
            "shuffle buffer 200 records") in out.stderr, out.stderr

    path, model_dir = job(tmp_path, "killed", shards, 16, 8, 200, 10, data, dropout)
    proc = subprocess.Popen([dtrain_bin(), "train", str(path), "--no-eval", "--log-format", "plain"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 300
    while not (model_dir / "model.ckpt-40.safetensors").exists():
        assert proc.poll() is None, "training ended before it could be killed"
        assert time.time() < deadline
        time.sleep(0.005)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert not (model_dir / "model.ckpt-200.safetensors").exists(), "killed too late to test resume"
    kept = sorted(model_dir.glob("model.ckpt-*.safetensors"), key=lambda p: int(p.name.split("-")[1].split(".")[0]))
    last = kept[-1]
    state = json.loads(metadata(last)["input_state"])
    # Mid-epoch (1000 records an epoch, 8 a step): a full buffer of record references and two open files.
    step = int(metadata(last)["global_step"])
    assert step * 8 < 1000 and state["epoch"] == 0
    assert len(state["buffer"]) == 200 and sum(s[0] >= 0 for s in state["slots"]) == 2

    out = run_dtrain("train", path, "--no-eval", "--log-format", "plain")
    assert out.returncode == 0, out.stderr[-3000:]
    assert "resuming from" in out.stderr
    for s in range(step + 10, 201, 10):
        assert_same(model_dir / f"model.ckpt-{s}.safetensors", ref_dir / f"model.ckpt-{s}.safetensors")
        assert metadata(model_dir / f"model.ckpt-{s}.safetensors")["input_state"] == \
            metadata(ref_dir / f"model.ckpt-{s}.safetensors")["input_state"]


def test_one_gib_of_jpeg_shards_trains_under_a_512_mib_address_space_limit(tmp_path):
    shards = tmp_path / "shards"
    shards.mkdir()
    # 64x64 RGB JPEGs (about 16 KiB each) in 16 shards.
    size, nshards = 64, 16
    probe, probe_bytes = write_shards(shards, 1, 64, size)
    per_record = probe_bytes / 64
    probe[0].unlink()
    per_shard = int((1 << 30) / nshards / per_record) + 1
    paths, total = write_shards(shards, nshards, per_shard, size)
    assert total >= 1 << 30
    records = nshards * per_shard
    batch = 256
    steps = records // batch + 1  # one whole epoch and a little more
    data = ("stream: true, shuffle: 2000, interleave: {cycle_length: 4, block_length: 16}, num_parallel_calls: 2, "
            "max_buffer_mb: 256")
    path, model_dir = job(tmp_path, "big", shards, size, batch, steps, steps, data)
    limit = 512 << 20

    def limited():
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    start = time.time()
    log = tmp_path / "big.log"
    with open(log, "w") as f:
        # The limit is set in the measuring wrapper and inherited by dtrain.
        report = tmp_path / "peak-rss"
        proc = subprocess.Popen(peak_rss_command([dtrain_bin(), "train", path, "--no-eval", "--log-format", "plain"],
                                                 report), stdout=f, stderr=subprocess.STDOUT, preexec_fn=limited)
        proc.wait()
    elapsed = time.time() - start
    assert proc.returncode == 0, log.read_text()[-3000:]
    peak = read_peak_rss_kib(report) * 1024  # dtrain's own peak RSS
    assert peak < limit
    state = json.loads(metadata(model_dir / f"model.ckpt-{steps}.safetensors")["input_state"])
    assert state["epoch"] == 1  # the whole epoch was read
    assert "data.train: streaming 16 of 16 tfrecord files (file order shuffled each epoch), interleave 4 x 16, " \
        "shuffle buffer 2000 records, 2 decode threads, prefetch 2 batches of 12.0 MiB; max_buffer_mb 256" \
        in log.read_text()
    whole = records * size * size * 3 * 4  # what stream: false would hold as float32
    print(f"\n{total / (1 << 30):.2f} GiB in {nshards} shards, {records} JPEGs {size}x{size}: {steps} steps of "
          f"{batch} in {elapsed:.1f} s ({steps * batch / elapsed:.0f} images/s) under RLIMIT_AS 512 MiB; "
          f"peak RSS {peak / (1 << 20):.0f} MiB (read whole as float32: {whole / (1 << 30):.1f} GiB)")


def test_two_collective_workers_reading_the_stream_equal_one_device_also_after_a_restart(tmp_path):
    """shard: data: both workers read the same stream in global batches and keep their
    rows; on the restart the chief restores the checkpoint's input state and the other
    worker replays the batches' records, so both continue as one process would."""
    shards = tmp_path / "shards"
    shards.mkdir()
    write_shards(shards, 3, 60, 16, distinct=16)
    data = "stream: true, shuffle: 50, num_parallel_calls: 1"
    dropout = "    - {type: dropout, rate: 0.2}\n"
    one, one_dir = job(tmp_path, "one", shards, 16, 16, 40, 40, data, dropout)
    out = run_dtrain("train", one, "--no-eval", "--log-format", "plain", env={"OMP_NUM_THREADS": "1", "TF_CONFIG": ""})
    assert out.returncode == 0, out.stderr[-3000:]
    multi, multi_dir = job(tmp_path, "multi", shards, 16, 8, 40, 10, data, dropout)
    for steps in (20, 40):
        out = run_dtrain("launch", "--workers", 2, multi, "--no-eval", "--log-format", "plain",
                         "--set", "strategy.type=collective", "--set", f"run.max_steps={steps}",
                         env={"OMP_NUM_THREADS": "1", "OMP_WAIT_POLICY": "passive", "TF_CONFIG": ""}, timeout=600)
        assert out.returncode == 0, out.stderr[-4000:]
    assert ("[worker 1] data.train: streaming 3 of 3 tfrecord files (file order shuffled each epoch), interleave 1 x 1, "
            "shuffle buffer 50 records") in out.stderr, out.stderr[-4000:]
    assert "shard data: every worker reads the stream in global batches of 16 and worker 1 of 2 keeps rows 8..15" \
        in out.stderr
    assert "resuming from" in out.stderr
    a = load_file(str(one_dir / "model.ckpt-40.safetensors"))
    b = load_file(str(multi_dir / "model.ckpt-40.safetensors"))
    for k in a:
        diff = np.linalg.norm(a[k] - b[k]) / max(np.linalg.norm(a[k]), 1e-12)
        assert diff < 1e-5, (k, diff)
    assert metadata(one_dir / "model.ckpt-40.safetensors")["input_state"] == \
        metadata(multi_dir / "model.ckpt-40.safetensors")["input_state"]
