"""Standalone client mode: real `dtrain server` processes on loopback wait for
work; `dtrain train JOB --remote-cluster ...` sends them the job, shows their
output as it arrives, and stops them when it is interrupted or killed. The
servers then wait for the next job."""
import os
import re
import signal
import subprocess
import tempfile
import time

import pytest

from conftest import SOURCE_ROOT, dtrain_bin, run_dtrain
from test_cluster import clean_env
from test_collective import mlp_collective_job, worst_relative_difference
from test_parameter_server import ps_job


class Servers:
    """`dtrain server --port 0` processes; each prints the port it listens on."""

    def __init__(self, n, *extra):
        self.procs, self.logs, self.ports = [], [], []
        env = dict(os.environ)
        env.update(clean_env())
        for _ in range(n):
            log = tempfile.TemporaryFile("w+")
            self.logs.append(log)
            self.procs.append(subprocess.Popen([dtrain_bin(), "server", "--port", "0", *extra], cwd=SOURCE_ROOT,
                                               env=env, stdout=log, stderr=log, text=True))
        for i in range(n):
            deadline = time.monotonic() + 20
            while time.monotonic() < deadline:
                m = re.search(r"waiting for work on 0\.0\.0\.0:(\d+)", self.output(i))
                if m:
                    self.ports.append(int(m.group(1)))
                    break
                assert self.procs[i].poll() is None, self.output(i)
                time.sleep(0.05)
            else:
                pytest.fail("server did not start: " + self.output(i))

    def address(self, i):
        return f"127.0.0.1:{self.ports[i]}"

    def output(self, i):
        fd = self.logs[i].fileno()
        return os.pread(fd, os.fstat(fd).st_size, 0).decode(errors="replace")

    def wait_for(self, i, text, timeout):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if text in self.output(i):
                return True
            time.sleep(0.1)
        return False

    def close(self):
        for p in self.procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in self.procs:
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()


@pytest.fixture
def servers():
    made = []

    def make(n, *extra):
        s = Servers(n, *extra)
        made.append(s)
        return s

    yield make
    for s in made:
        s.close()


def remote_train(job, spec, *args, timeout=300):
    return run_dtrain("train", job, "--remote-cluster", spec, "--log-format", "plain", *args, env=clean_env(),
                      timeout=timeout)


def test_sync_parameter_server_on_five_servers_equals_one_device_and_the_servers_wait_again(servers, tmp_path):
    per_worker = 16
    job = ps_job(tmp_path, per_worker, "sync")
    ref = run_dtrain("train", job, "--model-dir", tmp_path / "one", "--no-eval", "--log-format", "plain",
                     "--set", "strategy.type=one_device", "--set", f"data.train.batch_size={per_worker * 3}",
                     env=clean_env())
    assert ref.returncode == 0, ref.stderr
    s = servers(5)
    spec = (f"chief={s.address(0)},{s.address(1)},{s.address(2)},ps={s.address(3)},ps={s.address(4)}")
    out = remote_train(job, spec, "--model-dir", tmp_path / "remote", "--no-eval")
    assert out.returncode == 0, out.stderr[-4000:]
    # Every task's output came back, prefixed with its role.
    assert "[chief 0] parameter_server mode sync: 3 worker(s), 2 ps task(s); placement" in out.stderr
    assert "[ps 1] ps 1: stopped by the chief" in out.stderr
    assert "[worker 1] " in out.stderr
    assert "dtrain: remote cluster: all 5 tasks finished" in out.stderr
    diff = worst_relative_difference(tmp_path / "remote" / "model.ckpt-20.safetensors",
                                     tmp_path / "one" / "model.ckpt-20.safetensors")
    assert diff < 1e-5, diff
    for i in range(5):
        assert s.procs[i].poll() is None, s.output(i)  # still serving
        assert s.wait_for(i, "ended with exit code 0; waiting for work", 10), s.output(i)
    # The same servers take the next job, in other roles: collective on two of them, unlabelled = workers.
    job2 = mlp_collective_job(tmp_path, 16, max_steps=10)
    out = remote_train(job2, f"{s.address(4)},{s.address(3)}", "--model-dir", tmp_path / "second", "--no-eval")
    assert out.returncode == 0, out.stderr[-4000:]
    assert "this is worker 0, the chief" in out.stderr
    assert (tmp_path / "second" / "model.ckpt-10.safetensors").exists()


