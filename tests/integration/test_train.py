"""train / evaluate / predict end to end with the real binary: checkpoints read by
Python's safetensors, event files read by TensorBoard's own reader, eval JSON,
predictions consistent with evaluation, rotation of kept checkpoints."""
import json

import numpy as np
import pytest
from safetensors import safe_open
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from conftest import run_dtrain


@pytest.fixture
def trained(mlp_job):
    job, model_dir = mlp_job(max_steps=60, save_steps=20, keep=2)
    out = run_dtrain("train", job, "--log-format", "plain")
    assert out.returncode == 0, out.stderr
    return job, model_dir, out


def test_train_writes_rotated_safetensors_checkpoints(trained):
    _, model_dir, _ = trained
    files = sorted(p.name for p in model_dir.glob("model.ckpt-*.safetensors"))
    assert files == ["model.ckpt-40.safetensors", "model.ckpt-60.safetensors"]  # keep_checkpoint_max: 2
    index = json.loads((model_dir / "checkpoint").read_text())
    assert index["latest"] == "model.ckpt-60.safetensors"
    with safe_open(str(model_dir / "model.ckpt-60.safetensors"), framework="numpy") as f:
        meta = f.metadata()
        assert meta["global_step"] == "60"
        assert int(meta["input_position"]) == 60
        names = set(f.keys())
        assert {"dense/kernel", "dense/bias", "dense_1/kernel", "dense_1/bias"} <= names
        assert {"dense/kernel/momentum", "dense_1/bias/momentum"} <= names
        assert f.get_tensor("dense/kernel").shape == (784, 32)
        assert f.get_tensor("dense_1/kernel").dtype == np.float32
    assert (model_dir / "job.resolved.yaml").read_text().startswith(("model:", "#"))


def test_train_summaries_read_by_tensorboard(trained):
    _, model_dir, _ = trained
    ea = EventAccumulator(str(model_dir))
    ea.Reload()
    tags = set(ea.Tags()["scalars"])
    assert {"loss", "learning_rate", "accuracy", "mean_loss", "global_step/sec", "examples/sec",
            "input_wait_fraction"} <= tags
    assert all(0.0 <= e.value <= 1.0 for e in ea.Scalars("input_wait_fraction"))
    loss = ea.Scalars("loss")
    assert [e.step for e in loss] == [10, 20, 30, 40, 50, 60]
    assert all(np.isfinite(e.value) for e in loss)
    assert loss[-1].value < loss[0].value
    assert [e.value for e in ea.Scalars("learning_rate")] == pytest.approx([0.1] * 6)


def test_train_and_evaluate_writes_eval_summaries_and_json(trained):
    _, model_dir, out = trained
    ea = EventAccumulator(str(model_dir / "eval"))
    ea.Reload()
    assert [e.step for e in ea.Scalars("accuracy")] == [20, 40, 60]
    metrics = json.loads((model_dir / "eval" / "metrics.json").read_text())
    assert metrics["global_step"] == 60 and metrics["examples"] == 1000
    assert metrics["metrics"]["accuracy"] == pytest.approx(ea.Scalars("accuracy")[-1].value, rel=1e-6)
    assert 0.5 < metrics["metrics"]["accuracy"] <= 1.0
    assert "eval at step 60:" in out.stderr


def test_evaluate_and_predict_agree(trained, tmp_path):
    job, model_dir, _ = trained
    ev = run_dtrain("evaluate", job)
    assert ev.returncode == 0, ev.stderr
    acc = float(next(l for l in ev.stdout.splitlines() if l.startswith("accuracy:")).split()[1])
    assert acc == pytest.approx(json.loads((model_dir / "eval" / "metrics.json").read_text())["metrics"]["accuracy"])

    # The eval split, as raw pixels, through predict: argmax accuracy must match.
    import gzip
    from conftest import SAMPLE_IMAGES, SAMPLE_LABELS
    with gzip.open(SAMPLE_IMAGES) as f:
        images = np.frombuffer(f.read(), np.uint8, offset=16).reshape(-1, 28, 28, 1)[9000:]
    with gzip.open(SAMPLE_LABELS) as f:
        labels = np.frombuffer(f.read(), np.uint8, offset=8)[9000:]
    np.save(tmp_path / "x.npy", images.astype(np.float32))  # predict scales them as data.eval does
    out = run_dtrain("predict", job, "--input", tmp_path / "x.npy", "--output", tmp_path / "p.npy")
    assert out.returncode == 0, out.stderr
    assert "predict: applies data.eval's preprocessing: scale 0.00392157" in out.stderr, out.stderr
    probs = np.load(tmp_path / "p.npy")
    assert probs.shape == (1000, 10)
    assert np.allclose(probs.sum(axis=1), 1.0, atol=1e-5)
    assert (probs.argmax(axis=1) == labels).mean() == pytest.approx(acc, abs=1e-9)

    out = run_dtrain("predict", job, "--input", tmp_path / "x.npy", "--output", tmp_path / "p.csv")
    assert out.returncode == 0, out.stderr
    rows = (tmp_path / "p.csv").read_text().splitlines()
    assert rows[0] == "class," + ",".join(f"p{i}" for i in range(10))
    assert [int(r.split(",")[0]) for r in rows[1:]] == list(probs.argmax(axis=1))


def test_inspect_lists_tensors(trained):
    _, model_dir, _ = trained
    out = run_dtrain("inspect", model_dir / "model.ckpt-60.safetensors")
    assert out.returncode == 0, out.stderr
    assert "dense/kernel" in out.stdout and "784" in out.stdout and "60" in out.stdout


def test_train_again_at_max_steps_does_nothing(trained):
    job, model_dir, _ = trained
    before = (model_dir / "model.ckpt-60.safetensors").read_bytes()
    out = run_dtrain("train", job, "--log-format", "plain")
    assert out.returncode == 0
    assert "already at step 60" in out.stderr
    assert (model_dir / "model.ckpt-60.safetensors").read_bytes() == before


def test_json_log_format(mlp_job):
    job, _ = mlp_job(max_steps=20, save_steps=20)
    out = run_dtrain("train", job, "--log-format", "json", "--no-eval")
    assert out.returncode == 0, out.stderr
    events = [json.loads(l) for l in out.stderr.splitlines()]
    steps = [e for e in events if e["event"] == "step"]
    assert [e["step"] for e in steps] == [10, 20]
    assert all(e["examples_per_sec"] > 0 and e["loss"] > 0 for e in steps)
    assert all(0.0 <= e["input_wait_fraction"] <= 1.0 for e in steps)


def test_model_dir_override(mlp_job, tmp_path):
    job, model_dir = mlp_job(max_steps=10, save_steps=10)
    other = tmp_path / "elsewhere"
    out = run_dtrain("train", job, "--model-dir", other, "--no-eval")
    assert out.returncode == 0, out.stderr
    assert (other / "model.ckpt-10.safetensors").exists() and not model_dir.exists()
