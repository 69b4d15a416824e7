"""strategy.elastic: a 4-worker collective mnist_cnn (shuffle and dropout on,
run.deterministic, 16-row micro-batches) under dtrain launch loses workers to
kill -9 and goes on over the survivors without a restart or a checkpoint
read: the survivors regroup, roll back to the last step every one of them
completed and split the same global batch. Two of four lost at once: the
final checkpoint has the bits of the run in which nothing failed (2 x 32 rows
add the same micro-batch sums in the same order as 4 x 16). Losses one after
another and 1 of 3 (the survivors take whole micro-batches in ranges of the
tree one_device adds them in: the same bits again), fewer than min_workers
left, the chief lost (a survivor hosts a new coordination service and takes over
the chief's duties; the same bits again), and jobs that cannot be
elastic."""
import json
import os
import random
import re
import signal
import socket
import subprocess
import time

import numpy as np
import pytest
from safetensors.numpy import load_file

from conftest import SOURCE_ROOT, dtrain_bin
from test_cluster import clean_env
from test_launch_restarts import checkpoint, task_pid, wait_for

JOB = SOURCE_ROOT / "sample_configs/mnist_cnn_collective.yaml"
STEPS = 60
SETTINGS = [f"run.max_steps={STEPS}", "run.save_checkpoints_steps=10", "run.keep_checkpoint_max=20",
            "run.deterministic=true", "run.log_step_count_steps=10", "data.train.batch_size=16",
            "run.micro_batch_rows=16", "strategy.elastic.min_workers=2"]


def launch(model_dir, *extra, workers=4):
    args = [dtrain_bin(), "launch", "--workers", str(workers), str(JOB), "--model-dir", str(model_dir), "--no-eval",
            "--log-format", "plain"]
    for s in SETTINGS:
        args += ["--set", s]
    args += extra  # after SETTINGS: a later --set wins
    return subprocess.Popen(args, cwd=SOURCE_ROOT, env=clean_env(), stderr=subprocess.PIPE, text=True)


UNFAULTED = {}


def unfaulted(tmp_path_factory, workers):
    """The final variables of the run in which nothing fails (once per worker count)."""
    if workers not in UNFAULTED:
        model_dir = tmp_path_factory.mktemp(f"unfaulted{workers}")
        proc = launch(model_dir, workers=workers)
        _, err = proc.communicate(timeout=600)
        assert proc.returncode == 0, err[-3000:]
        assert "elastic:" not in err
        UNFAULTED[workers] = load_file(str(checkpoint(model_dir, STEPS)))
    return UNFAULTED[workers]


def assert_same_bits(model_dir, expected):
    final = load_file(str(checkpoint(model_dir, STEPS)))
    assert final.keys() == expected.keys()
    for name in final:
        assert np.array_equal(final[name], expected[name]), name


def kill_soon_after(proc, model_dir, step, victims, within):
    """Kills -9 `victims` (worker indices) at a random moment within `within` s
    after the step-`step` checkpoint, but before the checkpoint 10 steps later
    appears: on a fast machine the rest of the run can take less than `within`,
    and a kill after the end would test nothing."""
    wait_for(checkpoint(model_dir, step), proc)
    pids = [task_pid(proc, "worker", v) for v in victims]
    deadline = time.monotonic() + random.uniform(0.0, within)
    later = checkpoint(model_dir, step + 10)
    while time.monotonic() < deadline and not later.exists():
        time.sleep(0.002)
    for pid in pids:
        os.kill(pid, signal.SIGKILL)


def kill_past(model_dir, step, victims, *extra, workers=4, within=0.5):
    """Launches, kills -9 `victims` soon after the step-`step` checkpoint
    (kill_soon_after), and returns launch's stderr."""
    proc = launch(model_dir, *extra, workers=workers)
    kill_soon_after(proc, model_dir, step, victims, within)
    _, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err[-3000:]
    return err


def regroup_lines(err, worker):
    return re.findall(rf"^\[worker {worker}\] elastic: (.*)$", err, re.M)


