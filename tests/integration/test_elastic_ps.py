"""strategy.elastic with parameter_server (issue 30, part 4): 4 workers and 2
ps tasks under dtrain launch train mnist_cnn (shuffle and dropout on,
run.deterministic, 16-row micro-batches) while workers are killed -9.

Sync mode: the ps hold the variables and keep their state one update back;
the group's rank 0 fences every ps at the new membership, the ps one update
past the lowest step back, and the survivors redo that step over the new
split of the same global batch: the final checkpoint has the bits of the run
in which nothing failed. A worker restarted by launch joins (it pulls the
variables; rank 0 sends the step and the input position). A lost ps task
pauses training; restarted, it comes back empty, and every ps is reloaded from
the latest checkpoint: the same bits again. Async mode: the others train on
while a worker is gone, and one restarted trains with them."""
import os
import random
import re
import signal
import subprocess
import time

import numpy as np
import pytest
from safetensors.numpy import load_file

from test_elastic import SETTINGS, STEPS, kill_soon_after, regroup_lines
from test_launch_restarts import checkpoint, task_pid, wait_for

from conftest import SOURCE_ROOT, dtrain_bin
from test_cluster import clean_env

JOB = SOURCE_ROOT / "sample_configs/mnist_cnn_collective.yaml"


def launch(model_dir, mode, *extra, workers=4):
    args = [dtrain_bin(), "launch", "--workers", str(workers), "--ps", "2", str(JOB), "--model-dir", str(model_dir),
            "--no-eval", "--log-format", "plain"]
    settings = SETTINGS + ["strategy.type=parameter_server", f"strategy.mode={mode}"]
    if mode == "async":
        settings = [s for s in settings if not s.startswith("strategy.elastic")]
    for s in settings:
        args += ["--set", s]
    args += extra
    return subprocess.Popen(args, cwd=SOURCE_ROOT, env=clean_env(), stderr=subprocess.PIPE, text=True)


UNFAULTED = {}


def unfaulted(tmp_path_factory):
    if not UNFAULTED:
        model_dir = tmp_path_factory.mktemp("unfaulted_ps")
        proc = launch(model_dir, "sync")
        _, err = proc.communicate(timeout=600)
        assert proc.returncode == 0, err[-3000:]
        assert "elastic:" not in err
        UNFAULTED.update(load_file(str(checkpoint(model_dir, STEPS))))
    return UNFAULTED


def kill_and_finish(model_dir, mode, step, victims, *extra, within=0.5):
    proc = launch(model_dir, mode, *extra)
    kill_soon_after(proc, model_dir, step, victims, within)
    _, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err[-3000:]
    return err


def assert_same_bits(model_dir, expected):
    final = load_file(str(checkpoint(model_dir, STEPS)))
    assert final.keys() == expected.keys()
    for name in final:
        assert np.array_equal(final[name], expected[name]), name


def test_sync_two_of_four_lost_at_once_the_survivors_redo_the_step_with_the_unfaulted_runs_bits(
        tmp_path_factory, tmp_path):
    model_dir = tmp_path / "run"
    err = kill_and_finish(model_dir, "sync", 20, [2, 3], within=1.0)
    assert re.search(r"dtrain launch: training finished on 4 of 6 tasks; lost along the way: worker \d", err), \
        err[-3000:]
    for worker, rows in ((0, "0..31"), (1, "32..63")):
        [line] = regroup_lines(err, worker)
        # Both losses in one line, even when the ps were fenced for the first before the second was posted.
        assert "worker 2 (127.0.0.1:" in line and "worker 3 (127.0.0.1:" in line, line
        m = re.search(rf"2 of 4 workers go on from step (\d+) \(.*\), the global batch 64 split 2 x 32, this worker "
                      rf"rank {worker} with rows {rows}; step (\d+) done ([0-9.]+) s after the change was seen", line)
        assert m, line
        assert int(m.group(1)) >= 20 and int(m.group(2)) == int(m.group(1)) + 1
        assert float(m.group(3)) < 5.0
    assert_same_bits(model_dir, unfaulted(tmp_path_factory))


def test_sync_one_of_four_lost_the_ps_add_16_16_32_rows_as_the_tree_with_the_unfaulted_runs_bits(
        tmp_path_factory, tmp_path):
    # Workers 0, 2, 3 go on with 16 + 16 + 32 rows: the ps add (g0 + g1) + g2,
    # which is one_device's ((mb0 + mb1) + (mb2 + mb3)).
    model_dir = tmp_path / "run"
    err = kill_and_finish(model_dir, "sync", 10, [1])
    for worker, rank, rows in ((0, 0, "0..15"), (2, 1, "16..31"), (3, 2, "32..63")):
        [line] = regroup_lines(err, worker)
        assert re.search(rf"^worker 1 .*; 3 of 4 workers go on from step \d+ .*the global batch 64 split 16 \+ 16 \+ "
                         rf"32 \(whole micro-batches of 16, .*\), this worker rank {rank} with rows {rows}; step \d+ "
                         rf"done", line), line
    assert_same_bits(model_dir, unfaulted(tmp_path_factory))


