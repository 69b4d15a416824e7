"""Resume and failure behaviour: SIGKILL between checkpoints then the same command
resumes bit-identically (deterministic: true); a NaN loss stops with the step and
keeps the last good checkpoint; a changed model refuses the old checkpoint."""
import os
import re
import signal
import subprocess
import time

import numpy as np
import pytest
from safetensors.numpy import load_file

from conftest import dtrain_bin, run_dtrain


def tensors(path):
    return load_file(str(path))


def test_sigkill_then_resume_is_bit_identical(mlp_job, tmp_path):
    job, model_dir = mlp_job(max_steps=300, save_steps=50, keep=10)
    ref = run_dtrain("train", job, "--model-dir", tmp_path / "ref", "--no-eval")
    assert ref.returncode == 0, ref.stderr

    proc = subprocess.Popen([dtrain_bin(), "train", str(job), "--no-eval", "--log-format", "plain"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 300
    while not (model_dir / "model.ckpt-100.safetensors").exists():
        assert proc.poll() is None, "training ended before it could be killed"
        assert time.time() < deadline
        time.sleep(0.005)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    kept = sorted(model_dir.glob("model.ckpt-*.safetensors"))
    assert kept and all("tmp" not in p.name for p in kept)
    assert not (model_dir / "model.ckpt-300.safetensors").exists(), "killed too late to test resume"

    out = run_dtrain("train", job, "--no-eval", "--log-format", "plain")
    assert out.returncode == 0, out.stderr
    assert "resuming from" in out.stderr
    a = tensors(model_dir / "model.ckpt-300.safetensors")
    b = tensors(tmp_path / "ref" / "model.ckpt-300.safetensors")
    assert a.keys() == b.keys()
    for name in a:
        assert np.array_equal(a[name], b[name]), name


def test_nan_loss_stops_and_keeps_last_good_checkpoint(mlp_job):
    job, model_dir = mlp_job(max_steps=20, save_steps=20)
    assert run_dtrain("train", job, "--no-eval").returncode == 0
    good = (model_dir / "model.ckpt-20.safetensors").read_bytes()
    out = run_dtrain("train", job, "--no-eval", "--set", "optimizer.learning_rate=1e30",
                     "--set", "run.max_steps=200")
    assert out.returncode == 1, out.stderr
    assert "loss is" in out.stderr and "at step" in out.stderr
    assert "model.ckpt-20.safetensors" in out.stderr
    assert (model_dir / "model.ckpt-20.safetensors").read_bytes() == good
    assert sorted(p.name for p in model_dir.glob("model.ckpt-*")) == ["model.ckpt-20.safetensors"]
    ev = run_dtrain("evaluate", job)
    assert ev.returncode == 0, ev.stderr


def test_changed_model_refuses_old_checkpoint(mlp_job):
    job, model_dir = mlp_job(max_steps=10, save_steps=10)
    assert run_dtrain("train", job, "--no-eval").returncode == 0
    out = run_dtrain("train", job, "--set", "model.layers[1].units=64", "--set", "run.max_steps=20")
    assert out.returncode == 2
    assert "does not match the model" in out.stderr
    assert "dense/kernel: the model has shape [784, 64], the checkpoint [784, 32]" in out.stderr
    assert "dense_1/kernel: the model has shape [64, 10], the checkpoint [32, 10]" in out.stderr


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGUSR1, signal.SIGINT])
def test_a_stop_signal_saves_a_checkpoint_exits_75_and_the_same_command_resumes(mlp_job, sig):
    """SIGTERM, SIGINT and SIGUSR1 (Slurm's --signal=USR1@90 warning) save a
    checkpoint at the step and exit 75, which means "stopped early, checkpoint
    saved: run the same command to resume" (a NaN loss exits 1)."""
    job, model_dir = mlp_job(max_steps=100000, save_steps=100000)
    proc = subprocess.Popen([dtrain_bin(), "train", str(job), "--no-eval", "--log-format", "plain"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    time.sleep(1.5)
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 75, err
    m = re.search(r"dtrain: stopped by (\w+) at step (\d+); checkpoint (\S+) saved; run the same command to resume",
                  err)
    assert m and m.group(1) == sig.name, err
    saved = list(model_dir.glob("model.ckpt-*.safetensors"))
    assert [str(p) for p in saved] == [m.group(3)]
    step = int(m.group(2))
    out = run_dtrain("train", job, "--no-eval", "--log-format", "plain", "--set", f"run.max_steps={step + 3}")
    assert out.returncode == 0, out.stderr
    assert f"resuming from {m.group(3)} at step {step}" in out.stderr


def test_deterministic_resume_keeps_the_thread_count(cnn_job, tmp_path):
    # Convolutions split their sums over threads, so without pinning the
    # thread count this resumed run would differ in the last bits.
    job, model_dir = cnn_job(max_steps=100, save_steps=50)
    one = {"OMP_NUM_THREADS": "1"}
    ref = run_dtrain("train", job, "--model-dir", tmp_path / "ref", "--no-eval", env=one)
    assert ref.returncode == 0, ref.stderr
    first = run_dtrain("train", job, "--no-eval", "--set", "run.max_steps=50", env=one)
    assert first.returncode == 0, first.stderr
    resumed = run_dtrain("train", job, "--no-eval", env={"OMP_NUM_THREADS": "2"})
    assert resumed.returncode == 0, resumed.stderr
    assert "run.deterministic: using 1 compute threads" in resumed.stderr
    a = tensors(model_dir / "model.ckpt-100.safetensors")
    b = tensors(tmp_path / "ref" / "model.ckpt-100.safetensors")
    for name in a:
        assert np.array_equal(a[name], b[name]), name


def host_tag():
    """This host as temporary file names carry it (engine/io/file_util.cpp)."""
    import re
    import socket
    return re.sub(r"[^A-Za-z0-9.-]", "_", socket.gethostname()) or "unknown"


def dead_pid():
    child = subprocess.Popen(["true"])
    child.wait()
    return child.pid


def test_kill_9_while_checkpointing_leaves_no_temporary_files_after_a_restart(mlp_job):
    """kill -9 at moments a checkpoint is being written, several times; the
    next run removes the temporary files of the dead writers (and says so),
    leaves a running writer's alone, and resumes."""
    job, model_dir = mlp_job(max_steps=100000, save_steps=1, keep=3)
    model_dir.mkdir()
    alive = model_dir / f"model.ckpt-8.safetensors.tmp-{host_tag()}-{os.getpid()}"
    alive.write_bytes(b"being written")
    caught = 0
    for attempt in range(6):
        proc = subprocess.Popen([dtrain_bin(), "train", str(job), "--no-eval"], stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        deadline = time.time() + 20
        while time.time() < deadline and proc.poll() is None:
            tmp = [p for p in model_dir.glob(f"*.tmp-{host_tag()}-{proc.pid}")]
            if tmp:
                caught += 1
                break
        assert proc.poll() is None, "training ended before it could be killed"
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    # One dead writer's file for sure, whatever the kills caught (each run
    # also cleaned up after the runs killed before it).
    planted = model_dir / f"model.ckpt-7.safetensors.tmp-{host_tag()}-{dead_pid()}"
    planted.write_bytes(b"half-written")
    leftover = sorted(p.name for p in model_dir.glob("*.tmp-*"))
    assert planted.name in leftover and alive.name in leftover
    out = run_dtrain("train", job, "--no-eval", "--log-format", "plain", "--set", "run.max_steps=1")
    assert out.returncode == 0, out.stderr
    removed = [l for l in out.stderr.splitlines() if "temporary file" in l]
    assert len(removed) == 1 and f"removed {len(leftover) - 1} temporary file" in removed[0], (removed, leftover)
    assert sorted(p.name for p in model_dir.glob("*.tmp-*")) == [alive.name]
    print(f"kills that caught a checkpoint being written: {caught} of 6; files removed: {len(leftover) - 1}")
