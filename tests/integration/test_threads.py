"""The thread budget through the real binary: the start-up line, who wins
(--threads > run.threads > OMP_NUM_THREADS > the budget), the count the
checkpoint records as used, num_parallel_calls auto, and dtrain launch
dividing its CPUs between the workers (engine/threads.hpp)."""
import os
import re
import subprocess
import time

import numpy as np
import pytest
from safetensors import safe_open

from conftest import SOURCE_ROOT, dtrain_bin
from test_cluster import clean_env
from test_collective import mlp_collective_job

CPUS = sorted(os.sched_getaffinity(0))


def run(*args, taskset=None, env=None, timeout=300):
    """dtrain with OMP_NUM_THREADS unset unless `env` sets it, no cluster
    variables, passive OpenMP waits, and optionally under taskset."""
    full = {k: v for k, v in os.environ.items() if k != "OMP_NUM_THREADS"}
    full.update(clean_env(OMP_WAIT_POLICY="passive"))
    full.update(env or {})
    cmd = [dtrain_bin(), *map(str, args)]
    if taskset is not None:
        cmd = ["taskset", "-c", taskset, *cmd]
    return subprocess.run(cmd, cwd=SOURCE_ROOT, capture_output=True, text=True, timeout=timeout, env=full)


def threads_line(stderr):
    lines = [l for l in stderr.splitlines() if "threads: " in l and " compute" in l]
    assert len(lines) == 1, stderr
    return lines[0]


def saved_threads(model_dir, step):
    with safe_open(str(model_dir / f"model.ckpt-{step}.safetensors"), "np") as f:
        return int(f.metadata()["compute_threads"])


def train(tmp_path, *args, name="run", steps=4, **kw):
    job = mlp_collective_job(tmp_path, 32, max_steps=steps, save_steps=steps)
    model_dir = tmp_path / name
    out = run("train", job, "--no-eval", "--log-format", "plain", "--model-dir", model_dir,
              "--set", "strategy.type=one_device", *args, **kw)
    assert out.returncode == 0, out.stderr
    return out, model_dir


def test_taskset_one_cpu_gives_a_budget_of_one_and_one_compute_thread(tmp_path):
    out, model_dir = train(tmp_path, taskset=str(CPUS[-1]))
    line = threads_line(out.stderr)
    assert line.startswith(f"threads: 1 compute (budget 1: affinity 1 of {os.cpu_count()} CPUs, "), line
    assert line.endswith("; input 1"), line
    assert saved_threads(model_dir, 4) == 1


@pytest.mark.skipif(len(CPUS) < 2, reason="needs at least 2 CPUs in the affinity mask")
def test_the_budget_is_the_affinity_mask_and_explicit_counts_win(tmp_path):
    out, model_dir = train(tmp_path, name="budget")
    line = threads_line(out.stderr)
    assert line.startswith(f"threads: {len(CPUS)} compute (budget {len(CPUS)}: affinity {len(CPUS)} of "), line
    assert saved_threads(model_dir, 4) == len(CPUS)

    out, model_dir = train(tmp_path, "--threads", 1, name="flag")
    assert threads_line(out.stderr).startswith(f"threads: 1 compute from --threads (budget {len(CPUS)}: ")
    assert saved_threads(model_dir, 4) == 1

    out, model_dir = train(tmp_path, "--set", "run.threads=1", name="job")
    assert threads_line(out.stderr).startswith(f"threads: 1 compute from run.threads (budget {len(CPUS)}: ")
    assert saved_threads(model_dir, 4) == 1

    out, model_dir = train(tmp_path, env={"OMP_NUM_THREADS": "1"}, name="env")
    assert threads_line(out.stderr).startswith(f"threads: 1 compute from OMP_NUM_THREADS (budget {len(CPUS)}: ")
    assert saved_threads(model_dir, 4) == 1

    # --threads over run.threads over OMP_NUM_THREADS.
    out, model_dir = train(tmp_path, "--threads", 2, "--set", "run.threads=1", env={"OMP_NUM_THREADS": "1"},
                           name="all")
    assert threads_line(out.stderr).startswith("threads: 2 compute from --threads ")
    assert saved_threads(model_dir, 4) == 2
    out, model_dir = train(tmp_path, "--set", "run.threads=2", env={"OMP_NUM_THREADS": "1"}, name="job_env")
    assert threads_line(out.stderr).startswith("threads: 2 compute from run.threads ")
    assert saved_threads(model_dir, 4) == 2

    # A count above the budget is used and called so.
    out, model_dir = train(tmp_path, "--threads", 2, taskset=str(CPUS[0]), name="over")
    assert threads_line(out.stderr).startswith("threads: 2 compute from --threads (more than the budget 1: ")


