"""The parameter_server strategy across real dtrain processes on loopback:
ps tasks hold the variables; sync mode equals one_device with the same global
batch; async mode trains; the placement is printed; faults stop or spare the
others as TensorFlow's strategy does."""
import json
import re
import signal
import subprocess
import time

import numpy as np
import pytest
from safetensors.numpy import load_file

from conftest import SHARED_MNIST, SOURCE_ROOT, dtrain_bin, need_shared_mnist, run_dtrain
from test_cluster import clean_env
from test_collective import Cluster, mlp_collective_job, worst_relative_difference


def ps_job(tmp_path, batch, mode, max_steps=20, save_steps=10, extra=""):
    job = mlp_collective_job(tmp_path, batch, max_steps=max_steps, save_steps=save_steps)
    text = job.read_text().replace("strategy: {type: collective, communication: ring}",
                                   f"strategy: {{type: parameter_server, mode: {mode}{extra}}}")
    job.write_text(text)
    return job


@pytest.mark.parametrize("partition", ["", ", partition: {max_shards: 2, min_shard_mb: 0.01}"])
def test_sync_two_ps_two_workers_and_chief_equal_one_device_after_20_steps(partition, tmp_path):
    per_worker = 16
    job = ps_job(tmp_path, per_worker, "sync", extra=partition)
    ref = run_dtrain("train", job, "--model-dir", tmp_path / "one", "--no-eval", "--log-format", "plain",
                     "--set", "strategy.type=one_device", "--set", f"data.train.batch_size={per_worker * 3}",
                     env=clean_env())
    assert ref.returncode == 0, ref.stderr
    out = run_dtrain("launch", "--chief", "--workers", 2, "--ps", 2, job, "--model-dir", tmp_path / "ps",
                     "--no-eval", "--log-format", "plain", env=clean_env(), timeout=300)
    assert out.returncode == 0, out.stderr[-4000:]
    assert "[chief 0] parameter_server mode sync: 3 worker(s), 2 ps task(s); placement" in out.stderr
    assert re.search(r"\[chief 0\]   dense/kernel  rows 0\.\.\d+  \[\d+, 32\]  \d+ B  ps \d", out.stderr)
    if partition:  # the 784x32 kernel is split over both ps tasks
        assert "dense/kernel  rows 0..392  [392, 32]  50176 B  ps" in out.stderr
        assert "dense/kernel  rows 392..784  [392, 32]  50176 B  ps" in out.stderr
    assert "[ps 1] ps 1: stopped by the chief" in out.stderr
    diff = worst_relative_difference(tmp_path / "ps" / "model.ckpt-20.safetensors",
                                     tmp_path / "one" / "model.ckpt-20.safetensors")
    assert diff < 1e-5, diff
    # The checkpoint restores under another strategy, and the other way round.
    out = run_dtrain("train", job, "--model-dir", tmp_path / "ps", "--no-eval", "--log-format", "plain",
                     "--set", "strategy.type=one_device", "--set", "run.max_steps=25", env=clean_env())
    assert out.returncode == 0, out.stderr
    assert "at step 20" in out.stderr


def test_a_one_device_checkpoint_resumes_under_sync_parameter_server(tmp_path):
    job = ps_job(tmp_path, 16, "sync", max_steps=30)
    ref = run_dtrain("train", job, "--model-dir", tmp_path / "one", "--no-eval", "--log-format", "plain",
                     "--set", "strategy.type=one_device", "--set", "data.train.batch_size=32", env=clean_env())
    assert ref.returncode == 0, ref.stderr
    part = run_dtrain("train", job, "--model-dir", tmp_path / "mixed", "--no-eval", "--log-format", "plain",
                      "--set", "strategy.type=one_device", "--set", "data.train.batch_size=32",
                      "--set", "run.max_steps=10", env=clean_env())
    assert part.returncode == 0, part.stderr
    # data position: one_device read 10 batches of 32; 2 workers with shard data read their halves (rows
    # 0..15 and 16..31) of the same global batches of 32.
    out = run_dtrain("launch", "--workers", 2, "--ps", 1, job, "--model-dir", tmp_path / "mixed", "--no-eval",
                     "--log-format", "plain", env=clean_env(), timeout=300)
    assert out.returncode == 0, out.stderr[-4000:]
    assert "resuming from" in out.stderr and "at step 10" in out.stderr
    diff = worst_relative_difference(tmp_path / "mixed" / "model.ckpt-30.safetensors",
                                     tmp_path / "one" / "model.ckpt-30.safetensors")
    assert diff < 1e-5, diff


