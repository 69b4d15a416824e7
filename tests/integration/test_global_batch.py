"""Global-batch sharding (data.*.shard: data, the default): the samples as
shipped, with their shuffle and dropout, train the same under collective (2
and 3 workers) and sync parameter_server (2 workers, 2 ps) as under
one_device with the workers' batches put together, also across a kill -9 of
the whole cluster and a restart mid-run.

The equivalence is float32 summation order: from the same variables, a step
under any strategy equals one_device's within 1e-5. Over several steps a
network with ReLU and max-pool amplifies that rounding without bound: once an
activation within rounding of zero (or two nearly equal values of a max-pool
window) falls the other way, a whole gradient term moves (measured: mnist_cnn,
collective 2 x 64 vs one_device 128, 1.7e-6 after 5 steps, 6e-4 after 6 and
0.11 after 20 under oneDNN's AVX2 kernels; on AVX-512 the same 20 steps stay
at 2.5e-6 with run.seed 42 but reach 0.084 with seed 1 and 6.7e-3 with seed
7). So the strategies are compared one step at a time at steps spread over
the run, each step starting from one_device's checkpoint (variables, Adam's
slots, the input position and the step, hence the same batches and dropout).
Not the first step: from zero biases and empty slots Adam's first update is
lr * g / (|g| + epsilon) element by element, and a bias gradient that sums to
about epsilon out of much larger terms (mnist_mlp, 3 x 128: g = 1.1e-7 whose
last bits move 0.35% with the summation order) moves by a share of lr; from
the second step on the slots hold the history and no such ratio remains.

With run.micro_batch_rows every strategy adds the same floats in the same
grouping (strategies/tree_sum.hpp), so there the strategies are compared over
20 chained steps from the start, bit for bit."""
import json
import re
import shutil
import signal
import time

import pytest

import numpy as np
from safetensors.numpy import load_file

from conftest import SOURCE_ROOT, run_dtrain
from test_cluster import clean_env
from test_collective import Cluster, worst_relative_difference

SAMPLES = {"mnist_mlp": 128, "mnist_cnn": 64}  # the samples' own batch_size
STEPS = 20
COMPARED = (1, 9, 19)  # the steps each strategy takes from one_device's state


def one_device(tmp_path, sample, batch, steps=STEPS, every=None):
    """one_device's run; its checkpoint at `steps` (and one every `every` steps, all kept)."""
    model_dir = tmp_path / "one"
    every = every or steps
    out = run_dtrain("train", SOURCE_ROOT / f"sample_configs/{sample}.yaml", "--model-dir", model_dir, "--no-eval",
                     "--log-format", "plain", "--set", "strategy.type=one_device",
                     "--set", f"data.train.batch_size={batch}", "--set", f"run.max_steps={steps}",
                     "--set", f"run.save_checkpoints_steps={every}",
                     "--set", f"run.keep_checkpoint_max={steps // every + 1}", env=clean_env(OMP_NUM_THREADS="1"))
    assert out.returncode == 0, out.stderr
    return model_dir / f"model.ckpt-{steps}.safetensors"


def from_one_device_at(tmp_path, step, name):
    """A model_dir that resumes from one_device's checkpoint at `step` (empty for step 0)."""
    model_dir = tmp_path / f"{name}-from-{step}"
    model_dir.mkdir()
    if step:
        ckpt = f"model.ckpt-{step}.safetensors"
        shutil.copy(tmp_path / "one" / ckpt, model_dir / ckpt)
        (model_dir / "checkpoint").write_text(json.dumps(
            {"latest": ckpt, "all": [ckpt], "steps": [step], "times": [time.time()]}))
    return model_dir


def each_step_equals_one_device(tmp_path, name, launch_args):
    """Launches one step from each of one_device's checkpoints in COMPARED
    and returns the launches' stderr."""
    logs = []
    for step in COMPARED:
        model_dir = from_one_device_at(tmp_path, step, name)
        out = run_dtrain("launch", *launch_args, "--model-dir", model_dir, "--no-eval", "--log-format", "plain",
                         "--set", f"run.max_steps={step + 1}", env=clean_env(OMP_NUM_THREADS="1"), timeout=600)
        assert out.returncode == 0, out.stderr[-4000:]
        if step:
            assert f"at step {step}" in out.stderr, out.stderr[-4000:]
        diff = worst_relative_difference(model_dir / f"model.ckpt-{step + 1}.safetensors",
                                         tmp_path / "one" / f"model.ckpt-{step + 1}.safetensors")
        assert diff < 1e-5, (step, diff)
        logs.append(out.stderr)
    return logs


