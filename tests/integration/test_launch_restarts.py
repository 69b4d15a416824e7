"""dtrain launch --max-restarts: a 3-worker collective mnist_cnn (shuffle and
dropout on, run.deterministic) loses a worker to kill -9; launch restarts every
task with its identity, they resume from the latest checkpoint, and the final
checkpoint has the bits of a run in which nothing failed. Restarts are
bounded, and a stop signal is never restarted."""
import json
import os
import re
import signal
import subprocess
import time

import numpy as np
import pytest
from safetensors.numpy import load_file

from conftest import SOURCE_ROOT, dtrain_bin
from test_cluster import clean_env

JOB = SOURCE_ROOT / "sample_configs/mnist_cnn_collective.yaml"
STEPS = 60
SETTINGS = [f"run.max_steps={STEPS}", "run.save_checkpoints_steps=10", "run.keep_checkpoint_max=20",
            "run.deterministic=true", "run.log_step_count_steps=10"]


def launch(model_dir, *extra):
    args = [dtrain_bin(), "launch", "--workers", "3", str(JOB), "--model-dir", str(model_dir), "--no-eval",
            "--log-format", "plain", *extra]
    for s in SETTINGS:
        args += ["--set", s]
    return subprocess.Popen(args, cwd=SOURCE_ROOT, env=clean_env(), stderr=subprocess.PIPE, text=True)


def task_pid(proc, kind, index, timeout=60):
    """The pid of launch's child with TF_CONFIG task (kind, index)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            children = open(f"/proc/{proc.pid}/task/{proc.pid}/children").read().split()
        except FileNotFoundError:
            children = []
        for pid in children:
            try:
                env = open(f"/proc/{pid}/environ", "rb").read().split(b"\0")
            except (FileNotFoundError, ProcessLookupError):
                continue
            for var in env:
                if var.startswith(b"TF_CONFIG="):
                    try:  # a child forked but not yet exec'd has launch's environment
                        task = json.loads(var[len(b"TF_CONFIG="):])["task"]
                    except (ValueError, KeyError):
                        continue
                    if (task["type"], task["index"]) == (kind, index):
                        return int(pid)
        time.sleep(0.05)
    raise AssertionError(f"launch has no child {kind} {index}")


def wait_for(path, proc, timeout=180):
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert proc.poll() is None, proc.stderr.read()[-3000:]
        assert time.monotonic() < deadline, f"{path} not written within {timeout} s"
        time.sleep(0.05)


def checkpoint(model_dir, step):
    return model_dir / f"model.ckpt-{step}.safetensors"


@pytest.fixture(scope="module")
def unfaulted(tmp_path_factory):
    model_dir = tmp_path_factory.mktemp("unfaulted")
    proc = launch(model_dir)
    _, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err[-3000:]
    return load_file(str(checkpoint(model_dir, STEPS)))


@pytest.mark.parametrize("victim", [("worker", 1), ("worker", 0)], ids=["worker1", "chief"])
def test_a_killed_worker_restarts_the_cluster_and_the_result_is_the_unfaulted_runs_bits(victim, unfaulted, tmp_path):
    model_dir = tmp_path / "run"
    proc = launch(model_dir, "--max-restarts", "2")
    wait_for(checkpoint(model_dir, 20), proc)
    pid = task_pid(proc, *victim)
    # A few steps past the checkpoint (they are done again after the restart),
    # before the next one: a fast machine must not finish first.
    deadline = time.monotonic() + 0.3
    while time.monotonic() < deadline and not checkpoint(model_dir, 30).exists():
        time.sleep(0.002)
    os.kill(pid, signal.SIGKILL)
    _, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err[-3000:]
    kind, index = victim
    # The others may end (exit 4) and be reaped before the victim: launch
    # names the first task it reaped as the cause of the restart.
    assert re.search(rf"dtrain launch: {kind} {index} \(127\.0\.0\.1:\d+\) was killed by SIGKILL\n", err), err[-3000:]
    assert re.search(r"dtrain launch: worker \d \(127\.0\.0\.1:\d+\) (was killed by SIGKILL|exited with code 4); "
                     r"restarting every task with its identity \(restart 1 of 2\)", err), err[-3000:]
    resumed = re.search(r"\[worker 0\] .*resuming from \S+model\.ckpt-(\d+)\.safetensors at step (\d+)", err)
    assert resumed and int(resumed.group(1)) >= 20, err[-3000:]
    assert "dtrain launch: all 3 tasks finished (after 1 restart)" in err
    final = load_file(str(checkpoint(model_dir, STEPS)))
    assert final.keys() == unfaulted.keys()
    for name in final:
        assert np.array_equal(final[name], unfaulted[name]), name


def test_restarts_are_bounded_and_the_last_loss_exits_with_the_cluster_code(tmp_path):
    model_dir = tmp_path / "run"
    proc = launch(model_dir, "--max-restarts", "1", "--set", "run.max_steps=100000")
    wait_for(checkpoint(model_dir, 10), proc)
    os.kill(task_pid(proc, "worker", 2), signal.SIGKILL)
    # After the restart, the new worker 2 trains past the next checkpoint; then it is lost again.
    first = sorted(model_dir.glob("model.ckpt-*.safetensors"))
    deadline = time.monotonic() + 180
    while len(list(model_dir.glob("model.ckpt-*.safetensors"))) <= len(first) + 1:
        assert proc.poll() is None and time.monotonic() < deadline
        time.sleep(0.05)
    os.kill(task_pid(proc, "worker", 2), signal.SIGKILL)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 4, err[-3000:]
    assert "(restart 1 of 1)" in err
    assert re.search(r"dtrain launch: worker 2 \(127\.0\.0\.1:\d+\) was killed by SIGKILL; not restarting: "
                     r"--max-restarts 1 used up", err), err[-3000:]


def test_a_stop_signal_is_not_restarted(tmp_path):
    model_dir = tmp_path / "run"
    proc = launch(model_dir, "--max-restarts", "3", "--set", "run.max_steps=100000")
    wait_for(checkpoint(model_dir, 10), proc)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 75, err[-3000:]
    assert "restarting" not in err