def test_sync_a_lost_worker_restarted_by_launch_joins_with_the_unfaulted_runs_bits(tmp_path_factory, tmp_path):
    model_dir = tmp_path / "run"
    err = kill_and_finish(model_dir, "sync", 10, [2], "--max-restarts", "2")
    assert re.search(r"dtrain launch: restarting worker 2 alone with its identity \(restart 1 of 2\): it joins the "
                     r"running training \(strategy\.elastic\)", err), err[-3000:]
    assert "dtrain launch: all 6 tasks finished (after 1 restart)" in err
    assert "resuming from" not in err
    [joined] = regroup_lines(err, 2)
    assert re.search(r"worker 2 \(127\.0\.0\.1:\d+\) joined again \(its process started anew\); this worker joined "
                     r"the running training as 1 of 4 workers; they go on from step \d+ .*split 4 x 16, this worker "
                     r"rank 2 with rows 32\.\.47; step \d+ done", joined), joined
    assert_same_bits(model_dir, unfaulted(tmp_path_factory))


def test_async_a_lost_worker_is_restarted_alone_and_trains_with_the_others(tmp_path):
    # Async mode needs no strategy.elastic: the others train on while it is
    # gone, and launch --max-restarts starts it again with its identity.
    model_dir = tmp_path / "run"
    proc = launch(model_dir, "async", "--max-restarts", "1", "--set", "run.max_steps=400",
                  "--set", "run.save_checkpoints_steps=50")
    # Every push advances the global step: checkpoints land near, not at, multiples of 50.
    deadline = time.monotonic() + 180
    while not [p for p in model_dir.glob("model.ckpt-*.safetensors") if not p.name.startswith("model.ckpt-0.")]:
        assert proc.poll() is None and time.monotonic() < deadline, proc.stderr.read()[-3000:]
        time.sleep(0.01)
    os.kill(task_pid(proc, "worker", 2), signal.SIGKILL)
    _, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err[-3000:]
    assert re.search(r"dtrain launch: worker 2 \(127\.0\.0\.1:\d+\) was killed by SIGKILL\ndtrain launch: restarting "
                     r"worker 2 alone with its identity \(restart 1 of 1\): it joins the running training "
                     r"\(parameter_server mode async\)", err), err[-3000:]
    assert "dtrain launch: all 6 tasks finished (after 1 restart)" in err, err[-3000:]
    chief = "\n".join(l for l in err.splitlines() if l.startswith("[worker 0]"))
    gone = re.search(r"worker 2 \(127\.0\.0\.1:\d+\) is gone .*; training goes on with 3 of 4 workers; an update it "
                     r"had in flight is lost", chief)
    back = re.search(r"worker 2 \(127\.0\.0\.1:\d+\) started again and trains with the others \(4 of 4 workers\)",
                     chief)
    # The chief tells what it heard while it trained (the restart may come back before the loss is noticed).
    assert back, chief[-3000:]
    assert gone is None or gone.start() < back.start()
    final = sorted(model_dir.glob("model.ckpt-*.safetensors"), key=lambda p: int(p.name.split("-")[1].split(".")[0]))
    tensors = load_file(str(final[-1]))
    assert int(final[-1].name.split("-")[1].split(".")[0]) >= 400
    assert all(np.isfinite(t).all() for t in tensors.values())


def test_elastic_in_async_mode_is_a_config_error(tmp_path):
    proc = launch(tmp_path / "run", "async", "--set", "strategy.elastic.min_workers=2")
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 2, err[-3000:]
    assert re.search(r"strategy\.elastic\.min_workers: in mode: async the workers come and go without "
                     r"strategy\.elastic", err), err[-3000:]


def test_sync_a_lost_ps_task_restarted_by_launch_reloads_every_ps_from_the_checkpoint_with_the_unfaulted_runs_bits(
        tmp_path_factory, tmp_path):
    # Training pauses while ps 1 is gone; launch starts it again (empty), the
    # chief loads every ps from the latest checkpoint and the group goes back
    # to its step and input position: the redone steps give the same bits.
    model_dir = tmp_path / "run"
    proc = launch(model_dir, "sync", "--max-restarts", "2")
    wait_for(checkpoint(model_dir, 20), proc)
    pid = task_pid(proc, "ps", 1)
    later = checkpoint(model_dir, 30)
    deadline = time.monotonic() + random.uniform(0.0, 0.5)
    while time.monotonic() < deadline and not later.exists():
        time.sleep(0.002)
    os.kill(pid, signal.SIGKILL)
    _, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err[-3000:]
    assert re.search(r"dtrain launch: ps 1 \(127\.0\.0\.1:\d+\) was killed by SIGKILL\ndtrain launch: restarting ps 1 "
                     r"alone with its identity \(restart 1 of 2\): every ps is reloaded from the latest checkpoint",
                     err), err[-3000:]
    assert "dtrain launch: all 6 tasks finished (after 1 restart)" in err
    [line] = regroup_lines(err, 0)
    m = re.search(r"^ps 1 \(127\.0\.0\.1:\d+\) .*; ps 1 started again; every ps was loaded from \S+model\.ckpt-(\d+)\."
                  r"safetensors; the 4 workers go on from step (\d+) \(the latest checkpoint, which every ps was loaded "
                  r"from\), the global batch 64 split 4 x 16, this worker rank 0 with rows 0\.\.15; step \d+ done", line)
    assert m and m.group(1) == m.group(2) and int(m.group(1)) >= 20, line
    for worker in (1, 2, 3):
        [line] = regroup_lines(err, worker)
        assert f"the 4 workers go on from step {m.group(2)} (the latest checkpoint" in line, line
    assert_same_bits(model_dir, unfaulted(tmp_path_factory))