@pytest.mark.parametrize("sample", sorted(SAMPLES))
@pytest.mark.parametrize("workers", [2, 3])
def test_collective_equals_one_device_with_shuffle_and_dropout(sample, workers, tmp_path):
    per_worker = SAMPLES[sample]
    one_device(tmp_path, sample, per_worker * workers, every=1)
    logs = each_step_equals_one_device(tmp_path, "multi", [
        "--workers", workers, SOURCE_ROOT / f"sample_configs/{sample}.yaml", "--set", "strategy.type=collective"])
    last = workers - 1
    assert (f"[worker {last}] data.train: shard auto (data): every worker orders the 9000 examples alike; worker "
            f"{last} of {workers} takes rows {per_worker * last}..{per_worker * workers - 1} of each global batch of "
            f"{per_worker * workers}") in logs[0]


@pytest.mark.parametrize("sample", sorted(SAMPLES))
def test_sync_parameter_server_equals_one_device_with_shuffle_and_dropout(sample, tmp_path):
    per_worker = SAMPLES[sample]
    one_device(tmp_path, sample, per_worker * 2, every=1)
    each_step_equals_one_device(tmp_path, "ps", [
        "--workers", 2, "--ps", 2, SOURCE_ROOT / f"sample_configs/{sample}.yaml",
        "--set", "strategy.type=parameter_server", "--set", "strategy.mode=sync"])


@pytest.mark.parametrize("strategy", ["collective", "parameter_server"])
def test_killed_mid_run_and_restarted_still_equals_one_device(strategy, tmp_path):
    """Every task (ps tasks too) is killed with SIGKILL once the first
    checkpoint is on disk; the restarted cluster resumes from the latest
    checkpoint, at its input position, and ends where one_device's
    uninterrupted run does. (Over a few hundred steps
    the two drift apart: a ReLU input within rounding of zero flips one way in
    one summation order and the other way in the other; 40 steps stay below
    1e-6 here.)"""
    steps, workers, per_worker = 40, 2, SAMPLES["mnist_mlp"]
    ref = one_device(tmp_path, "mnist_mlp", per_worker * workers, steps=steps)
    job = tmp_path / "mlp.yaml"
    job.write_text((SOURCE_ROOT / "sample_configs/mnist_mlp.yaml").read_text().replace(
        "images: data/", f"images: {SOURCE_ROOT}/sample_configs/data/").replace(
        "labels: data/", f"labels: {SOURCE_ROOT}/sample_configs/data/"))
    model_dir = tmp_path / "multi"
    ps = 2 if strategy == "parameter_server" else 0
    args = ["--model-dir", model_dir, "--no-eval", "--set", f"strategy.type={strategy}",
            "--set", f"run.max_steps={steps}", "--set", "run.save_checkpoints_steps=5"]
    if ps:
        args += ["--set", "strategy.mode=sync"]
    cluster = Cluster(job, args, workers=workers, ps=ps).start_all()
    first = model_dir / "model.ckpt-5.safetensors"
    deadline = time.monotonic() + 120
    while not first.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert first.exists(), cluster.wait(1)
    # Every task is frozen first, then killed: killed one by one, a task could
    # learn of the first one's death (within ~0.1 s) and exit 4 before its own
    # SIGKILL arrived.
    for p in cluster.procs.values():
        p.send_signal(signal.SIGSTOP)
    for p in cluster.procs.values():
        p.send_signal(signal.SIGKILL)
    killed = cluster.wait(30)
    assert all(code == -signal.SIGKILL for code, _ in killed.values()), killed
    again = Cluster(job, args, workers=workers, ps=ps).start_all().wait(300)
    assert all(code == 0 for code, _ in again.values()), again
    chief_log = again[("worker", 0)][1]
    resumed = [line for line in chief_log.splitlines() if "resuming from" in line]
    assert resumed, chief_log[-3000:]
    resumed_step = int(resumed[0].rsplit("at step ", 1)[1].split()[0])
    assert 5 <= resumed_step < steps, resumed[0]
    diff = worst_relative_difference(model_dir / f"model.ckpt-{steps}.safetensors", ref)
    assert diff < 1e-5, diff


