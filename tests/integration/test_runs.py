"""`dtrain runs DIR` over real runs of the real binary: a finished, a stopped
(SIGTERM), a failed (NaN loss), a killed (SIGKILL) and a running one, each
with its status, steps and eval metrics, the options that differ between
them, --json and --compare."""
import json
import signal
import subprocess
import time

from conftest import dtrain_bin, run_dtrain

JOB = """model:
  input: {{shape: [8]}}
  layers:
    - {{type: dense, units: 16, activation: relu}}
    - {{type: dense, units: 3}}
  loss: sparse_softmax_cross_entropy
  metrics: [accuracy]
optimizer: {{type: sgd, learning_rate: {lr}}}
data:
  train: {{format: synthetic, synthetic: {{num_examples: 512, shape: [8], num_classes: 3}}, batch_size: 16}}
  eval: {{format: synthetic, synthetic: {{num_examples: 64, shape: [8], num_classes: 3, seed: 1}}, batch_size: 16}}
run:
  model_dir: {model_dir}
  max_steps: {max_steps}
  save_checkpoints_steps: {save}
  log_step_count_steps: 1
eval: {{throttle_secs: 0}}
"""


def job(tmp_path, name, lr=0.05, max_steps=20, save=10):
    path = tmp_path / f"{name}.yaml"
    path.write_text(JOB.format(lr=lr, model_dir=tmp_path / "runs" / name, max_steps=max_steps, save=save))
    return path


def start(path):
    return subprocess.Popen([dtrain_bin(), "train", str(path), "--log-format", "plain"], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)


def wait_for_step(proc, step):
    """Reads the process's lines until it reports `step` (a checkpoint at 10 is saved by then)."""
    for line in proc.stdout:
        if line.startswith(f"step {step}/"):
            return
    raise AssertionError(f"the run ended before step {step}")


def runs_json(root):
    out = run_dtrain("runs", root, "--json")
    assert out.returncode == 0, out.stderr
    return {r["name"]: r for r in json.loads(out.stdout)}


def test_runs_lists_each_status_and_what_differs(tmp_path):
    root = tmp_path / "runs"
    assert run_dtrain("train", job(tmp_path, "finished")).returncode == 0
    assert run_dtrain("train", job(tmp_path, "nan", lr=1e30)).returncode == 1  # NaN loss: the guard stops it

    stopped = start(job(tmp_path, "stopped", max_steps=100000, save=10))
    wait_for_step(stopped, 12)
    stopped.send_signal(signal.SIGTERM)
    stopped.communicate(timeout=120)
    assert stopped.returncode == 75

    killed = start(job(tmp_path, "killed", max_steps=100000, save=10))
    wait_for_step(killed, 12)
    killed.kill()
    killed.wait(timeout=60)

    running = start(job(tmp_path, "running", lr=0.02, max_steps=100000, save=10))
    try:
        wait_for_step(running, 12)
        runs = runs_json(root)
        table = run_dtrain("runs", root)
    finally:
        running.send_signal(signal.SIGTERM)
        running.communicate(timeout=120)

    assert sorted(runs) == ["finished", "killed", "nan", "running", "stopped"]
    assert {n: r["status"] for n, r in runs.items()} == {
        "finished": "finished", "nan": "failed", "stopped": "stopped", "killed": "failed", "running": "running"}
    assert "NaN" in runs["nan"]["note"]
    assert "ended without recording why" in runs["killed"]["note"]
    f = runs["finished"]
    assert (f["step"], f["max_steps"], f["eval_step"]) == (20, 20, 20)
    metrics = json.loads((root / "finished/eval/metrics-20.json").read_text())["metrics"]
    assert f["metrics"]["accuracy"]["last"] == metrics["accuracy"]
    assert f["metrics"]["loss"]["best"] <= f["metrics"]["loss"]["last"]
    assert runs["stopped"]["step"] >= 12 and runs["running"]["step"] >= 10
    assert f["wall_seconds"] > 0 and runs["running"]["wall_seconds"] > 0
    assert len({r["model_hash"] for r in runs.values()}) == 1  # one model, other options differ
    assert f["options_that_differ"] == {"optimizer.learning_rate": "0.05", "run.max_steps": "20"}
    assert runs["running"]["options_that_differ"]["optimizer.learning_rate"] == "0.02"

    assert table.returncode == 0, table.stderr
    lines = table.stdout.splitlines()
    assert lines[0].split()[:5] == ["RUN", "STATUS", "STEP", "WALL", "MODEL"]
    row = next(l for l in lines if l.startswith("finished "))
    assert "20/20" in row and "optimizer.learning_rate=0.05" in row

    cmp = run_dtrain("runs", root, "--compare", "finished", "running")
    assert cmp.returncode == 0, cmp.stderr
    lr = next(l for l in cmp.stdout.splitlines() if l.startswith("optimizer.learning_rate"))
    assert lr.split() == ["optimizer.learning_rate", "0.05", "0.02"]
    bad = run_dtrain("runs", root, "--compare", "finishd", "running")
    assert bad.returncode == 2 and "no run finishd" in bad.stderr and "finished" in bad.stderr
    assert run_dtrain("runs", tmp_path / "absent").returncode == 2