def test_async_trains_mnist_cnn_to_97_5_percent_on_t10k(tmp_path):
    """The sample mnist_cnn job, trained to its end (2500 global steps) by 2 workers and 2 ps tasks in
    async mode, evaluated on the official t10k set."""
    need_shared_mnist()
    job = SOURCE_ROOT / "sample_configs/mnist_cnn.yaml"
    model_dir = tmp_path / "run"
    out = run_dtrain("launch", "--workers", 2, "--ps", 2, job, "--model-dir", model_dir, "--no-eval",
                     "--log-format", "plain", "--set", "strategy.type=parameter_server",
                     "--set", "strategy.mode=async", env=clean_env(), timeout=2400)
    assert out.returncode == 0, out.stderr[-4000:]
    assert "parameter_server mode async: 2 worker(s), 2 ps task(s)" in out.stderr
    ev = run_dtrain("evaluate", job, "--model-dir", model_dir,
                    "--set", f"data.eval.images={SHARED_MNIST / 't10k-images-idx3-ubyte.gz'}",
                    "--set", f"data.eval.labels={SHARED_MNIST / 't10k-labels-idx1-ubyte.gz'}",
                    "--set", "data.eval.skip=0", env=clean_env())
    assert ev.returncode == 0, ev.stderr
    acc = float(re.search(r"accuracy: ([\d.]+)", ev.stdout).group(1))
    print(f"async parameter_server mnist_cnn: t10k accuracy {acc:.4f}")
    assert acc >= 0.975, ev.stdout


def test_a_ps_task_that_dies_stops_every_worker_naming_it(tmp_path):
    job = ps_job(tmp_path, 16, "sync", max_steps=100000, save_steps=1000)
    # The default timeout (60 s): the death is learnt from the closed connections, not a timeout.
    cluster = Cluster(job, ["--model-dir", tmp_path / "run", "--no-eval"], chief=True, workers=1, timeout_secs=60,
                      ps=1)
    cluster.start_all()
    assert cluster.wait_for_output(("chief", 0), "/100000  loss", 120), cluster.output_so_far(("chief", 0))
    cluster.procs[("ps", 0)].send_signal(signal.SIGKILL)
    killed = time.monotonic()
    results = cluster.wait(timeout=30)
    for task in (("chief", 0), ("worker", 0)):
        code, err = results[task]
        assert code == 4, (task, err[-2000:])
        assert f"ps 0 ({cluster.address[('ps', 0)]})" in err, (task, err[-2000:])
    assert time.monotonic() - killed < 10


