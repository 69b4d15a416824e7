"""eval.early_stopping and run.keep_checkpoint_every_n_hours with the real
binary: a run whose eval loss rises stops at the evaluation the rule names
(one_device, and a 2-worker collective cluster whose evaluator decides), stays
stopped when resumed, and hourly checkpoints survive rotation and restarts."""
import json
import re

import numpy as np

from conftest import run_dtrain
from test_cluster import clean_env

JOB = """
model:
  input: {{shape: [8]}}
  layers:
    - {{type: dense, units: 16, activation: relu}}
    - {{type: dense, units: 2}}
  loss: sparse_softmax_cross_entropy
  metrics: [accuracy]
optimizer: {{type: sgd, learning_rate: 0.1}}
strategy: {strategy}
data:
  train: {{format: npy, images: {x}, labels: {y}, batch_size: 32, shuffle: 256}}
  eval: {{format: npy, images: {x}, labels: {y_eval}, batch_size: 256}}
run: {{model_dir: {model_dir}, max_steps: {max_steps}, save_checkpoints_steps: 10, keep_checkpoint_max: 1000,
       save_summary_steps: 10, log_step_count_steps: 10, seed: 3}}
eval: {{throttle_secs: 0, early_stopping: {{metric: loss, mode: min, patience_evals: 3, min_delta: 0}}}}
"""


def write_job(tmp_path, strategy="{type: one_device}", max_steps=1000, flipped=True):
    """A separable two-class problem; the eval labels are the train labels
    flipped, so the better the model fits, the higher its eval loss."""
    rng = np.random.default_rng(0)
    x = rng.normal(size=(512, 8)).astype(np.float32)
    y = (x @ rng.normal(size=8) > 0).astype(np.int64)
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "y.npy", y)
    np.save(tmp_path / "y_eval.npy", 1 - y if flipped else y)
    job = tmp_path / "job.yaml"
    model_dir = tmp_path / "run"
    job.write_text(JOB.format(strategy=strategy, x=tmp_path / "x.npy", y=tmp_path / "y.npy",
                              y_eval=tmp_path / "y_eval.npy", model_dir=model_dir, max_steps=max_steps))
    return job, model_dir


def eval_history(model_dir):
    """(step, eval loss) of every evaluation, by step."""
    out = []
    for f in (model_dir / "eval").glob("metrics-*.json"):
        m = json.loads(f.read_text())
        out.append((m["global_step"], m["metrics"]["loss"]))
    return sorted(out)


def expected_stop(history, patience, min_delta=0.0):
    """The rule written independently: the evaluation after which `patience`
    evaluations in a row were not below the best so far minus min_delta."""
    best, bad = None, 0
    for step, loss in history:
        if best is None or loss < best - min_delta:
            best, bad = loss, 0
        else:
            bad += 1
            if bad == patience:
                return step
    return None


def checkpoint_steps(model_dir):
    return sorted(int(p.name[len("model.ckpt-"):-len(".safetensors")])
                  for p in model_dir.glob("model.ckpt-*.safetensors"))


