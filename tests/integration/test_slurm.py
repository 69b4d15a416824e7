"""dtrain under a real (private, single-node) Slurm: `srun dtrain cluster` resolves
the step's cluster from Slurm, the sample sbatch script trains with 2 tasks, and
SIGUSR1 (--signal=USR1@90's warning) makes it save, requeue itself and resume.
Skipped when Slurm cannot start here (not root, not installed)."""
import contextlib
import os
import re
import signal
import subprocess
import time

import pytest

from conftest import SOURCE_ROOT, dtrain_bin
from slurm_cluster import FINAL_STATES, free_port_range, slurm  # noqa: F401 (slurm is the fixture)

JOB = SOURCE_ROOT / "sample_configs/mnist_cnn_collective.yaml"
SBATCH = SOURCE_ROOT / "sample_configs/slurm/mnist_cnn_collective.sbatch"
REQUEUE_STEPS = 1000  # the requeue tests' max_steps: SIGUSR1 comes after the first checkpoint (step 10); a fast
#                      machine trains 200 steps in about a second, before the signal lands


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


def wait_for_checkpoint(model_dir, job_id, slurm, timeout):
    """Polls until a checkpoint is in model_dir (the first is step 10's; on a fast
    machine keep_checkpoint_max may have deleted it again by the next poll);
    fails if the job ends first or `timeout` passes."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if any(model_dir.glob("model.ckpt-*.safetensors")):
            return
        info = slurm.job_info(job_id)
        if info.get("JobState") in FINAL_STATES:
            raise AssertionError(f"job {job_id} ended {info.get('JobState')} before a checkpoint was written:\n"
                                 f"{slurm.output_path(job_id).read_text(errors='replace')}")
        time.sleep(0.3)
    raise AssertionError(f"no checkpoint in {model_dir} within {timeout}s")


def submit_sample(slurm, tmp_path, max_steps, *sbatch_args, dtrain_args=""):
    """The sample sbatch script training to max_steps, saving every 10 steps; returns (job id, model_dir)."""
    model_dir = tmp_path / "model"
    env = {"DTRAIN_BIN": dtrain_bin(), "DTRAIN_JOB": str(JOB), "DTRAIN_MODEL_DIR": str(model_dir),
           "DTRAIN_ARGS": f"--set run.max_steps={max_steps} --set run.save_checkpoints_steps=10 {dtrain_args}",
           "DTRAIN_PORT_BASE": str(free_port_range(2)), "OMP_WAIT_POLICY": "passive"}
    return slurm.submit(SBATCH, env=env, cwd=tmp_path, args=["--time=10", *sbatch_args]), model_dir


@pytest.mark.parametrize("to_batch_shell", [False, True], ids=["steps", "batch-shell"])
def test_usr1_requeues_the_job_and_the_next_start_resumes_from_its_checkpoint(slurm, tmp_path, to_batch_shell):
    """As Slurm's --signal=USR1@90 does before the time limit: SIGUSR1 to every task of
    the job's steps; or, as --signal=B:USR1@90, to the batch shell only, which the
    sample script's `exec srun` made srun, which passes it on to the tasks. The chief
    saves, requeues the job (scontrol requeue), and the job's second start resumes
    from that checkpoint."""
    with hard_timeout(570):
        job_id, model_dir = submit_sample(slurm, tmp_path, REQUEUE_STEPS)
        wait_for_checkpoint(model_dir, job_id, slurm, 240)
        sent = slurm.run("scancel", "--signal=USR1", *(["--batch"] if to_batch_shell else []), job_id)
        assert sent.returncode == 0, sent.stderr
        # Requeued: pending again, with one restart counted.
        deadline = time.monotonic() + 60
        info = {}
        while time.monotonic() < deadline:
            info = slurm.job_info(job_id)
            if info.get("Restarts") == "1" or info.get("JobState") in FINAL_STATES:
                break
            time.sleep(0.3)
        output_file = slurm.output_path(job_id)
        first = output_file.read_text(errors="replace")
        assert info.get("Restarts") == "1", (f"job {job_id} not requeued ({info.get('JobState')}, exit "
                                              f"{info.get('ExitCode')}); output:\n{first}\n{slurm.log_tails()}")
        # Slurm holds a requeued job (BeginTime, ~2 min) once it is pending again: let it start now.
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            info = slurm.job_info(job_id)
            if info.get("JobState") != "COMPLETING" and info.get("JobState") != "PENDING":
                break
            if info.get("JobState") == "PENDING" and info.get("Reason") == "BeginTime":
                slurm.run("scontrol", "update", f"JobId={job_id}", "StartTime=now")
            time.sleep(0.3)
        state = slurm.wait(job_id, timeout=300)
        info = slurm.job_info(job_id)
    output = output_file.read_text(errors="replace")
    assert state == "COMPLETED", f"job {job_id} ended {state} (exit {info.get('ExitCode')}); output:\n{output}"
    assert info.get("Restarts") == "1", info
    chief = by_task(output).get(0, "")
    requeued = re.search(rf"requeued Slurm job {job_id} \(scontrol requeue\); it resumes from (\S*/model\.ckpt-(\d+)\.safetensors)",
                         chief)
    assert requeued, output
    checkpoint, step = requeued.group(1), int(requeued.group(2))
    assert 10 <= step < REQUEUE_STEPS, output
    assert f"stopped by SIGUSR1 at step {step}; checkpoint {checkpoint} saved" in output, output
    worker = by_task(output).get(1, "")
    # Slurm signals the tasks one after another: the worker's own SIGUSR1 may
    # arrive after the tasks agreed to stop on the chief's.
    assert (f"stopped by SIGUSR1 at step {step}; checkpoint by the chief saved" in worker or
            f"stopped at step {step} because another task of the cluster received a stop signal" in worker), output
    # Both starts in the one (appended) output file: the second resumed where the first stopped.
    assert f"(start 1 of job {job_id})" in output and f"(start 2 of job {job_id})" in output, output
    second = output.split(f"(start 2 of job {job_id})", 1)[1]
    assert f"resuming from {checkpoint} at step {step}" in by_task(second).get(0, ""), output
    assert f"training finished at step {REQUEUE_STEPS}" in by_task(second).get(0, ""), output
    assert (model_dir / f"model.ckpt-{REQUEUE_STEPS}.safetensors").exists()


@pytest.mark.parametrize("sbatch_arg, dtrain_args, signame, says", [
    ("--no-requeue", "", "USR1", "Slurm job {job_id} not requeued: it may not be requeued (Requeue=0; submit it "
                                 "with sbatch --requeue, or set run.slurm_requeue: true)"),
    ("--no-requeue", "--set run.slurm_requeue=true", "USR1",
     "warning: could not requeue Slurm job {job_id}: scontrol requeue {job_id} exited with 1: "),
    ("--requeue", "--set run.slurm_requeue=false", "USR1", "Slurm job {job_id} not requeued: run.slurm_requeue is false"),
    ("--requeue", "", "TERM", None),
], ids=["usr1-no-requeue", "scontrol-fails", "requeue-false", "sigterm"])
def test_a_stop_that_must_not_requeue_only_saves(slurm, tmp_path, sbatch_arg, dtrain_args, signame, says):
    """SIGUSR1 to a job submitted with --no-requeue (Requeue=0): the chief says why it does
    not requeue; with run.slurm_requeue: true it tries, and Slurm's refusal is a warning;
    with false it does not try. SIGTERM (what scancel and the time limit send) to a
    requeueable job: no requeue either, so scancel still ends a job. All save and end
    with exit 75."""
    with hard_timeout(330):
        job_id, model_dir = submit_sample(slurm, tmp_path, REQUEUE_STEPS, sbatch_arg, dtrain_args=dtrain_args)
        wait_for_checkpoint(model_dir, job_id, slurm, 240)
        sent = slurm.run("scancel", f"--signal={signame}", job_id)
        assert sent.returncode == 0, sent.stderr
        state = slurm.wait(job_id, timeout=60)
        info = slurm.job_info(job_id)
    output = slurm.output_path(job_id).read_text(errors="replace")
    assert state == "FAILED" and info.get("ExitCode") == "75:0", (state, info.get("ExitCode"), output)
    assert info.get("Restarts") == "0", info
    chief = by_task(output).get(0, "")
    if says:
        assert says.format(job_id=job_id) in chief, output
    assert "requeued Slurm job" not in output
    assert "(start 2 of job" not in output
    stopped = re.search(rf"stopped by SIG{signame} at step (\d+); checkpoint (\S+) saved", chief)
    assert stopped and os.path.exists(stopped.group(2)), output


def test_usr1_to_an_interactive_srun_job_is_not_requeued(slurm, tmp_path):
    """srun outside sbatch (BatchFlag=0): SIGUSR1 saves and exits 75, and the chief says
    why it did not requeue (only batch jobs can be)."""
    model_dir = tmp_path / "model"
    name = f"dtrain-srun-{os.getpid()}"
    env = dict(slurm.env, DTRAIN_PORT_BASE=str(free_port_range(1)), OMP_WAIT_POLICY="passive")
    cmd = ["srun", "-n", "1", f"--job-name={name}", dtrain_bin(), "train", JOB, "--model-dir", model_dir,
           "--log-format", "plain", "--set", f"run.max_steps={REQUEUE_STEPS}", "--set", "run.save_checkpoints_steps=10"]
    with hard_timeout(300):
        proc = subprocess.Popen(list(map(str, cmd)), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                env=env, cwd=tmp_path)
        try:
            deadline = time.monotonic() + 240
            while not any(model_dir.glob("model.ckpt-*.safetensors")):
                assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()[0]
                time.sleep(0.3)
            job_id = slurm.run("squeue", "-h", "-o", "%i", "-n", name).stdout.strip()
            assert job_id.isdigit(), job_id
            sent = slurm.run("scancel", "--signal=USR1", job_id)
            assert sent.returncode == 0, sent.stderr
            output, _ = proc.communicate(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    assert proc.returncode == 75, output
    assert (f"Slurm job {job_id} not requeued: it is not a batch job (srun or salloc outside sbatch; "
            "BatchFlag=0)") in output, output
    assert re.search(r"stopped by SIGUSR1 at step \d+; checkpoint \S+ saved", output), output
    assert "requeued Slurm job" not in output


def slurm_task_pid(marker, procid, timeout=60):
    """The pid of the dtrain process of task `procid` of the srun step whose
    environment carries DTRAIN_TEST_MARK=marker (slurmstepd starts the tasks:
    they are no children of srun)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                env = open(f"/proc/{entry}/environ", "rb").read().split(b"\0")
                exe = os.readlink(f"/proc/{entry}/exe")
            except OSError:
                continue
            if (f"DTRAIN_TEST_MARK={marker}".encode() in env and f"SLURM_PROCID={procid}".encode() in env
                    and exe.endswith("/dtrain")):
                return int(entry)
        time.sleep(0.05)
    raise AssertionError(f"no dtrain process of task {procid} in the step marked {marker}")