def test_two_of_four_lost_at_once_the_survivors_go_on_with_the_unfaulted_runs_bits(tmp_path_factory, tmp_path):
    model_dir = tmp_path / "run"
    err = kill_past(model_dir, 20, [2, 3], within=1.0)  # at a random moment of a step past the checkpoint
    for index in (2, 3):
        assert re.search(rf"dtrain launch: worker {index} \(127\.0\.0\.1:\d+\) was killed by SIGKILL\n"
                         rf"dtrain launch: strategy\.elastic: the other tasks go on without worker {index}", err)
    assert "restarting" not in err and "resuming from" not in err
    assert re.search(r"dtrain launch: training finished on 2 of 4 tasks; lost along the way: worker \d", err), err[-2000:]
    for worker, rows in ((0, "0..31"), (1, "32..63")):
        [line] = regroup_lines(err, worker)
        assert "worker 2 (127.0.0.1:" in line and "worker 3 (127.0.0.1:" in line, line
        assert "ended without leaving the cluster" in line, line
        m = re.search(rf"2 of 4 workers go on from step (\d+) \(.*\), the global batch 64 split 2 x 32, this worker "
                      rf"rank {worker} with rows {rows}; step (\d+) done ([0-9.]+) s after the change was seen", line)
        assert m, line
        assert int(m.group(1)) >= 20 and int(m.group(2)) == int(m.group(1)) + 1
        assert float(m.group(3)) < 5.0  # the target for mnist_cnn on loopback
    assert_same_bits(model_dir, unfaulted(tmp_path_factory, 4))


def test_worker_1_of_3_lost_two_go_on_in_whole_micro_batches_with_the_unfaulted_runs_bits(tmp_path_factory, tmp_path):
    # 48 rows = 3 micro-batches: the survivors take 32 + 16 rows, the sums the tree (mb0 + mb1) + mb2 of 3 x 16.
    model_dir = tmp_path / "run"
    err = kill_past(model_dir, 10, [1], workers=3, within=1.5)
    [line] = regroup_lines(err, 2)
    assert re.search(r"^worker 1 .*; 2 of 3 workers go on from step \d+ .*the global batch 48 split 32 \+ 16 \(whole "
                     r"micro-batches of 16, in ranges of the one_device sum's tree\), this worker rank 1 with rows "
                     r"32\.\.47; step \d+ done", line), line
    assert_same_bits(model_dir, unfaulted(tmp_path_factory, 3))


def test_losses_one_after_another_each_regroup_with_the_unfaulted_runs_bits(tmp_path_factory, tmp_path):
    model_dir = tmp_path / "run"
    proc = launch(model_dir)
    for step, victim in ((10, 3), (30, 1)):
        kill_soon_after(proc, model_dir, step, [victim], 0.5)
    _, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err[-3000:]
    first, second = regroup_lines(err, 0)
    assert re.search(r"^worker 3 .*; 3 of 4 workers go on from step \d+ .*the global batch 64 split 16 \+ 16 \+ 32 "
                     r"\(whole micro-batches of 16, .*\), this worker rank 0 with rows 0\.\.15", first), first
    assert re.search(r"^worker 1 .*; 2 of 3 workers go on from step \d+ .*split 2 x 32, this worker rank 0", second), second
    # Worker 2 was rank 2 of 3, then rank 1 of 2.
    assert [re.search(r"rank (\d) with rows (\S+);", l).groups() for l in regroup_lines(err, 2)] == [
        ("2", "32..63"), ("1", "32..63")]
    assert "training finished at step 60; checkpoint" in err
    assert_same_bits(model_dir, unfaulted(tmp_path_factory, 4))


def test_a_lost_worker_restarted_by_launch_joins_the_running_training_with_the_unfaulted_runs_bits(
        tmp_path_factory, tmp_path):
    # Part 2 (grow): launch starts worker 2 again alone; the service takes it
    # back in a new membership, the others regroup at a step boundary and
    # rank 0 sends it the state, the step and the input position.
    model_dir = tmp_path / "run"
    err = kill_past(model_dir, 10, [2], "--max-restarts", "2")
    assert re.search(r"dtrain launch: restarting worker 2 alone with its identity \(restart 1 of 2\): it joins the "
                     r"running training", err), err[-3000:]
    assert "dtrain launch: all 4 tasks finished (after 1 restart)" in err
    assert "resuming from" not in err
    [joined] = regroup_lines(err, 2)
    assert re.search(r"worker 2 \(127\.0\.0\.1:\d+\) joined again \(its process started anew\); this worker joined "
                     r"the running training as 1 of 4 workers; they go on from step \d+ .*split 4 x 16, this worker rank 2 "
                     r"with rows 32\.\.47; step \d+ done", joined), joined
    # When the loss and the return both come before a step over the group of 3, one line tells both.
    assert re.search(r"joined again .*; (4 workers \([34] before\)|the 4 workers) go on", regroup_lines(err, 0)[-1])
    assert_same_bits(model_dir, unfaulted(tmp_path_factory, 4))