def test_a_relative_model_dir_is_the_clients(servers, tmp_path):
    s = servers(1)
    job = mlp_collective_job(tmp_path, 16, max_steps=5)
    out = run_dtrain("train", job, "--remote-cluster", s.address(0), "--no-eval", "--set", "run.model_dir=rel/run",
                     cwd=tmp_path, env=clean_env())
    assert out.returncode == 0, out.stderr[-3000:]
    assert (tmp_path / "rel" / "run" / "model.ckpt-5.safetensors").exists()


def long_job(tmp_path):
    return mlp_collective_job(tmp_path, 16, max_steps=10 ** 7, save_steps=10 ** 6)


def start_client(job, spec, model_dir):
    log = tempfile.TemporaryFile("w+")
    env = dict(os.environ)
    env.update(clean_env())
    proc = subprocess.Popen([dtrain_bin(), "train", str(job), "--remote-cluster", spec, "--model-dir", str(model_dir),
                             "--no-eval", "--log-format", "plain"], cwd=SOURCE_ROOT, env=env, stdout=log,
                            stderr=log, text=True)
    return proc, log


def read_all(log):
    log.seek(0)
    return log.read()


def wait_for_steps(s, i, timeout=60):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if re.search(r"\] step \d+", s.output(i)):
            return
        time.sleep(0.1)
    pytest.fail("no training step within the time: " + s.output(i))


def test_interrupting_the_client_stops_the_tasks_the_chief_saves_and_the_servers_wait_again(servers, tmp_path):
    s = servers(2)
    job = long_job(tmp_path)
    client, log = start_client(job, f"{s.address(0)},{s.address(1)}", tmp_path / "run")
    wait_for_steps(s, 0)
    client.send_signal(signal.SIGINT)
    code = client.wait(timeout=60)
    out = read_all(log)
    assert code == 75, out  # stopped early, checkpoint saved: run the same command to resume
    assert "dtrain: interrupted (signal 2); stopping the remote tasks" in out
    # The tasks' last words reach the client: the chief saved a checkpoint on the way out.
    m = re.search(r"\[worker 0\] dtrain: stopped by SIGINT at step (\d+); checkpoint (\S+) saved", out)
    assert m, out
    assert os.path.exists(m.group(2))
    for i in range(2):
        assert s.wait_for(i, "ended with exit code 75; waiting for work", 10), s.output(i)
        assert s.procs[i].poll() is None
    # Resuming on the same servers continues from that checkpoint.
    out = remote_train(job, f"{s.address(1)},{s.address(0)}", "--model-dir", tmp_path / "run", "--no-eval",
                       "--set", f"run.max_steps={int(m.group(1)) + 5}")
    assert out.returncode == 0, out.stderr[-3000:]
    assert f"at step {m.group(1)}" in out.stderr


def test_a_killed_client_leaves_no_task_running(servers, tmp_path):
    s = servers(2, "--stop-grace-secs", "5")
    client, log = start_client(long_job(tmp_path), f"{s.address(0)},{s.address(1)}", tmp_path / "run")
    wait_for_steps(s, 0)
    client.kill()
    client.wait()
    for i in range(2):
        assert s.wait_for(i, "the client went away; stopping worker", 20), s.output(i)
        assert s.wait_for(i, "; waiting for work", 20), s.output(i)
        pid = int(re.search(r"running worker \d of \S+ for .* \(pid (\d+)\)", s.output(i)).group(1))
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)  # reaped by the server: gone


def test_a_busy_server_refuses_a_second_client_naming_who_holds_it(servers, tmp_path):
    s = servers(1)
    client, log = start_client(long_job(tmp_path), s.address(0), tmp_path / "run")
    try:
        wait_for_steps(s, 0)
        job = mlp_collective_job(tmp_path, 16, max_steps=5)
        out = remote_train(job, s.address(0), "--model-dir", tmp_path / "other")
        assert out.returncode == 4, out.stderr
        assert re.search(rf"the dtrain server at {s.address(0)} refused worker 0: busy: running worker 0 for "
                         rf"\S+@\S+ pid {client.pid}", out.stderr), out.stderr
        assert not (tmp_path / "other").exists()
    finally:
        client.send_signal(signal.SIGINT)
        client.wait(timeout=60)