def test_in_sync_mode_a_dead_worker_stops_the_others_naming_it_and_a_restart_resumes(tmp_path):
    job = ps_job(tmp_path, 16, "sync", max_steps=100000, save_steps=50)
    args = ["--model-dir", tmp_path / "run", "--no-eval"]
    cluster = Cluster(job, args, chief=True, workers=2, timeout_secs=60, ps=2).start_all()
    ckpt = tmp_path / "run" / "model.ckpt-100.safetensors"
    deadline = time.monotonic() + 120
    while not ckpt.exists() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert ckpt.exists(), cluster.wait(1)
    time.sleep(1.5)  # its step reaches the service with a heartbeat (at most 1 s apart while training)
    cluster.procs[("worker", 1)].send_signal(signal.SIGKILL)
    killed_at = time.monotonic()
    results = cluster.wait(timeout=30)
    elapsed = time.monotonic() - killed_at
    dead = f"worker 1 ({cluster.address[('worker', 1)]}) ended without leaving the cluster after step "
    for task in (("chief", 0), ("worker", 0), ("ps", 0), ("ps", 1)):
        code, err = results[task]
        assert code == 4, (task, err[-2000:])
        assert dead in err, (task, err[-2000:])
    assert elapsed < 10, elapsed

    # Restart the whole cluster: the chief puts the latest checkpoint on the ps tasks, and training goes on.
    saved = max(int(p.name.split("-")[1].split(".")[0]) for p in (tmp_path / "run").glob("model.ckpt-*.safetensors"))
    finish = saved + 20
    cluster = Cluster(job, args + ["--set", f"run.max_steps={finish}"], chief=True, workers=2, timeout_secs=30, ps=2)
    results = cluster.start_all().wait(timeout=180)
    for task, (code, err) in results.items():
        assert code == 0, (task, err[-2000:])
    assert (f"resuming from {tmp_path / 'run'}/model.ckpt-{saved}.safetensors at step {saved}"
            in results[("chief", 0)][1])
    assert (tmp_path / "run" / f"model.ckpt-{finish}.safetensors").exists()


def test_in_async_mode_a_dead_worker_does_not_stop_the_others(tmp_path):
    # The service declares worker 1 dead timeout_secs (5 s) after its last heartbeat; the remaining 9000
    # steps take far longer than that on any machine, so the chief is still training when it hears.
    job = ps_job(tmp_path, 16, "async", max_steps=10000, save_steps=1000)
    cluster = Cluster(job, ["--model-dir", tmp_path / "run", "--no-eval"], chief=True, workers=2, timeout_secs=5,
                      ps=1)
    cluster.start_all()
    deadline = time.monotonic() + 120
    while not list((tmp_path / "run").glob("model.ckpt-*")) and time.monotonic() < deadline:
        time.sleep(0.1)
    if cluster.procs[("worker", 1)].poll() is not None:
        pytest.fail("worker 1 ended before the kill: " + str(cluster.wait(1)[("worker", 1)]))
    cluster.procs[("worker", 1)].send_signal(signal.SIGKILL)
    dead = f"worker 1 ({cluster.address[('worker', 1)]})"
    live = f"{dead} is gone (its process ended, or it hung and sent no heartbeat); training goes on with 2 of 3 workers"
    heard = cluster.wait_for_output(("chief", 0), live, timeout=60)
    still_training = cluster.procs[("chief", 0)].poll() is None and cluster.procs[("worker", 0)].poll() is None
    results = cluster.wait(timeout=300)
    for task in (("chief", 0), ("worker", 0), ("ps", 0)):
        code, err = results[task]
        assert code == 0, (task, err[-2000:])
    assert heard, results[("chief", 0)][1][-3000:]
    assert still_training, "the chief or worker 0 had ended when the death was reported"
    assert f"{dead} did not report the end of its training" in results[("chief", 0)][1]
    final = max(int(p.name.split("-")[1].split(".")[0]) for p in (tmp_path / "run").glob("model.ckpt-*.safetensors"))
    assert final >= 10000


def test_parameter_server_without_ps_tasks_is_a_config_error(tmp_path):
    job = ps_job(tmp_path, 16, "sync")
    out = run_dtrain("train", job, "--model-dir", tmp_path / "run", env=clean_env())
    assert out.returncode == 2
    assert "strategy.type: parameter_server needs ps tasks in the cluster" in out.stderr


def test_an_evaluator_follows_a_parameter_server_run(tmp_path):
    job = ps_job(tmp_path, 16, "sync", max_steps=60, save_steps=20)
    model_dir = tmp_path / "run"
    out = run_dtrain("launch", "--workers", 2, "--ps", 1, "--evaluator", job, "--model-dir", model_dir,
                     "--log-format", "plain", env=clean_env(), timeout=300)
    assert out.returncode == 0, out.stderr[-4000:]
    assert "[evaluator 0] evaluator: evaluated the final checkpoint (step 60); done" in out.stderr
    for step in (20, 40, 60):
        metrics = json.loads((model_dir / "eval" / f"metrics-{step}.json").read_text())
        assert metrics["global_step"] == step