def test_the_chief_lost_a_survivor_hosts_the_service_and_takes_over_with_the_unfaulted_runs_bits(
        tmp_path_factory, tmp_path):
    # Part 3: worker 0 hosts the coordination service and is the chief. Its
    # loss: worker 1 hosts a new service on its own address, the survivors
    # connect to it and regroup, and worker 1 writes the checkpoints from
    # then on; launch starts worker 0 again alone and it joins as a worker.
    model_dir = tmp_path / "run"
    err = kill_past(model_dir, 20, [0], "--max-restarts", "1")
    assert re.search(r"dtrain launch: worker 0 \(127\.0\.0\.1:\d+\) was killed by SIGKILL\n", err), err[-3000:]
    assert re.search(r"dtrain launch: restarting worker 0 alone with its identity \(restart 1 of 1\): it joins the "
                     r"running training", err), err[-3000:]
    assert "restarting every task" not in err and "resuming from" not in err
    assert "dtrain launch: all 4 tasks finished (after 1 restart)" in err, err[-3000:]
    [took_over] = [l for l in regroup_lines(err, 1) if "hosts the service" in l]
    assert re.search(r"^worker 0 \(127\.0\.0\.1:\d+\), which hosted the coordination service, was lost .*; worker 1 "
                     r"\(127\.0\.0\.1:\d+\) hosts the service from now on and takes over the chief's duties; (3 of 4 "
                     r"workers|worker 0 .* joined again .*; the 4 workers) go on from step \d+ .*this worker rank 0 with rows 0\.\.15; step \d+ done", took_over), took_over
    assert re.search(r"^\[worker 1\] elastic: this worker is the chief from step \d+ on", err, re.M), err[-3000:]
    [joined] = regroup_lines(err, 0)
    assert re.search(r"worker 0 \(127\.0\.0\.1:\d+\) joined again .*; this worker joined the running training as 1 of "
                     r"4 workers", joined), joined
    assert "[worker 1] training finished at step 60; checkpoint" in err
    for step in range(10, STEPS + 1, 10):  # none lost across the change
        load_file(str(checkpoint(model_dir, step)))
    assert_same_bits(model_dir, unfaulted(tmp_path_factory, 4))


def test_a_chief_task_lost_for_good_worker_0_takes_over_and_two_of_three_finish_with_the_unfaulted_runs_bits(
        tmp_path_factory, tmp_path):
    # TF_CONFIG with a chief task: worker 0 hosts the new service and is the
    # chief from then on; nothing restarts the chief (no --max-restarts).
    model_dir = tmp_path / "run"
    proc = launch(model_dir, "--chief", workers=2)
    wait_for(checkpoint(model_dir, 10), proc)
    pid = task_pid(proc, "chief", 0)
    time.sleep(random.uniform(0.0, 0.5))
    os.kill(pid, signal.SIGKILL)
    _, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err[-3000:]
    assert re.search(r"dtrain launch: strategy\.elastic: the other tasks go on without chief 0", err), err[-3000:]
    assert re.search(r"dtrain launch: training finished on 2 of 3 tasks; lost along the way: chief 0", err), err[-3000:]
    [line] = [l for l in regroup_lines(err, 0) if "hosts the service" in l]
    assert re.search(r"^chief 0 \(127\.0\.0\.1:\d+\), which hosted the coordination service, was lost .*; worker 0 "
                     r"\(127\.0\.0\.1:\d+\) hosts the service from now on .*; 2 of 3 workers go on from step \d+ .*the "
                     r"global batch 48 split 32 \+ 16 .*this worker rank 0 with rows 0\.\.31", line), line
    assert "[worker 0] training finished at step 60; checkpoint" in err
    assert_same_bits(model_dir, unfaulted(tmp_path_factory, 3))