def test_a_server_that_does_not_answer_is_named_and_the_others_are_released(servers, tmp_path):
    s = servers(1)
    job = mlp_collective_job(tmp_path, 16, max_steps=5)
    s2 = servers(1)
    dead = s2.address(0)
    s2.close()
    started = time.monotonic()
    out = remote_train(job, f"{s.address(0)},{dead}", "--set", "cluster.timeout_secs=2", "--model-dir",
                       tmp_path / "run")
    assert out.returncode == 4, out.stderr
    assert (f"could not reach a dtrain server at {dead} (for worker 1) within 2 s" in out.stderr), out.stderr
    assert time.monotonic() - started < 15
    assert s.wait_for(0, "released by", 5), s.output(0)
    # The first server is free again.
    out = remote_train(job, s.address(0), "--model-dir", tmp_path / "run", "--no-eval")
    assert out.returncode == 0, out.stderr[-3000:]


def test_once_ends_the_server_after_its_job(servers, tmp_path):
    s = servers(1, "--once")
    out = remote_train(mlp_collective_job(tmp_path, 16, max_steps=5), s.address(0), "--model-dir", tmp_path / "run")
    assert out.returncode == 0, out.stderr[-3000:]
    assert s.procs[0].wait(timeout=20) == 0, s.output(0)


@pytest.mark.parametrize("spec,message", [
    ("chef=127.0.0.1:7000", 'unknown task type "chef" (did you mean "chief"?)'),
    ("127.0.0.1", '"127.0.0.1" is not HOST:PORT with a port 1-65535'),
    ("127.0.0.1:7000,,127.0.0.1:7001", "an empty entry"),
    ("127.0.0.1:7000,127.0.0.1:7000", "127.0.0.1:7000 is listed twice"),
    ("chief=a:1,chief=b:2", "more than one chief"),
    ("ps=a:1", "no chief or worker to train"),
])
def test_bad_remote_cluster_specs_are_usage_errors(spec, message, tmp_path):
    out = remote_train(mlp_collective_job(tmp_path, 16), spec)
    assert out.returncode == 2, out.stderr
    assert f"dtrain: --remote-cluster" in out.stderr and message in out.stderr, out.stderr


def test_roles_that_do_not_suit_the_job_are_refused_before_any_server_is_asked(tmp_path):
    job = ps_job(tmp_path, 16, "sync")  # parameter_server without ps tasks
    out = remote_train(job, "127.0.0.1:1,127.0.0.1:2")
    assert out.returncode == 2, out.stderr
    assert "--remote-cluster: " in out.stderr and "parameter_server needs ps tasks in the cluster, but the cluster from TF_CONFIG has none" in out.stderr, out.stderr
    job = mlp_collective_job(tmp_path, 16)
    job.write_text(job.read_text().replace("strategy: {type: collective, communication: ring}",
                                           "strategy: {type: one_device}"))
    out = remote_train(job, "127.0.0.1:1,127.0.0.1:2")
    assert out.returncode == 2, out.stderr
    assert "trains in one process" in out.stderr, out.stderr


@pytest.mark.parametrize("command", [["train", "--remote-cluster", "127.0.0.1:1"], ["launch", "--workers", "2"]])
def test_a_job_that_lists_its_own_cluster_is_refused(command, tmp_path):
    job = mlp_collective_job(tmp_path, 16)
    job.write_text(job.read_text() + 'cluster:\n  worker: ["127.0.0.1:9"]\n')
    args = command[:1] + [job] + command[1:]
    out = run_dtrain(*args, env=clean_env(), timeout=60)
    assert out.returncode == 2, out.stderr
    how = "--remote-cluster" if command[0] == "train" else "dtrain launch"
    assert (f"{job}: cluster: the job lists cluster addresses, which take precedence over the TF_CONFIG that {how} "
            f"gives each task" in out.stderr), out.stderr


def test_a_throw_on_the_clients_reader_thread_ends_the_run_with_its_place(servers, tmp_path):
    """The client reads each remote task's output on a thread of its own: a
    throw there (DTRAIN_TEST_THROW, engine/thread_errors.hpp) is a located
    line and the cluster code, not std::terminate."""
    s = servers(1)
    job = mlp_collective_job(tmp_path, 16, max_steps=5)
    out = run_dtrain("train", job, "--remote-cluster", s.address(0), "--no-eval", "--model-dir", tmp_path / "run",
                     env=clean_env(DTRAIN_TEST_THROW="remote task reader:std"), timeout=120)
    assert out.returncode == 4, out.stderr[-3000:]
    assert "terminate called" not in out.stderr
    assert (f"dtrain: reading worker 0's output from {s.address(0)}: injected at remote task reader "
            "(DTRAIN_TEST_THROW)") in out.stderr, out.stderr[-3000:]