def test_in_sync_mode_sigusr1_to_one_worker_stops_every_task_at_one_step_and_the_ps_task_serves_the_save(tmp_path):
    """A stop signal that reaches one worker only: the sync workers agree
    through the coordination service and stop after the same step; the ps
    task, which a launcher or scheduler may signal too, keeps serving until
    the chief has saved and stopped it; every task exits 75 and the same
    command resumes from that step."""
    job = ps_job(tmp_path, 16, "sync", max_steps=100000, save_steps=100000)
    args = ["--model-dir", tmp_path / "run", "--no-eval"]
    cluster = Cluster(job, args, chief=True, workers=2, timeout_secs=30, ps=1).start_all()
    assert cluster.wait_for_output(("chief", 0), "step 5/", 120), cluster.output_so_far(("chief", 0))
    cluster.procs[("ps", 0)].send_signal(signal.SIGTERM)  # as `scancel` sends it to every task
    assert cluster.wait_for_output(("ps", 0), "received SIGTERM; serving until the chief", 30)
    time.sleep(0.5)
    assert cluster.procs[("chief", 0)].poll() is None  # training goes on
    cluster.procs[("worker", 1)].send_signal(signal.SIGUSR1)
    results = cluster.wait(timeout=60)
    steps = set()
    for task in (("chief", 0), ("worker", 0), ("worker", 1)):
        code, err = results[task]
        assert code == 75, (task, err[-2000:])
        m = re.search(r"stopped (?:by SIGUSR1 )?at step (\d+)", err)
        assert m, (task, err[-2000:])
        steps.add(int(m.group(1)))
    assert len(steps) == 1, steps
    (step,) = steps
    code, err = results[("ps", 0)]
    assert code == 75 and "ps 0: stopped by the chief" in err, (code, err[-2000:])
    assert (tmp_path / "run" / f"model.ckpt-{step}.safetensors").exists()
    cluster = Cluster(job, args + ["--set", f"run.max_steps={step + 5}"], chief=True, workers=2, timeout_secs=30, ps=1)
    results = cluster.start_all().wait(timeout=180)
    for task, (code, err) in results.items():
        assert code == 0, (task, err[-2000:])
    assert f"at step {step}" in results[("chief", 0)][1]


def test_launch_stopped_by_sigterm_with_a_ps_task_exits_75_with_the_checkpoint(tmp_path):
    """SIGTERM to `dtrain launch` reaches every task, the ps task too: the
    training tasks stop after one step, the chief saves, the ps task serves
    until then, and launch exits 75."""
    job = ps_job(tmp_path, 16, "sync", max_steps=1000000, save_steps=1000000)
    proc = subprocess.Popen([dtrain_bin(), "launch", "--chief", "--workers", "1", "--ps", "1", str(job), "--model-dir",
                             str(tmp_path / "run"), "--no-eval", "--log-format", "plain"], cwd=SOURCE_ROOT,
                            env=clean_env(), stderr=subprocess.PIPE, text=True)
    lines = []
    for line in proc.stderr:
        lines.append(line)
        if "[chief 0] step " in line:
            break
    proc.send_signal(signal.SIGTERM)
    err = "".join(lines) + proc.communicate(timeout=60)[1]
    assert proc.returncode == 75, err[-3000:]
    m = re.search(r"\[chief 0\] dtrain: stopped by SIGTERM at step (\d+); checkpoint (\S+) saved", err)
    assert m, err[-3000:]
    assert load_file(m.group(2))
    assert f"[worker 0] dtrain: stopped by SIGTERM at step {m.group(1)};" in err, err[-3000:]
    assert "[ps 0] ps 0: stopped by the chief" in err and "dtrain launch: ps 0 (127.0.0.1:" in err, err[-3000:]
