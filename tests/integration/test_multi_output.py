"""Models of several outputs (model.outputs) through the real binary: an npz
with one labels array per output trains a classification head and a
regression head on a shared trunk; mirrored (cpu and debug devices), towers
and collective with two worker processes equal one_device; the summaries name
each output's loss and metrics as Keras does; evaluate and predict (one file
per output) work; and the errors of outputs, with their places."""
import numpy as np
import pytest
from safetensors.numpy import load_file
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from conftest import run_dtrain
from test_multi_input import evaluate, train

JOB = """
model:
  input: {{shape: [8]}}
  layers:
    - {{name: trunk, type: dense, units: 16, activation: relu}}
    - {{name: cls, type: dense, units: 4}}
    - {{name: reg, type: dense, units: 2, inputs: trunk}}
  outputs:
    cls: {{loss: sparse_softmax_cross_entropy, labels: classes, metrics: [accuracy]}}
    reg: {{loss: mean_squared_error, labels: targets, weight: 0.5, metrics: [mean_absolute_error]}}
data:
  train: {{format: npz, path: {train}, features_array: x, batch_size: 32, shuffle: 256, seed: 1}}
  eval: {{format: npz, path: {eval}, features_array: x, batch_size: 100}}
optimizer: {{type: adam, learning_rate: 0.02}}
run: {{max_steps: {steps}, save_checkpoints_steps: {steps}, save_summary_steps: 10, seed: 4, deterministic: true}}
"""