@pytest.mark.skipif(len(CPUS) < 2, reason="needs at least 2 CPUs in the affinity mask")
def test_a_busy_process_beside_the_job_takes_its_cpu_from_the_budget(tmp_path):
    """A CPU-bound process on one of the job's CPUs: measured at start-up, the
    job computes on one thread fewer (and says why); under run.deterministic the
    count never depends on timing, so it keeps the budget and measures nothing."""
    busy = subprocess.Popen(["taskset", "-c", str(CPUS[-1]), "python3", "-c", "while True: pass"])
    try:
        time.sleep(0.3)  # running
        out, model_dir = train(tmp_path, name="beside")
        line = threads_line(out.stderr)
        assert re.fullmatch(rf"threads: {len(CPUS) - 1} compute \(budget {len(CPUS)}: affinity {len(CPUS)} of \d+ "
                            r"CPUs, [^;]+; (0\.[89]|1\.[01]) of them busy with other work at start-up\); input \d+",
                            line), line
        assert saved_threads(model_dir, 4) == len(CPUS) - 1
        out, model_dir = train(tmp_path, "--set", "run.deterministic=true", name="deterministic")
        line = threads_line(out.stderr)
        assert line.startswith(f"threads: {len(CPUS)} compute (budget {len(CPUS)}: "), line
        assert "busy with other work" not in line, line
        assert saved_threads(model_dir, 4) == len(CPUS)
    finally:
        busy.kill()
        busy.wait()


def test_num_parallel_calls_auto_takes_the_process_count(tmp_path):
    out, _ = train(tmp_path, "--set", "data.train.num_parallel_calls=auto", taskset=str(CPUS[0]), name="one")
    assert "data.train: num_parallel_calls auto: 1 thread" in out.stderr
    assert threads_line(out.stderr).endswith("; input 1")
    out, _ = train(tmp_path, "--set", "data.train.num_parallel_calls=auto", "--set", "data.eval.num_parallel_calls=auto",
                   "--threads", 3, name="three")
    assert "data.train: num_parallel_calls auto: 3 threads" in out.stderr
    assert threads_line(out.stderr).endswith("; input 3")
    # An explicit count stays; data.eval's differs and is named.
    out, _ = train(tmp_path, "--set", "data.train.num_parallel_calls=2", "--threads", 1, name="mixed")
    assert threads_line(out.stderr).endswith("; input 2 (data.train), 1 (data.eval)")


def test_devices_prints_the_budget():
    out = run("devices", taskset=str(CPUS[-1]))
    assert out.returncode == 0, out.stderr
    assert f"\nthreads       budget 1: affinity 1 of {os.cpu_count()} CPUs, " in out.stdout


def test_evaluate_and_predict_take_threads(tmp_path):
    _, model_dir = train(tmp_path, name="ev")
    job = tmp_path / "job-32.yaml"
    out = run("evaluate", job, "--model-dir", model_dir, "--threads", 1, "--log-format", "plain")
    assert out.returncode == 0, out.stderr
    assert threads_line(out.stderr).startswith("threads: 1 compute from --threads ")
    np.save(tmp_path / "x.npy", np.zeros((3, 28, 28, 1), np.float32))
    out = run("predict", job, "--model-dir", model_dir, "--input", tmp_path / "x.npy", "--output",
              tmp_path / "p.npy", "--set", "run.threads=1")
    assert out.returncode == 0, out.stderr
    assert threads_line(out.stderr).startswith("threads: 1 compute from run.threads ")


def test_bad_thread_counts_exit_2(tmp_path):
    job = mlp_collective_job(tmp_path, 32)
    for bad in ("abc", "0", "-1", "1.5"):
        out = run("train", job, "--threads", bad)
        assert out.returncode == 2, (bad, out.stderr)
        assert "--threads" in out.stderr, out.stderr
    out = run("train", job, "--threads", "abc")
    assert out.stderr.splitlines()[0] == ('--threads: "abc" is not a thread count; expected an integer >= 1 (leave '
                                          '--threads out for run.threads, OMP_NUM_THREADS or the thread budget)')
    out = run("train", job, "--set", "run.threads=0")
    assert out.returncode == 2
    assert out.stderr == "dtrain: --set run.threads=0: run.threads: 0 is below the minimum 1\n"


def test_deterministic_resume_keeps_the_checkpoints_count_over_threads(cnn_job, tmp_path):
    job, model_dir = cnn_job(max_steps=40, save_steps=20)
    env = clean_env(OMP_WAIT_POLICY="passive")
    ref = run("train", job, "--model-dir", tmp_path / "ref", "--no-eval", "--threads", 1, env=env)
    assert ref.returncode == 0, ref.stderr
    first = run("train", job, "--no-eval", "--set", "run.max_steps=20", "--threads", 1, env=env)
    assert first.returncode == 0, first.stderr
    resumed = run("train", job, "--no-eval", "--threads", 2, env=env)
    assert resumed.returncode == 0, resumed.stderr
    assert ("run.deterministic: using 1 compute threads, as the run that wrote the checkpoint (instead of 2 from "
            "--threads)") in resumed.stderr
    assert saved_threads(model_dir, 40) == 1
    with safe_open(str(model_dir / "model.ckpt-40.safetensors"), "np") as a, \
            safe_open(str(tmp_path / "ref" / "model.ckpt-40.safetensors"), "np") as b:
        for name in a.keys():
            assert np.array_equal(a.get_tensor(name), b.get_tensor(name)), name


