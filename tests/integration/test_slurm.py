"""dtrain under a real (private, single-node) Slurm: `srun dtrain cluster` resolves
the step's cluster from Slurm, and the sample sbatch script trains with 2 tasks.
Skipped when Slurm cannot start here (not root, not installed)."""
import contextlib
import re
import signal

import pytest

from conftest import SOURCE_ROOT, dtrain_bin
from slurm_cluster import free_port_range, slurm  # noqa: F401 (slurm is the fixture)

JOB = SOURCE_ROOT / "sample_configs/mnist_cnn_collective.yaml"
SBATCH = SOURCE_ROOT / "sample_configs/slurm/mnist_cnn_collective.sbatch"


@contextlib.contextmanager
def hard_timeout(seconds):
    """Fails the test (killing any subprocess.run child) if it runs past `seconds`."""
    def expire(signum, frame):
        raise TimeoutError(f"test ran past its {seconds}s limit")
    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def expected_cluster(host, base, task, role):
    return (f"source: Slurm\ncluster:\n  chief:\n    0: {host}:{base}\n  worker:\n    0: {host}:{base + 1}\n"
            f"task: {task}\nrole: {role}\ntraining tasks: 2\n")


def by_task(labelled):
    """srun --label output ("0: line") split into {task: text}."""
    tasks = {}
    for line in labelled.splitlines():
        task, sep, text = line.partition(": ")
        if sep and task.strip().isdigit():
            tasks.setdefault(int(task), []).append(text)
    return {task: "\n".join(lines) + "\n" for task, lines in tasks.items()}


def test_srun_two_tasks_resolve_the_cluster_from_slurm(slurm):
    base = free_port_range(2)
    with hard_timeout(90):
        out = slurm.srun("-n", "2", "--label", dtrain_bin(), "cluster", JOB, cwd=SOURCE_ROOT, timeout=60,
                         env={"DTRAIN_PORT_BASE": str(base)})
    assert out.returncode == 0, out.stderr
    tasks = by_task(out.stdout)
    assert tasks == {
        0: expected_cluster(slurm.node, base, f"chief 0 at {slurm.node}:{base}",
                            "chief: writes checkpoints and summaries"),
        1: expected_cluster(slurm.node, base, f"worker 0 at {slurm.node}:{base + 1}",
                            "worker: trains; writes nothing into model_dir"),
    }, out.stdout


def test_sbatch_sample_script_trains_with_two_tasks(slurm, tmp_path):
    model_dir = tmp_path / "model"
    env = {"DTRAIN_BIN": dtrain_bin(), "DTRAIN_JOB": str(JOB), "DTRAIN_MODEL_DIR": str(model_dir),
           "DTRAIN_ARGS": "--set run.max_steps=40 --set run.save_checkpoints_steps=20",
           "DTRAIN_PORT_BASE": str(free_port_range(2))}
    with hard_timeout(330):
        job_id = slurm.submit(SBATCH, env=env, cwd=tmp_path, args=["--time=5"])
        state = slurm.wait(job_id, timeout=300)
        info = slurm.job_info(job_id)
    output_file = slurm.output_path(job_id)
    assert output_file.parent == tmp_path, "the script's --output is relative to the submit directory"
    assert re.fullmatch(r"dtrain-mnist-cnn-collective-\d+\.out", output_file.name), output_file.name
    output = output_file.read_text(errors="replace") if output_file.exists() else "(no output file)"
    assert state == "COMPLETED", (f"job {job_id} ended {state} (exit {info.get('ExitCode')}); output:\n{output}\n"
                                  f"{slurm.log_tails()}")
    assert f"with 2 task(s) on {slurm.node}, ports from {env['DTRAIN_PORT_BASE']}" in output
    chief = by_task(output).get(0, "")
    assert "training finished at step 40" in chief, output
    assert (model_dir / "model.ckpt-40.safetensors").exists(), sorted(p.name for p in model_dir.iterdir())