def start_beyond_the_spec(proc, index):
    """Starts a training process that is not in launch's cluster: worker 0's
    command line and environment, with a TF_CONFIG that lists the same tasks
    plus worker `index` at a free port (a cluster scaled up)."""
    pid = task_pid(proc, "worker", 0)
    cmdline = open(f"/proc/{pid}/cmdline", "rb").read().split(b"\0")[:-1]
    env = dict(kv.split(b"=", 1) for kv in open(f"/proc/{pid}/environ", "rb").read().split(b"\0") if b"=" in kv)
    tf_config = json.loads(env[b"TF_CONFIG"])
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    tf_config["cluster"]["worker"].append(f"127.0.0.1:{port}")
    tf_config["task"] = {"type": "worker", "index": index}
    env[b"TF_CONFIG"] = json.dumps(tf_config).encode()
    return subprocess.Popen(cmdline, cwd=SOURCE_ROOT, env=env, stderr=subprocess.PIPE, text=True)


def test_a_worker_beyond_the_cluster_spec_joins_under_max_workers_with_the_unfaulted_runs_bits(
        tmp_path_factory, tmp_path):
    # Part 2, max_workers: a fifth worker (a TF_CONFIG with one worker more)
    # joins the 4 of launch's cluster; the global batch 64 = 8 micro-batches
    # of 8 is split over 5 in ranges of the tree: the same bits.
    mb8 = ["--set", "run.micro_batch_rows=8", "--set", "strategy.elastic.max_workers=5"]
    model_dir = tmp_path / "run"
    proc = launch(model_dir, *mb8)
    wait_for(checkpoint(model_dir, 10), proc)
    extra = start_beyond_the_spec(proc, 4)
    _, extra_err = extra.communicate(timeout=600)
    _, err = proc.communicate(timeout=600)
    assert extra.returncode == 0, extra_err[-3000:]
    assert proc.returncode == 0, err[-3000:]
    [joined] = re.findall(r"^elastic: (.*)$", extra_err, re.M)
    assert re.search(r"^worker 4 \(127\.0\.0\.1:\d+\) joined \(a worker beyond the cluster spec; up to "
                     r"strategy\.elastic\.max_workers 5\); this worker joined the running training as 1 of 5 workers; "
                     r"they go on from step \d+ .*the global batch 64 split 8 \+ 8 \+ 16 \+ 16 \+ 16 .*this worker rank 4 "
                     r"with rows 48\.\.63; step \d+ done", joined), joined
    [line] = regroup_lines(err, 0)
    assert re.search(r"^worker 4 .* joined .*; 5 workers \(4 before\) go on", line), line
    assert "training finished at step 60; the chief saved the checkpoint" in extra_err
    reference = tmp_path_factory.mktemp("unfaulted_mb8")
    ref = launch(reference, *mb8)
    _, ref_err = ref.communicate(timeout=600)
    assert ref.returncode == 0, ref_err[-3000:]
    assert_same_bits(model_dir, load_file(str(checkpoint(reference, STEPS))))


def test_fewer_than_min_workers_left_stops_the_cluster_with_exit_4(tmp_path):
    model_dir = tmp_path / "run"
    proc = launch(model_dir, "--set", "strategy.elastic.min_workers=3", "--set", "run.max_steps=100000")
    wait_for(checkpoint(model_dir, 10), proc)
    victims = [task_pid(proc, "worker", 1), task_pid(proc, "worker", 2)]
    for pid in victims:
        os.kill(pid, signal.SIGKILL)
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 4, err[-3000:]
    assert re.search(r"2 of the 4 training tasks remain, fewer than strategy\.elastic\.min_workers 3", err), err[-3000:]
    # What was saved stays readable.
    for ckpt in model_dir.glob("model.ckpt-*.safetensors"):
        load_file(str(ckpt))


def test_a_job_that_cannot_be_elastic_is_a_config_error(tmp_path):
    proc = launch(tmp_path / "run", "--set", "strategy.elastic.min_workers=5")
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 2, err[-3000:]
    assert re.search(r"strategy\.elastic\.min_workers: 5 is more than the cluster's 4 training task", err), err[-3000:]
    proc = launch(tmp_path / "run2", "--set", "strategy.elastic.max_workers=3")
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 2, err[-3000:]
    assert re.search(r"strategy\.elastic\.max_workers: 3 is less than the cluster's 4 training tasks", err), err[-3000:]
    run = subprocess.run([dtrain_bin(), "train", str(JOB), "--model-dir", str(tmp_path / "one"), "--set",
                          "strategy.type=mirrored", "--set", "strategy.elastic.min_workers=2"],
                         cwd=SOURCE_ROOT, env=clean_env(), capture_output=True, text=True, timeout=300)
    assert run.returncode == 2, run.stderr[-3000:]
    assert re.search(r"strategy\.elastic\.min_workers: elastic training needs strategy\.type: collective", run.stderr)