def test_elastic_under_srun_a_task_killed_shrinks_the_step_and_the_others_finish_with_the_unfaulted_runs_bits(
        slurm, tmp_path):
    """Issue 30, part 5: `srun --no-kill --kill-on-bad-exit=0` runs the chief and
    2 workers (strategy.elastic.min_workers 2); worker 1's process is killed -9
    (a lost node, as far as the step can tell): the chief and worker 0 regroup
    over 32 + 16 rows and finish, and the final checkpoint has the bits of the
    same step in which nothing was killed."""
    from safetensors.numpy import load_file
    import numpy as np

    settings = ["run.max_steps=60", "run.save_checkpoints_steps=10", "run.keep_checkpoint_max=20",
                "run.deterministic=true", "run.log_step_count_steps=10", "data.train.batch_size=16",
                "run.micro_batch_rows=16", "strategy.elastic.min_workers=2"]

    def start(model_dir, marker):
        env = dict(slurm.env, DTRAIN_PORT_BASE=str(free_port_range(3)), OMP_NUM_THREADS="1",
                   OMP_WAIT_POLICY="passive", DTRAIN_TEST_MARK=marker)
        cmd = ["srun", "--overcommit", "-n", "3", "--no-kill", "--kill-on-bad-exit=0", "--label", dtrain_bin(),
               "train", JOB, "--model-dir", model_dir, "--log-format", "plain", "--no-eval"]
        for s in settings:
            cmd += ["--set", s]
        return subprocess.Popen(list(map(str, cmd)), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                env=env, cwd=tmp_path)

    with hard_timeout(400):
        plain = start(tmp_path / "unfaulted", f"unfaulted-{os.getpid()}")
        output, _ = plain.communicate(timeout=180)
        assert plain.returncode == 0, output
        expected = load_file(str(tmp_path / "unfaulted" / "model.ckpt-60.safetensors"))

        model_dir = tmp_path / "faulted"
        marker = f"faulted-{os.getpid()}"
        proc = start(model_dir, marker)
        try:
            deadline = time.monotonic() + 180
            while not (model_dir / "model.ckpt-10.safetensors").exists():
                assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()[0]
                time.sleep(0.01)
            os.kill(slurm_task_pid(marker, 2), signal.SIGKILL)
            output, _ = proc.communicate(timeout=180)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    tasks = by_task(output)
    # srun reports the killed task (its exit is not 0); the others finished.
    assert proc.returncode != 0, output
    assert re.search(r"elastic: worker 1 \(\S+\) ended without leaving the cluster.*; 2 of 3 workers go on from step "
                     r"\d+ .*the global batch 48 split 32 \+ 16 .*this worker rank 0 with rows 0\.\.31", tasks[0]), output
    assert "training finished at step 60; checkpoint" in tasks[0], output
    assert "training finished at step 60; the chief saved the checkpoint" in tasks[1], output
    final = load_file(str(model_dir / "model.ckpt-60.safetensors"))
    assert final.keys() == expected.keys()
    for name in final:
        assert np.array_equal(final[name], expected[name]), name
