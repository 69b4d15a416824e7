"""towers and mirrored through the real binary: checkpoints move between
strategies and the resumed runs match an uninterrupted one_device run;
evaluate and predict agree with one_device; the batch split is printed and a
global batch smaller than the replicas is refused."""
import json
import shutil

import numpy as np
import pytest
from safetensors.numpy import load_file

from conftest import run_dtrain

FOUR = "strategy.devices=[cpu:0,cpu:1,cpu:2,cpu:3]"
TWO = "strategy.devices=[cpu:0,cpu:1]"
THREE = "strategy.devices=[cpu:0,cpu:1,cpu:2]"


def worst_relative_difference(a_path, b_path):
    a, b = load_file(str(a_path)), load_file(str(b_path))
    assert a.keys() == b.keys()
    return max(np.linalg.norm(a[k] - b[k]) / max(np.linalg.norm(b[k]), 1e-12) for k in b)


def train(job, model_dir, *sets):
    args = ["train", job, "--model-dir", model_dir, "--no-eval", "--log-format", "plain"]
    for s in sets:
        args += ["--set", s]
    out = run_dtrain(*args)
    assert out.returncode == 0, out.stderr
    return out


def test_mirrored_checkpoint_resumes_under_towers_and_one_device(mlp_job, tmp_path):
    job, _ = mlp_job(max_steps=120, save_steps=50)
    train(job, tmp_path / "ref")  # uninterrupted one_device, 120 steps

    first = train(job, tmp_path / "mirrored", "strategy.type=mirrored", FOUR, "run.max_steps=100")
    assert "strategy mirrored on cpu:0, cpu:1, cpu:2, cpu:3; batch: global 32 = 4 replica(s) x 8" in first.stderr
    for name, sets in {"towers": ["strategy.type=towers", TWO], "one_device": []}.items():
        model_dir = tmp_path / f"resumed-{name}"
        shutil.copytree(tmp_path / "mirrored", model_dir)
        out = train(job, model_dir, *sets)
        assert "model.ckpt-100.safetensors at step 100" in out.stderr
        diff = worst_relative_difference(model_dir / "model.ckpt-120.safetensors",
                                         tmp_path / "ref" / "model.ckpt-120.safetensors")
        assert diff < 1e-5, (name, diff)


@pytest.mark.parametrize("strategy", ["towers", "mirrored"])
def test_evaluate_and_predict_match_one_device(strategy, mlp_job, tmp_path):
    job, model_dir = mlp_job(max_steps=40, save_steps=40)
    train(job, model_dir)
    x = np.random.default_rng(3).random((10, 28, 28, 1), dtype=np.float32)
    np.save(tmp_path / "x.npy", x)

    def evaluate_and_predict(*sets):
        args = []
        for s in sets:
            args += ["--set", s]
        ev = run_dtrain("evaluate", job, *args)
        assert ev.returncode == 0, ev.stderr
        out = tmp_path / f"p-{len(sets)}.npy"
        pr = run_dtrain("predict", job, "--input", tmp_path / "x.npy", "--output", out, "--set",
                        "data.predict={format: synthetic, batch_size: 10}", *args)
        assert pr.returncode == 0, pr.stderr
        return dict(l.split(": ") for l in ev.stdout.splitlines()), np.load(out)

    ref_metrics, ref_pred = evaluate_and_predict()
    metrics, pred = evaluate_and_predict(f"strategy.type={strategy}", THREE)
    for k, v in ref_metrics.items():
        assert float(metrics[k]) == pytest.approx(float(v), rel=1e-6), k
    np.testing.assert_allclose(pred, ref_pred, rtol=1e-5, atol=1e-7)


def test_batch_per_replica_and_too_small_global_batch(mlp_job, tmp_path):
    job, _ = mlp_job(max_steps=2, save_steps=2)
    original = job.read_text()
    job.write_text(original.replace("batch_size: 32,", "batch_size_per_replica: 8,"))
    out = train(job, tmp_path / "a", "strategy.type=towers", FOUR)
    job.write_text(original)
    assert "batch: global 32 = 4 replica(s) x 8" in out.stderr
    out = run_dtrain("train", job, "--model-dir", tmp_path / "b", "--set", "strategy.type=mirrored", "--set", FOUR,
                     "--set", "data.train.batch_size=3")
    assert out.returncode == 2
    assert "the global batch 3 is smaller than the 4 replicas of strategy mirrored" in out.stderr


def test_devices_listed_twice_is_a_config_error(mlp_job):
    job, _ = mlp_job()
    out = run_dtrain("train", job, "--set", "strategy.type=towers", "--set", "strategy.devices=[cpu:0,cpu:0]")
    assert out.returncode == 2
    assert out.stderr == ('dtrain: --set strategy.devices=[cpu:0,cpu:0]: strategy.devices[1]: "cpu:0" is listed '
                          'twice; expected each device once\n')


def test_gpu_devices_under_several_device_strategies_fail_loudly(mlp_job):
    job, _ = mlp_job()
    out = run_dtrain("train", job, "--set", "strategy.type=mirrored", "--set", "strategy.devices=[gpu:0,gpu:1]")
    assert out.returncode == 2
    # The place is where the devices were written: the --set.
    assert out.stderr == ("dtrain: --set strategy.devices=[gpu:0,gpu:1]: strategy.devices[0]: gpu:0 with strategy.type "
                          "mirrored: only one_device runs "
                          "on a GPU in this dtrain so far (several devices need NCCL); use one_device with devices: "
                          "[gpu:0], or cpu:N devices\n")
