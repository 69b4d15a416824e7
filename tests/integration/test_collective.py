"""The collective strategy across real dtrain processes on loopback: workers
equal one_device with the same global batch; chief, workers and evaluator
roles; a task that dies or never arrives stops the others within the timeout,
naming it; a restarted cluster resumes from the latest checkpoint."""
import json
import os
import re
import signal
import socket
import subprocess
import tempfile
import time

import numpy as np
import pytest
from safetensors.numpy import load_file

from conftest import SOURCE_ROOT, dtrain_bin, run_dtrain
from test_cluster import clean_env


def free_ports(n):
    socks, ports = [], []
    for _ in range(n):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        socks.append(s)
        ports.append(s.getsockname()[1])
    for s in socks:
        s.close()
    return ports


class Cluster:
    """Processes of one cluster, each `dtrain train JOB ARGS` with its TF_CONFIG."""

    def __init__(self, job, args, chief=False, workers=2, evaluator=False, timeout_secs=60, ps=0):
        self.tasks = ([("chief", 0)] if chief else []) + [("worker", i) for i in range(workers)]
        self.tasks += [("ps", i) for i in range(ps)]
        if evaluator:
            self.tasks.append(("evaluator", 0))
        ports = free_ports(len(self.tasks))
        self.address = {t: f"127.0.0.1:{p}" for t, p in zip(self.tasks, ports)}
        self.spec = {}
        for (kind, _), addr in zip(self.tasks, ports):
            self.spec.setdefault(kind, []).append(f"127.0.0.1:{addr}")
        self.job, self.args, self.timeout_secs = job, args, timeout_secs
        self.procs = {}
        self.logs = {}

    def start(self, task):
        kind, index = task
        tf_config = json.dumps({"cluster": self.spec, "task": {"type": kind, "index": index}})
        env = dict(os.environ)
        env.update(clean_env(TF_CONFIG=tf_config))
        cmd = [dtrain_bin(), "train", str(self.job), "--log-format", "plain",
               "--set", f"cluster.timeout_secs={self.timeout_secs}", *map(str, self.args)]
        # Output goes to files: a pipe nobody reads while the test waits would
        # fill up and block the task.
        log = tempfile.TemporaryFile("w+")
        self.logs[task] = log
        self.procs[task] = subprocess.Popen(cmd, cwd=SOURCE_ROOT, env=env, stdout=log, stderr=log, text=True)
        return self.procs[task]

    def start_all(self, skip=()):
        for t in self.tasks:
            if t not in skip:
                self.start(t)
        return self

    def output_so_far(self, task):
        """What the task has printed so far. pread leaves the file offset, which
        the task shares, where the task's next write expects it."""
        fd = self.logs[task].fileno()
        return os.pread(fd, os.fstat(fd).st_size, 0).decode(errors="replace")

    def wait_for_output(self, task, text, timeout):
        """True once `task` has printed `text`; False after `timeout` seconds or when it ended without."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if text in self.output_so_far(task):
                return True
            if self.procs[task].poll() is not None:
                return text in self.output_so_far(task)
            time.sleep(0.1)
        return False

    def wait(self, timeout):
        """{task: (returncode, stderr)}; kills what is still running after `timeout` seconds."""
        deadline = time.monotonic() + timeout
        out = {}
        for t, p in self.procs.items():
            note = ""
            try:
                p.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
                note = "\n<killed by the test: still running>"
            self.logs[t].seek(0)
            out[t] = (p.returncode, self.logs[t].read() + note)
        return out


def mlp_collective_job(tmp_path, batch, max_steps=20, shuffle=0, save_steps=10):
    from conftest import SAMPLE_IMAGES, SAMPLE_LABELS
    job = tmp_path / f"job-{batch}.yaml"
    job.write_text(f"""
model:
  input: {{shape: [28, 28, 1]}}
  layers:
    - {{type: flatten}}
    - {{type: dense, units: 32, activation: relu}}
    - {{type: dense, units: 10}}
  loss: sparse_softmax_cross_entropy
  metrics: [accuracy]
optimizer: {{type: sgd, learning_rate: 0.1, momentum: 0.9}}
strategy: {{type: collective, communication: ring}}
data:
  train: {{format: idx, images: {SAMPLE_IMAGES}, labels: {SAMPLE_LABELS}, take: 3000, batch_size: {batch},
           shuffle: {shuffle}, scale: 0.00392156862745098}}
  eval: {{format: idx, images: {SAMPLE_IMAGES}, labels: {SAMPLE_LABELS}, skip: 9000, batch_size: 500,
          scale: 0.00392156862745098}}