def residual_job(tmp_path):
    """test_graph.py's residual graph (16 rows per batch, no dropout)."""
    text = (SOURCE_ROOT / "tests/integration/test_graph.py").read_text()
    job = tmp_path / "residual.yaml"
    job.write_text(re.search(r'RESIDUAL = """(.*?)"""', text, re.S).group(1))
    return job, 16


MICRO = {  # label: (replicas or workers, how it runs)
    "towers 2": (2, ["train", "--set", "strategy.type=towers", "--set", "strategy.devices=[cpu:0,cpu:1]"]),
    "mirrored 2": (2, ["train", "--set", "strategy.type=mirrored", "--set", "strategy.devices=[cpu:0,cpu:1]"]),
    "mirrored 3": (3, ["train", "--set", "strategy.type=mirrored", "--set", "strategy.devices=[cpu:0,cpu:1,cpu:2]"]),
    "collective 2": (2, ["launch", "--workers", "2", "--set", "strategy.type=collective"]),
    "collective 3": (3, ["launch", "--workers", "3", "--set", "strategy.type=collective"]),
    "ps sync 2+2": (2, ["launch", "--workers", "2", "--ps", "2", "--set", "strategy.type=parameter_server",
                        "--set", "strategy.mode=sync"]),
}


@pytest.mark.parametrize("model", ["mnist_cnn", "residual"])
def test_micro_batch_rows_give_one_devices_bits_over_20_chained_steps(model, tmp_path):
    """run.micro_batch_rows 16: one_device on the global batch and towers,
    mirrored, collective (2 and 3 workers) and sync parameter_server on its
    shards hold bit-identical variables and slots after 20 steps from the
    start, mnist_cnn with its shuffle and dropout. (Without it the same
    comparison under oneDNN's AVX2 kernels gave 0.11 for the two-way splits,
    1.4e-4 for collective 3 and 0.087 for the residual graph's collective 3.)"""
    job, per = (SOURCE_ROOT / "sample_configs/mnist_cnn.yaml", 64) if model == "mnist_cnn" else residual_job(tmp_path)
    common = ["--no-eval", "--log-format", "plain", "--set", "run.max_steps=20", "--set",
              "run.save_checkpoints_steps=20", "--set", "run.micro_batch_rows=16"]
    env = clean_env(OMP_NUM_THREADS="1")
    refs = {}
    for n in (2, 3):
        out = run_dtrain("train", job, "--model-dir", tmp_path / f"one{n}", *common, "--set", "strategy.type=one_device",
                         "--set", f"data.train.batch_size={per * n}", env=env)
        assert out.returncode == 0, out.stderr[-3000:]
        assert (f"micro-batches: each replica's shard of {per * n} rows runs as {per * n // 16} micro-batch(es) of "
                "16 rows (run.micro_batch_rows)") in out.stderr
        refs[n] = load_file(str(tmp_path / f"one{n}" / "model.ckpt-20.safetensors"))
    differ = {}
    for label, (n, how) in MICRO.items():
        model_dir = tmp_path / label.replace(" ", "_").replace("+", "_")
        batch = per * n if how[0] == "train" else per
        cut = how.index("--set")  # the command and its flags, then the job, then the settings
        command, options = how[:cut], how[cut:]
        out = run_dtrain(*command, job, *options, "--model-dir", model_dir, *common,
                         "--set", f"data.train.batch_size={batch}", env=env, timeout=600)
        assert out.returncode == 0, (label, out.stderr[-3000:])
        assert "note: a shard" not in out.stderr and "note: this worker" not in out.stderr, (label, out.stderr[-3000:])
        if label.startswith("collective"):
            assert "and the workers' sums (an ordered all-reduce)" in out.stderr
        got = load_file(str(model_dir / "model.ckpt-20.safetensors"))
        assert got.keys() == refs[n].keys()
        moved = [k for k in got if not np.array_equal(got[k], refs[n][k])]
        if moved:
            differ[label] = (moved[:3], worst_relative_difference(model_dir / "model.ckpt-20.safetensors",
                                                                  tmp_path / f"one{n}" / "model.ckpt-20.safetensors"))
    assert not differ, differ