def task_lines(stderr, task):
    return [l[len(task) + 3:] for l in stderr.splitlines() if l.startswith(f"[{task}] ")]


@pytest.mark.skipif(len(CPUS) < 2, reason="needs at least 2 CPUs in the affinity mask")
def test_launch_pins_each_worker_to_its_own_cpus(tmp_path):
    job = mlp_collective_job(tmp_path, 16, max_steps=4, save_steps=4)
    out = run("launch", "--workers", 2, job, "--model-dir", tmp_path / "run", "--no-eval", "--log-format", "plain")
    assert out.returncode == 0, out.stderr
    share = len(CPUS) // 2

    launch_line = [l for l in out.stderr.splitlines() if l.startswith("dtrain launch: threads: ")]
    assert len(launch_line) == 1, out.stderr
    assert launch_line[0].startswith(f"dtrain launch: threads: budget {len(CPUS)}: affinity {len(CPUS)} of ")
    if len(CPUS) == 2:
        assert launch_line[0].endswith(f"; worker 0 1 thread on CPU {CPUS[0]}, worker 1 1 thread on CPU {CPUS[1]}")
    for w in (0, 1):
        line = threads_line("\n".join(task_lines(out.stderr, f"worker {w}")))
        assert line.startswith(f"threads: {share} compute from --threads (budget {share}: affinity {share} of "), line
    assert saved_threads(tmp_path / "run", 4) == share


@pytest.mark.skipif(len(CPUS) < 2, reason="needs at least 2 CPUs in the affinity mask")
def test_launch_with_more_workers_than_cpus_pins_nothing_and_passes_threads_through(tmp_path):
    job = mlp_collective_job(tmp_path, 16, max_steps=2, save_steps=2)
    workers = len(CPUS) + 1
    out = run("launch", "--workers", workers, job, "--model-dir", tmp_path / "run", "--no-eval",
              "--log-format", "plain", timeout=600)
    assert out.returncode == 0, out.stderr
    assert f"(not pinned: fewer CPUs than the {workers} training tasks)" in out.stderr
    for w in range(workers):
        line = threads_line("\n".join(task_lines(out.stderr, f"worker {w}")))
        assert line.startswith(f"threads: 1 compute from --threads (budget {len(CPUS)}: "), line

    # An explicit --threads goes to every task; nothing is pinned.
    out = run("launch", "--workers", 2, job, "--model-dir", tmp_path / "explicit", "--no-eval",
              "--log-format", "plain", "--threads", 1)
    assert out.returncode == 0, out.stderr
    assert "dtrain launch: threads: 1 per task from --threads, not pinned (budget " in out.stderr
    for w in (0, 1):
        line = threads_line("\n".join(task_lines(out.stderr, f"worker {w}")))
        assert line.startswith(f"threads: 1 compute from --threads (budget {len(CPUS)}: "), line

    # --no-pin: the same division, every task keeps launch's CPUs.
    out = run("launch", "--workers", 2, "--no-pin", job, "--model-dir", tmp_path / "nopin", "--no-eval",
              "--log-format", "plain")
    assert out.returncode == 0, out.stderr
    share = len(CPUS) // 2
    assert (f"; worker 0 {share} thread{'s' if share > 1 else ''}, worker 1 {share} thread{'s' if share > 1 else ''} "
            "(not pinned: --no-pin)") in out.stderr
    for w in (0, 1):
        line = threads_line("\n".join(task_lines(out.stderr, f"worker {w}")))
        assert line.startswith(f"threads: {share} compute from --threads (budget {len(CPUS)}: "), line

    # run.threads in the job: launch passes nothing and the tasks read it.
    out = run("launch", "--workers", 2, job, "--model-dir", tmp_path / "job", "--no-eval",
              "--log-format", "plain", "--set", "run.threads=1")
    assert out.returncode == 0, out.stderr
    assert "dtrain launch: threads: 1 per task from run.threads, not pinned" in out.stderr
    for w in (0, 1):
        line = threads_line("\n".join(task_lines(out.stderr, f"worker {w}")))
        assert line.startswith("threads: 1 compute from run.threads "), line


def test_launch_ps_tasks_get_one_thread(tmp_path):
    job = mlp_collective_job(tmp_path, 16, max_steps=2, save_steps=2)
    out = run("launch", "--workers", 1, "--ps", 1, job, "--model-dir", tmp_path / "run", "--no-eval",
              "--log-format", "plain", "--set", "strategy.type=parameter_server")
    assert out.returncode == 0, out.stderr
    assert "; ps and evaluator tasks 1 thread each, not pinned" in out.stderr
    ps = "\n".join(task_lines(out.stderr, "ps 0"))
    assert re.search(r"^ps 0: threads: 1 compute from --threads \(budget \d+: ", ps, re.M), ps