run:
  model_dir: {tmp_path / 'unused'}
  max_steps: {max_steps}
  save_checkpoints_steps: {save_steps}
  save_summary_steps: 5
  log_step_count_steps: 5
  seed: 11
""")
    return job


def worst_relative_difference(a_path, b_path):
    a, b = load_file(str(a_path)), load_file(str(b_path))
    assert a.keys() == b.keys()
    return max(np.linalg.norm(a[k] - b[k]) / max(np.linalg.norm(b[k]), 1e-12) for k in b)


@pytest.mark.parametrize("workers", [2, 3])
def test_workers_with_ring_equal_one_device_after_20_steps(workers, tmp_path):
    per_worker = 16
    job = mlp_collective_job(tmp_path, per_worker)
    ref = run_dtrain("train", job, "--model-dir", tmp_path / "one", "--no-eval", "--log-format", "plain",
                     "--set", "strategy.type=one_device", "--set", f"data.train.batch_size={per_worker * workers}",
                     env=clean_env())
    assert ref.returncode == 0, ref.stderr
    out = run_dtrain("launch", "--workers", workers, job, "--model-dir", tmp_path / "multi", "--no-eval",
                     "--log-format", "plain", env=clean_env(), timeout=300)
    assert out.returncode == 0, out.stderr
    assert (f"[worker 0] strategy collective on cpu:0; batch: global {16 * workers} = {workers} workers x 16; "
            "this worker's 16 = 1 replica(s) x 16; this is worker 0, the chief") in out.stderr
    assert f"data.train: shard auto (data): every worker orders the 3000 examples alike; worker 1 of {workers}" in out.stderr
    assert "[worker 1] " in out.stderr and "dtrain launch: all" in out.stderr
    diff = worst_relative_difference(tmp_path / "multi" / "model.ckpt-20.safetensors",
                                     tmp_path / "one" / "model.ckpt-20.safetensors")
    assert diff < 1e-5, diff
    # Only the chief writes into model_dir: one event file, the checkpoints and the resolved job.
    assert len(list((tmp_path / "multi").glob("events.out.tfevents.*"))) == 1
    # The chief's logged loss is the global batch's: the same as one_device's at step 20.
    def loss_at_20(text):
        line = [l for l in text.splitlines() if "step 20/20" in l and "loss" in l][0]
        return float(line.split("loss ")[1].split()[0])
    chief_lines = "\n".join(l for l in out.stderr.splitlines() if l.startswith("[worker 0] "))
    assert loss_at_20(chief_lines) == pytest.approx(loss_at_20(ref.stderr), rel=1e-4)


def test_chief_two_workers_and_evaluator_train_mnist_cnn_with_eval_summaries(tmp_path):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    job = SOURCE_ROOT / "sample_configs/mnist_cnn_collective.yaml"
    model_dir = tmp_path / "run"
    out = run_dtrain("launch", "--chief", "--workers", 2, "--evaluator", job, "--model-dir", model_dir,
                     "--log-format", "plain", "--set", "run.max_steps=300", "--set", "run.save_checkpoints_steps=100",
                     env=clean_env(), timeout=900)
    assert out.returncode == 0, out.stderr[-4000:]
    assert "[chief 0] " in out.stderr and "[evaluator 0] " in out.stderr
    assert "[evaluator 0] evaluator: evaluated the final checkpoint (step 300); done" in out.stderr
    # The chief reports the all-reduce time and the share of it that overlapped backward.
    m = re.search(r"\[chief 0\] cross-worker all-reduce: ([\d.]+) ms per step, ([\d.]+) ms of it not overlapped "
                  r"with backward \((\d+)% overlapped; mean over 300 steps of [\d.]+ ms\)", out.stderr)
    assert m, out.stderr[-3000:]
    comm, exposed, share = float(m.group(1)), float(m.group(2)), int(m.group(3))
    assert 0 <= exposed <= comm and 0 <= share <= 100
    for step in (100, 200, 300):
        metrics = json.loads((model_dir / "eval" / f"metrics-{step}.json").read_text())
        assert metrics["global_step"] == step
    acc = EventAccumulator(str(model_dir / "eval"))
    acc.Reload()
    assert [e.step for e in acc.Scalars("accuracy")] == [100, 200, 300]
    assert acc.Scalars("accuracy")[-1].value > 0.9


def test_sigkill_of_a_worker_stops_the_others_naming_it_and_a_restart_resumes(tmp_path):
    job = mlp_collective_job(tmp_path, 16, max_steps=100000, save_steps=50)
    args = ["--model-dir", tmp_path / "run", "--no-eval"]
    # The default timeout (60 s): the others learn of the death from its closed connection, not a timeout.
    cluster = Cluster(job, args, chief=True, workers=2, timeout_secs=60).start_all()
    ckpt = tmp_path / "run" / "model.ckpt-100.safetensors"
    deadline = time.monotonic() + 120
    while not ckpt.exists() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert ckpt.exists(), cluster.wait(1)
    time.sleep(1.5)  # its step reaches the service with a heartbeat (at most 1 s apart while training)
    victim = cluster.procs[("worker", 1)]
    victim.send_signal(signal.SIGKILL)
    killed_at = time.monotonic()
    results = cluster.wait(timeout=30)
    elapsed = time.monotonic() - killed_at
    dead = cluster.address[("worker", 1)]
    for task in (("chief", 0), ("worker", 0)):
        code, err = results[task]
        assert code == 4, (task, err[-2000:])
        assert f"worker 1 ({dead}) ended without leaving the cluster after step " in err, (task, err[-2000:])
    assert elapsed < 10, elapsed

    # Restart the whole cluster (as a scheduler does): it resumes from the latest checkpoint.
    saved = max(int(p.name.split("-")[1].split(".")[0]) for p in (tmp_path / "run").glob("model.ckpt-*.safetensors"))
    finish = saved + 30
    # The restart measures no time: a generous timeout keeps a loaded machine from failing it.
    cluster = Cluster(job, args + ["--set", f"run.max_steps={finish}"], chief=True, workers=2, timeout_secs=30)
    results = cluster.start_all().wait(timeout=180)
    for task, (code, err) in results.items():
        assert code == 0, (task, err[-2000:])
    chief_err = results[("chief", 0)][1]
    assert f"resuming from {tmp_path / 'run'}/model.ckpt-{saved}.safetensors at step {saved}" in chief_err
    assert f"starting at the chief's step {saved}" in results[("worker", 0)][1]
    assert (tmp_path / "run" / f"model.ckpt-{finish}.safetensors").exists()


def test_sigusr1_to_one_worker_stops_every_task_at_one_step_exit_75_and_a_restart_resumes(tmp_path):
    """A scheduler's warning (SIGUSR1) reaching one worker only: every task
    stops after the same step, the chief saves it, all exit 75 ("stopped
    early, checkpoint saved, run the same command to resume"), and the same
    command resumes from that step."""
    job = mlp_collective_job(tmp_path, 16, max_steps=100000, save_steps=100000)
    args = ["--model-dir", tmp_path / "run", "--no-eval"]
    cluster = Cluster(job, args, chief=True, workers=2, timeout_secs=30).start_all()
    assert cluster.wait_for_output(("chief", 0), "step 5/", 120), cluster.output_so_far(("chief", 0))
    cluster.procs[("worker", 1)].send_signal(signal.SIGUSR1)
    results = cluster.wait(timeout=60)
    steps = set()
    for task, (code, err) in results.items():
        assert code == 75, (task, err[-2000:])
        m = re.search(r"stopped (?:by SIGUSR1 )?at step (\d+)", err)
        assert m, (task, err[-2000:])
        steps.add(int(m.group(1)))
    assert len(steps) == 1, steps
    (step,) = steps
    assert "stopped by SIGUSR1 at step" in results[("worker", 1)][1]
    assert (tmp_path / "run" / f"model.ckpt-{step}.safetensors").exists()
    cluster = Cluster(job, args + ["--set", f"run.max_steps={step + 5}"], chief=True, workers=2, timeout_secs=30)
    results = cluster.start_all().wait(timeout=180)
    for task, (code, err) in results.items():
        assert code == 0, (task, err[-2000:])
    assert f"at step {step}" in results[("chief", 0)][1]


def test_a_worker_that_never_starts_fails_the_rendezvous_naming_it(tmp_path):
    job = mlp_collective_job(tmp_path, 16)
    cluster = Cluster(job, ["--model-dir", tmp_path / "run"], chief=True, workers=2, timeout_secs=8)
    started = time.monotonic()
    results = cluster.start_all(skip=[("worker", 1)]).wait(timeout=30)
    missing = cluster.address[("worker", 1)]
    for task in (("chief", 0), ("worker", 0)):
        code, err = results[task]
        assert code == 4, (task, err)
        assert err.endswith(f"rendezvous: worker 1 ({missing}) did not arrive within 8 s\n"), (task, err)
    assert time.monotonic() - started < 8 + 10
    assert not list((tmp_path / "run").glob("model.ckpt-*"))


def test_the_chief_that_never_starts_is_named_by_the_workers(tmp_path):
    job = mlp_collective_job(tmp_path, 16)
    cluster = Cluster(job, ["--model-dir", tmp_path / "run"], chief=True, workers=1, timeout_secs=3)
    results = cluster.start_all(skip=[("chief", 0)]).wait(timeout=30)
    code, err = results[("worker", 0)]
    assert code == 4, err
    assert (f"the coordination service at {cluster.address[('chief', 0)]} (chief 0) did not answer within 3 s"
            in err), err


def test_tasks_that_start_before_the_chief_join_as_soon_as_it_is_up(tmp_path):
    """The worker and the ps retry the chief's coordination service until it is up, then finish their
    handshake at once, well inside a 3 s timeout. (A client that only slept between attempts left its
    handshake to gRPC's backup poller, which runs every 5 s, and failed this rendezvous.)"""
    from test_parameter_server import ps_job
    job = ps_job(tmp_path, 16, "sync", max_steps=10)
    cluster = Cluster(job, ["--model-dir", tmp_path / "run", "--no-eval"], chief=True, workers=1, timeout_secs=3,
                      ps=1)
    cluster.start_all(skip=[("chief", 0)])
    time.sleep(1)  # the others' first attempts are refused
    cluster.start(("chief", 0))
    results = cluster.wait(timeout=60)
    for task, (code, err) in results.items():
        assert code == 0, (task, err[-2000:])
    assert (tmp_path / "run" / "model.ckpt-10.safetensors").exists()


def test_nccl_without_gpus_is_a_config_error(tmp_path):
    job = mlp_collective_job(tmp_path, 16)
    out = run_dtrain("train", job, "--model-dir", tmp_path / "run", "--set", "strategy.communication=nccl",
                     env=clean_env())
    assert out.returncode == 2
    assert "strategy.communication: nccl all-reduces between GPUs" in out.stderr


def launch_children(proc, count, timeout=60):
    """The pids of `dtrain launch`'s children, once it has started `count`."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            pids = [int(p) for p in open(f"/proc/{proc.pid}/task/{proc.pid}/children").read().split()]
        except FileNotFoundError:
            pids = []
        if len(pids) == count:
            return pids
        time.sleep(0.05)
    raise AssertionError(f"launch started {pids}, not {count} tasks")


def test_launch_exits_with_the_cluster_code_within_seconds_when_a_task_is_killed(tmp_path):
    """kill -9 of one worker of a 2-worker `dtrain launch` collective: the
    other learns it from the closed connection (default 60 s timeout), says
    which task died after which step, and launch exits 4 within 10 s."""
    job = mlp_collective_job(tmp_path, 16, max_steps=1000000, save_steps=1000000)
    proc = subprocess.Popen([dtrain_bin(), "launch", "--workers", "2", str(job), "--model-dir", str(tmp_path / "run"),
                             "--no-eval", "--log-format", "plain"], cwd=SOURCE_ROOT, env=clean_env(),
                            stderr=subprocess.PIPE, text=True)
    worker0, worker1 = launch_children(proc, 2)
    # Training for a while (its step reaches the service with a heartbeat, at most 1 s apart).
    time.sleep(4)
    assert proc.poll() is None
    os.kill(worker1, signal.SIGKILL)
    killed = time.monotonic()
    _, err = proc.communicate(timeout=60)
    elapsed = time.monotonic() - killed
    assert proc.returncode == 4, err[-3000:]
    assert elapsed < 10, (elapsed, err[-3000:])
    assert re.search(r"dtrain launch: worker 1 \(127\.0\.0\.1:\d+\) was killed by SIGKILL", err), err[-3000:]
    assert re.search(r"\[worker 0\] dtrain: worker 1 \(127\.0\.0\.1:\d+\) ended without leaving the cluster "
                     r"after step \d+ \(the process exited or was killed", err), err[-3000:]
    assert "dtrain launch: worker 0 (127.0.0.1:" in err and "exited with code 4" in err, err[-3000:]


def test_launch_stops_the_others_when_a_task_fails_before_the_cluster_forms(tmp_path):
    """Worker 0 cannot host the coordination service (its port is taken) and
    exits 4 before the cluster forms; worker 1 would wait for the service for
    cluster.timeout_secs (here 300 s): launch stops it (SIGTERM, then SIGKILL
    5 s later) 10 s after the failure, and exits 4."""
    job = mlp_collective_job(tmp_path, 16, max_steps=100, save_steps=100)
    blocker = socket.socket()
    blocker.bind(("127.0.0.1", 0))
    blocker.listen()
    port = blocker.getsockname()[1]
    try:
        start = time.monotonic()
        out = run_dtrain("launch", "--workers", 2, "--port-base", port, job, "--model-dir", tmp_path / "run",
                         "--no-eval", "--log-format", "plain", "--set", "cluster.timeout_secs=300",
                         env=clean_env(), timeout=120)
        elapsed = time.monotonic() - start
    finally:
        blocker.close()
    err = out.stderr
    assert out.returncode == 4, err[-3000:]
    assert f"[worker 0] dtrain: the coordination service could not listen on 0.0.0.0:{port}" in err, err[-3000:]
    assert f"dtrain launch: worker 0 (127.0.0.1:{port}) exited with code 4" in err, err[-3000:]
    assert "dtrain launch: the other tasks did not end within 10 s of the failure; stopping them" in err, err[-3000:]
    assert 10 <= elapsed < 10 + 5 + 10, (elapsed, err[-3000:])


# Run as a separate Python process: it makes itself the child subreaper, so
# that the tasks of the launch it kills become its children and their exit
# codes can be read.
_ORPHAN_WATCHER = r"""
import ctypes, json, os, signal, subprocess, sys, time
PR_SET_CHILD_SUBREAPER = 36
assert ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
launch = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
deadline = time.monotonic() + 60
tasks = []
while time.monotonic() < deadline and len(tasks) < 2:
    tasks = [int(p) for p in open(f"/proc/{launch.pid}/task/{launch.pid}/children").read().split()]
    time.sleep(0.05)
assert len(tasks) == 2, tasks
time.sleep(4)  # training for a while
assert launch.poll() is None
os.kill(launch.pid, signal.SIGKILL)
killed = time.monotonic()
launch.wait()
ends = {}
while len(ends) < len(tasks) and time.monotonic() < killed + 60:
    pid, status = os.waitpid(-1, os.WNOHANG)
    if pid == 0:
        time.sleep(0.05)
    elif pid in tasks:
        ends[pid] = (os.waitstatus_to_exitcode(status), time.monotonic() - killed)
for pid in tasks:
    if pid not in ends:
        os.kill(pid, signal.SIGKILL)
print(json.dumps({"ends": list(ends.values()), "still_running": [p for p in tasks if p not in ends]}))
"""


def test_sigkill_of_launch_stops_its_tasks_as_a_stop_signal_does(tmp_path):
    """kill -9 of `dtrain launch` (which cannot forward anything): its tasks get
    SIGTERM from the kernel (PR_SET_PDEATHSIG) and stop as after a stop signal,
    at one step with a checkpoint and exit 75, instead of training on as orphans."""
    job = mlp_collective_job(tmp_path, 16, max_steps=1000000, save_steps=1000000)
    run = tmp_path / "run"
    out = subprocess.run(["python3", "-c", _ORPHAN_WATCHER, dtrain_bin(), "launch", "--workers", "2", str(job),
                          "--model-dir", str(run), "--no-eval", "--log-format", "plain"],
                         cwd=SOURCE_ROOT, env=clean_env(), capture_output=True, text=True, timeout=180)
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert result["still_running"] == [], result
    assert [code for code, _ in result["ends"]] == [75, 75], result
    assert all(seconds < 15 for _, seconds in result["ends"]), result
    saved = sorted(run.glob("model.ckpt-*.safetensors"))
    assert len(saved) == 1 and int(saved[0].name.split("-")[1].split(".")[0]) > 0, saved
    assert load_file(str(saved[0]))