def examples(n, seed):
    """Classes 0..3 from the signs of two sums of the features; the targets
    two other linear functions of them."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, 8)).astype(np.float32)
    classes = 2 * (x[:, :4].sum(axis=1) > 0) + (x[:, 4:].sum(axis=1) > 0)
    targets = np.stack([x[:, 0] - x[:, 5], 0.5 * x[:, 2] + x[:, 7]], axis=1).astype(np.float32)
    return x, classes.astype(np.int64), targets


@pytest.fixture
def job(tmp_path):
    def make(steps=20):
        for name, (n, seed) in {"train": (1024, 1), "eval": (400, 2)}.items():
            x, classes, targets = examples(n, seed)
            np.savez(tmp_path / f"{name}.npz", x=x, classes=classes, targets=targets)
        path = tmp_path / "job.yaml"
        path.write_text(JOB.format(train=tmp_path / "train.npz", eval=tmp_path / "eval.npz", steps=steps))
        return path
    return make


def assert_same_checkpoints(a_dir, b_dir, step):
    a = load_file(str(a_dir / f"model.ckpt-{step}.safetensors"))
    b = load_file(str(b_dir / f"model.ckpt-{step}.safetensors"))
    assert a.keys() == b.keys()
    for k in a:
        diff = np.linalg.norm(a[k] - b[k]) / max(np.linalg.norm(a[k]), 1e-12)
        assert diff < 1e-5, (k, diff)


def test_validate_marks_the_outputs(job):
    out = run_dtrain("validate", "--graph", job())
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[2].split() == ["trunk", "dense", "[16]", "144", "input"]
    assert lines[4].split() == ["cls", "dense", "[4]", "68", "trunk/relu", "->", "output", "cls"]
    assert lines[5].split() == ["reg", "dense", "[2]", "34", "trunk/relu", "->", "output", "reg"]
    resolved = run_dtrain("validate", job())
    assert ("  outputs:\n    cls:\n      loss: sparse_softmax_cross_entropy\n      labels: classes\n      weight: 1.0\n"
            "      metrics: [accuracy]\n    reg:\n      loss: mean_squared_error\n      labels: targets\n"
            "      weight: 0.5\n      metrics: [mean_absolute_error]\noptimizer:\n") in resolved.stdout, resolved.stdout
    assert "\n  loss: " not in resolved.stdout


def test_both_heads_learn_and_summaries_name_each_output(job, tmp_path):
    path = job(steps=200)
    train(path, tmp_path / "run", evaluate_too=True)
    metrics = evaluate(path, tmp_path / "run")
    assert set(metrics) == {"loss", "loss/cls", "cls_accuracy", "loss/reg", "reg_mean_absolute_error"}, metrics
    assert metrics["cls_accuracy"] > 0.9, metrics
    assert metrics["loss/reg"] < 0.05, metrics
    # The total is the weighted sum of the outputs' losses.
    assert metrics["loss"] == pytest.approx(metrics["loss/cls"] + 0.5 * metrics["loss/reg"], rel=1e-5)
    for folder in (tmp_path / "run", tmp_path / "run" / "eval"):
        ea = EventAccumulator(str(folder), size_guidance={"scalars": 0})
        ea.Reload()
        tags = set(ea.Tags()["scalars"])
        assert {"loss", "loss/cls", "loss/reg", "cls_accuracy", "reg_mean_absolute_error"} <= tags, (folder, tags)
        last = {t: ea.Scalars(t)[-1].value for t in ("loss", "loss/cls", "loss/reg")}
        assert last["loss"] == pytest.approx(last["loss/cls"] + 0.5 * last["loss/reg"], rel=1e-5), folder
    first = EventAccumulator(str(tmp_path / "run"), size_guidance={"scalars": 0})
    first.Reload()
    assert first.Scalars("loss/reg")[-1].value < first.Scalars("loss/reg")[0].value


# debug devices keep their own memory: every labels tensor is copied to each replica's device.
@pytest.mark.parametrize("strategy,devices", [("mirrored", "[cpu:0,cpu:1]"), ("towers", "[cpu:0,cpu:1]"),
                                              ("mirrored", "[debug:0,debug:1]")])
def test_strategies_equal_one_device_and_agree_on_evaluate_and_predict(strategy, devices, job, tmp_path):
    path = job(steps=20)
    train(path, tmp_path / "one")
    sets = [f"strategy.type={strategy}", f"strategy.devices={devices}"]
    out = train(path, tmp_path / strategy, *sets)
    assert f"strategy {strategy} on {devices[1:-1].replace(',', ', ')};" in out.stderr
    assert_same_checkpoints(tmp_path / "one", tmp_path / strategy, 20)
    assert evaluate(path, tmp_path / "one") == pytest.approx(evaluate(path, tmp_path / "one", *sets), rel=1e-6)
    x, _, _ = examples(7, 9)
    np.save(tmp_path / "x.npy", x)
    preds = []
    for extra in ([], ["--set", sets[0], "--set", sets[1]]):
        prefix = tmp_path / f"p{len(extra)}"
        pr = run_dtrain("predict", path, "--model-dir", tmp_path / "one", "--input", tmp_path / "x.npy",
                        "--output", f"{prefix}.npy", *extra)
        assert pr.returncode == 0, pr.stderr
        assert f"wrote 7 predictions to {prefix}.cls.npy, {prefix}.reg.npy" in pr.stderr
        preds.append((np.load(f"{prefix}.cls.npy"), np.load(f"{prefix}.reg.npy")))
    assert preds[0][0].shape == (7, 4) and preds[0][1].shape == (7, 2)
    np.testing.assert_allclose(preds[0][0].sum(axis=1), 1.0, rtol=1e-5)  # softmax probabilities
    for a, b in zip(preds[0], preds[1]):
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("strategy,ps", [("collective", 0), ("parameter_server", 1)])
def test_two_worker_processes_equal_one_device(strategy, ps, job, tmp_path):
    """Every labels tensor is cut into the workers' rows of the shuffled global batch."""
    path = job(steps=20)
    train(path, tmp_path / "one")
    args = ["launch", "--workers", 2, "--ps", ps, path, "--model-dir", tmp_path / strategy, "--no-eval",
            "--log-format", "plain", "--set", f"strategy.type={strategy}", "--set", "data.train.batch_size=16"]
    if ps:
        args += ["--set", "strategy.mode=sync"]
    out = run_dtrain(*args, env={"OMP_WAIT_POLICY": "passive", "OMP_NUM_THREADS": "1", "TF_CONFIG": ""}, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    assert_same_checkpoints(tmp_path / "one", tmp_path / strategy, 20)


def test_errors_of_several_outputs(job, tmp_path):
    path = job()
    text = path.read_text()
    # A format that gives one labels tensor: refused when the job loads.
    path.write_text(text.replace("{format: npz, path: " + str(tmp_path / "train.npz"),
                                 "{format: synthetic, synthetic: {shape: [8]}"))
    out = run_dtrain("validate", path)
    assert out.returncode == 2
    assert out.stderr.endswith(
        "data.train: format synthetic gives each example one labels tensor, but the model has 2 outputs (cls, reg); "
        "use format npz (arrays named by each output's labels)\n"), out.stderr
    path.write_text(text)
    # An npz without an output's labels array: a data error naming the output.
    x, classes, targets = examples(64, 3)
    np.savez(tmp_path / "train.npz", x=x, classes=classes, target=targets)
    out = run_dtrain("train", path, "--model-dir", tmp_path / "m", "--no-eval")
    assert out.returncode == 3, out.stderr
    assert out.stderr == (f"dtrain: {path}:12:10: data.train: model.outputs.reg: labels \"targets\": "
                          f"{tmp_path / 'train.npz'}: targets.npy: no such member in the archive (members: x.npy, "
                          "classes.npy, target.npy) (an npz source gives each output the array named by its labels)\n"), \
        out.stderr
    # Labels that do not fit their output: both shapes named, at the output's key.
    np.savez(tmp_path / "train.npz", x=x, classes=classes, targets=targets[:, :1])
    out = run_dtrain("train", path, "--model-dir", tmp_path / "m", "--no-eval")
    assert out.returncode == 2, out.stderr
    assert out.stderr == (f"dtrain: {path}:10:5: model.outputs.reg: mean_squared_error needs targets of the model "
                          "output's shape; got output [2] and labels [1] (labels \"targets\")\n"), out.stderr
    np.savez(tmp_path / "train.npz", x=x, classes=np.stack([classes, classes], axis=1), targets=targets)
    out = run_dtrain("train", path, "--model-dir", tmp_path / "m", "--no-eval")
    assert out.returncode == 2, out.stderr
    assert out.stderr == (f"dtrain: {path}:9:5: model.outputs.cls: sparse_softmax_cross_entropy: labels [2] do not "
                          "fit model output [4]: class-id labels have the output's shape without its last (classes) "
                          "dimension ([]); labels [2] need a model output [2, classes] (labels \"classes\")\n"), \
        out.stderr
    # A class id out of range in an output's labels.
    np.savez(tmp_path / "train.npz", x=x, classes=classes + 4, targets=targets)
    out = run_dtrain("train", path, "--model-dir", tmp_path / "m", "--no-eval")
    assert out.returncode == 3, out.stderr
    assert out.stderr.endswith(f"dtrain: {path}:12:10: data.train: output cls (labels \"classes\"): label 5 at "
                               f"{tmp_path / 'train.npz'}: array \"classes\", row 54 is out of range for 4 classes "
                               "(class ids are 0..3)\n"), out.stderr
    # predict needs .npy or .csv for --output (one file per output beside it).
    out = run_dtrain("predict", path, "--model-dir", tmp_path / "m", "--input", tmp_path / "x.npy", "--output",
                     tmp_path / "p.npz")
    assert out.returncode == 2


def test_export_writes_one_onnx_output_per_model_output(job, tmp_path):
    """dtrain export of a two-output model: outputs predictions_cls (softmax)
    and predictions_reg (raw values), each equal to predict's file for it."""
    onnx = pytest.importorskip("onnx")
    ort = pytest.importorskip("onnxruntime")
    path = job(steps=20)
    train(path, tmp_path / "run")
    onnx_path = tmp_path / "model.onnx"
    out = run_dtrain("export", path, "--model-dir", tmp_path / "run", "--out", onnx_path)
    assert out.returncode == 0, out.stderr
    model = onnx.load(str(onnx_path))
    onnx.checker.check_model(model, full_check=True)
    assert [o.name for o in model.graph.output] == ["predictions_cls", "predictions_reg"]
    x, _, _ = examples(23, 11)
    np.save(tmp_path / "x.npy", x)
    pr = run_dtrain("predict", path, "--model-dir", tmp_path / "run", "--input", tmp_path / "x.npy",
                    "--output", tmp_path / "p.npy")
    assert pr.returncode == 0, pr.stderr
    session = ort.InferenceSession(str(onnx_path), providers=["CPUExecutionProvider"])
    cls, reg = session.run(["predictions_cls", "predictions_reg"], {"input": x})
    np.testing.assert_allclose(cls, np.load(tmp_path / "p.cls.npy"), rtol=0, atol=1e-5)
    np.testing.assert_allclose(reg, np.load(tmp_path / "p.reg.npy"), rtol=0, atol=1e-5)
    np.testing.assert_allclose(cls.sum(axis=1), 1.0, rtol=1e-5)
    assert np.ptp(reg, axis=0).max() > 1e-3