def test_one_device_stops_at_the_third_evaluation_without_improvement_and_stays_stopped(tmp_path):
    job, model_dir = write_job(tmp_path)
    out = run_dtrain("train", job, "--log-format", "plain", env=clean_env(), timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    history = eval_history(model_dir)
    losses = [loss for _, loss in history]
    assert losses == sorted(losses), "the flipped eval labels make the eval loss rise at every evaluation"
    assert expected_stop(history, 3) == 40
    assert [s for s, _ in history] == [10, 20, 30, 40]
    assert checkpoint_steps(model_dir) == [10, 20, 30, 40]
    assert re.search(r"early stopping at step 40: eval loss has not decreased by more than 0 in 3 evaluations in "
                     r"a row \(best [\d.]+ at step 10; last [\d.]+ at step 40\); checkpoint \S+model.ckpt-40.safetensors"
                     r" saved", out.stderr), out.stderr[-2000:]
    assert "training finished at step 40" in out.stderr
    record = json.loads((model_dir / "eval" / "early_stopping.json").read_text())
    assert record["stopped_at_eval_step"] == 40 and record["best_step"] == 10
    assert record["best"] == losses[0] or abs(record["best"] - losses[0]) < 1e-9
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    acc = EventAccumulator(str(model_dir / "eval"))
    acc.Reload()
    assert [(e.step, e.value) for e in acc.Scalars("early_stopping/stopped")] == [(40, 1.0)]

    # Resumed: the history in model_dir/eval still says stop.
    again = run_dtrain("train", job, "--log-format", "plain", env=clean_env(), timeout=300)
    assert again.returncode == 0, again.stderr[-3000:]
    assert "early stopping: training stopped at step 40 after the evaluation of step 40: eval loss has not " \
           "decreased" in again.stderr
    assert checkpoint_steps(model_dir) == [10, 20, 30, 40]
    # More patience continues the run (and its history: it stops again 5 evaluations after the best).
    more = run_dtrain("train", job, "--log-format", "plain", "--set", "eval.early_stopping.patience_evals=5",
                      env=clean_env(), timeout=300)
    assert more.returncode == 0, more.stderr[-3000:]
    assert "resuming from" in more.stderr
    assert expected_stop(eval_history(model_dir), 5) == 60
    assert checkpoint_steps(model_dir)[-1] == 60


def test_improving_eval_loss_trains_to_max_steps(tmp_path):
    job, model_dir = write_job(tmp_path, max_steps=60, flipped=False)
    out = run_dtrain("train", job, "--log-format", "plain", env=clean_env(), timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    assert "early stopping" not in out.stderr
    assert checkpoint_steps(model_dir)[-1] == 60
    assert not (model_dir / "eval" / "early_stopping.json").exists()


def test_two_worker_collective_stops_every_task_at_the_same_step_on_the_evaluators_decision(tmp_path):
    job, model_dir = write_job(tmp_path, strategy="{type: collective, communication: ring}", max_steps=100000)
    out = run_dtrain("launch", "--workers", 2, "--evaluator", job, "--log-format", "plain", env=clean_env(),
                     timeout=600)
    assert out.returncode == 0, out.stderr[-4000:]
    history = eval_history(model_dir)
    stop = expected_stop(history, 3)
    assert stop == 40, history[:6]
    m = re.search(r"\[evaluator 0\] evaluator: early stopping after the evaluation of step (\d+): eval loss has not "
                  r"decreased by more than 0 in 3 evaluations in a row", out.stderr)
    assert m and int(m.group(1)) == stop, out.stderr[-3000:]
    chief = re.search(r"\[worker 0\] early stopping at step (\d+): after the evaluation of step 40, eval loss",
                      out.stderr)
    other = re.search(r"\[worker 1\] early stopping at step (\d+) \(the evaluator's decision\)", out.stderr)
    assert chief and other, out.stderr[-3000:]
    final = int(chief.group(1))
    assert int(other.group(1)) == final and stop <= final < 100000
    assert f"[worker 1] training finished at step {final}" in out.stderr
    assert checkpoint_steps(model_dir)[-1] == final
    assert f"[evaluator 0] evaluator: evaluated the final checkpoint (step {final}); done" in out.stderr
    record = json.loads((model_dir / "eval" / "early_stopping.json").read_text())
    assert record["stopped_at_eval_step"] == 40 and record["best_step"] == 10


def test_keep_checkpoint_every_n_hours_keeps_spaced_checkpoints_across_restarts(tmp_path):
    job, model_dir = write_job(tmp_path, max_steps=600, flipped=False)
    hours = 0.000005  # 18 ms: a quiet machine trains these 600 steps in about 0.2 s
    args = ["--log-format", "plain", "--no-eval", "--set", "run.keep_checkpoint_max=2",
            "--set", "run.save_checkpoints_steps=5", "--set", f"run.keep_checkpoint_every_n_hours={hours}"]
    out = run_dtrain("train", job, *args, env=clean_env(), timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    index = json.loads((model_dir / "checkpoint").read_text())
    times = dict(zip(index["all"], index["times"]))
    preserved = index["preserved"]
    assert preserved, "a run of 120 saves lasts longer than 18 ms"
    # The first save (the origin) is gone; the preserved ones are spaced by the hours.
    spaced = [times[p] for p in preserved]
    assert all(b - a >= hours * 3600 for a, b in zip(spaced, spaced[1:]))
    assert index["keep_hours_since"] == times[preserved[-1]]
    assert index["all"][-2:] == ["model.ckpt-595.safetensors", "model.ckpt-600.safetensors"]
    on_disk = sorted(p.name for p in model_dir.glob("model.ckpt-*.safetensors"))
    assert on_disk == sorted(preserved + index["all"][-2:])
    # A restart keeps them and goes on preserving from the same origin.
    again = run_dtrain("train", job, *args, "--set", "run.max_steps=650", env=clean_env(), timeout=300)
    assert again.returncode == 0, again.stderr[-3000:]
    index2 = json.loads((model_dir / "checkpoint").read_text())
    assert index2["preserved"][:len(preserved)] == preserved
    assert all((model_dir / p).exists() for p in index2["preserved"])
    assert index2["latest"] == "model.ckpt-650.safetensors"
    spaced2 = [t for name, t in zip(index2["all"], index2["times"]) if name in index2["preserved"]]
    assert all(b - a >= hours * 3600 for a, b in zip(spaced2, spaced2[1:]))


def test_a_cluster_without_evaluator_warns_that_early_stopping_cannot_stop_it(tmp_path):
    job, model_dir = write_job(tmp_path, strategy="{type: collective, communication: ring}", max_steps=40)
    out = run_dtrain("launch", "--workers", 2, job, "--log-format", "plain", env=clean_env(), timeout=600)
    assert out.returncode == 0, out.stderr[-4000:]
    assert ("the cluster has no evaluator task: checkpoints are not evaluated during training and "
            "eval.early_stopping cannot stop it (add an evaluator task)") in out.stderr
    assert "early stopping at step" not in out.stderr
    assert checkpoint_steps(model_dir)[-1] == 40
