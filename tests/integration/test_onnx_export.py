"""dtrain export --format onnx through the real binary: every sample job
(sequential and graph models, ResNet and transformers included) and a model
holding every other layer type are trained for a few steps, exported, checked
by onnx.checker and run in onnxruntime on the arrays given to `dtrain
predict`, whose outputs they match within 1e-5; and export's errors."""
import json

import numpy as np
import onnx
import onnxruntime as ort
import pytest

from conftest import SOURCE_ROOT, run_dtrain

SAMPLES = sorted((SOURCE_ROOT / "sample_configs").glob("*.yaml"))
ENV = {"OMP_WAIT_POLICY": "passive"}

# Every layer type the sample jobs do not use (zero_padding2d, avg_pool2d with
# SAME padding, dilated conv, global max pool, every merge, attention over
# [query, value] with a causal mask, layer_norm without beta, reshape,
# sigmoid/tanh/gelu/softmax activations) on two inputs: an image and token ids.
ALL_LAYERS_JOB = """
model:
  inputs:
    image: {{shape: [9, 9, 3]}}
    ids: {{shape: [6], dtype: int32}}
  layers:
    - {{name: padded, type: zero_padding2d, padding: [1, 2], inputs: image}}
    - {{name: c1, type: conv2d, filters: 4, kernel: 3, strides: 2, padding: same, activation: relu}}
    - {{name: bn, type: batch_norm, momentum: 0.5}}
    - {{name: ap, type: avg_pool2d, size: 2, strides: 2, padding: same}}
    - {{name: gmax, type: global_max_pool2d}}
    - {{name: c2, type: conv2d, filters: 4, kernel: [3, 2], dilation: 2, activation: tanh, inputs: image}}
    - {{name: mp, type: max_pool2d, size: 2, padding: same}}
    - {{name: gavg, type: global_avg_pool2d}}
    - {{name: sub, type: subtract, inputs: [gmax, gavg]}}
    - {{name: mul, type: multiply, inputs: [gmax, gavg, sub]}}
    - {{name: avg, type: average, inputs: [gmax, mul]}}
    - {{name: mx, type: maximum, inputs: [avg, sub]}}
    - {{name: added, type: add, inputs: [mx, sub, gavg]}}
    - {{name: img_out, type: dense, units: 8, activation: gelu}}
    - {{name: embed, type: embedding, input_dim: 10, output_dim: 8, inputs: ids}}
    - {{name: pos, type: position_embedding, sequence_length: 8}}
    - {{name: q, type: dense, units: 8, activation: sigmoid}}
    - {{name: mha, type: multi_head_attention, num_heads: 2, key_dim: 3, value_dim: 5, output_shape: 6,
        use_causal_mask: true, inputs: [q, pos]}}
    - {{name: ln, type: layer_norm, center: false}}
    - {{name: leaky, type: leaky_relu, negative_slope: 0.2}}
    - {{name: rs, type: reshape, target_shape: [3, 12]}}
    - {{name: d3, type: dense, units: 4}}
    - {{name: fl, type: flatten}}
    - {{name: drop, type: dropout, rate: 0.3}}
    - {{name: both, type: concatenate, inputs: [img_out, drop]}}
    - {{name: sm, type: activation, activation: softmax}}
    - {{name: logits, type: dense, units: 3}}
  loss: sparse_softmax_cross_entropy
  metrics: [accuracy]
data:
  train: {{format: npz, path: {train}, batch_size: 16, shuffle: 64, seed: 1}}
optimizer: {{type: adam, learning_rate: 0.02}}
run: {{max_steps: 4, save_checkpoints_steps: 4, seed: 4}}
"""


def all_layers_job(tmp_path):
    rng = np.random.default_rng(0)
    n = 64
    np.savez(tmp_path / "train.npz", image=rng.standard_normal((n, 9, 9, 3)).astype(np.float32),
             ids=rng.integers(0, 10, size=(n, 6)), labels=rng.integers(0, 3, size=n))
    path = tmp_path / "all_layers.yaml"
    path.write_text(ALL_LAYERS_JOB.format(train=tmp_path / "train.npz"))
    return path


def train_briefly(job, model_dir):
    out = run_dtrain("train", job, "--model-dir", model_dir, "--set", "run.max_steps=3", "--set", "eval.steps=1",
                     "--no-eval", "--log-format", "plain", env=ENV)
    assert out.returncode == 0, out.stderr


def example_inputs(model, n, rng):
    """Arrays for every graph input: floats as the data holds them (pixels
    0..255 where the graph scales its input by a Mul first, else [0, 1)),
    token ids below the smallest vocabulary a Gather of the model reads."""
    scaled = {node.input[0] for node in model.graph.node if node.op_type == "Mul" and node.output[0].endswith("/scaled")}
    sizes = {i.name: i.dims[0] for i in model.graph.initializer if i.dims}
    vocab = min((sizes[node.input[0]] for node in model.graph.node if node.op_type == "Gather"), default=10)
    arrays = {}
    for i in model.graph.input:
        shape = [n] + [d.dim_value for d in i.type.tensor_type.shape.dim[1:]]
        if i.type.tensor_type.elem_type == onnx.TensorProto.INT32:
            arrays[i.name] = rng.integers(0, vocab, size=shape).astype(np.int32)
        else:
            arrays[i.name] = rng.random(shape, dtype=np.float32) * np.float32(255 if i.name in scaled else 1)
    return arrays


def export_and_compare(job, tmp_path):
    model_dir = tmp_path / "run"
    train_briefly(job, model_dir)
    onnx_path = tmp_path / "model.onnx"
    out = run_dtrain("export", job, "--model-dir", model_dir, "--format", "onnx", "--out", onnx_path, env=ENV)
    assert out.returncode == 0, out.stderr
    assert f"to {onnx_path} (ONNX opset 17)" in out.stderr

    model = onnx.load(str(onnx_path))
    onnx.checker.check_model(model, full_check=True)
    assert model.graph.input[0].type.tensor_type.shape.dim[0].dim_param == "N"  # a dynamic batch
    assert not any(node.op_type == "Dropout" for node in model.graph.node)

    arrays = example_inputs(model, 37, np.random.default_rng(3))
    if len(arrays) == 1:
        inputs = tmp_path / "x.npy"
        np.save(inputs, next(iter(arrays.values())))
    else:
        inputs = tmp_path / "x.npz"
        np.savez(inputs, **arrays)
    out = run_dtrain("predict", job, "--model-dir", model_dir, "--input", inputs, "--output", tmp_path / "p.npy",
                     env=ENV)
    assert out.returncode == 0, out.stderr
    expected = np.load(tmp_path / "p.npy")

    session = ort.InferenceSession(str(onnx_path), providers=["CPUExecutionProvider"])
    (got,) = session.run(["predictions"], arrays)
    assert got.shape == expected.shape
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-5)
    # Not a constant model: the examples get different predictions.
    assert np.ptp(expected, axis=0).max() > 1e-4
    return model


@pytest.mark.parametrize("job", SAMPLES, ids=[p.name for p in SAMPLES])
def test_sample_exports_match_predict(job, tmp_path):
    export_and_compare(job, tmp_path)


def test_every_layer_type_exports_and_matches_predict(tmp_path):
    model = export_and_compare(all_layers_job(tmp_path), tmp_path)
    ops = {node.op_type for node in model.graph.node}
    assert {"Conv", "MaxPool", "AveragePool", "ReduceMax", "ReduceMean", "Pad", "Gather", "LayerNormalization",
            "Softmax", "Erf", "Concat", "Sum", "Sub", "Mean", "Max", "Mul", "Reshape", "Transpose", "LeakyRelu"} <= ops
    assert [i.name for i in model.graph.input] == ["image", "ids"]
    assert model.graph.input[1].type.tensor_type.elem_type == onnx.TensorProto.INT32


HEAD_JOB = """
model:
  input: {{shape: [5]}}
  layers:
    - {{type: dense, units: 8, activation: tanh}}
    - {{type: dense, units: 3}}
  loss: {loss}
data:
  train: {{format: npz, path: {train}, batch_size: 16, scale: 0.5}}
  predict: {{format: npz, path: {train}, scale: 0.5}}
optimizer: {{type: sgd, learning_rate: 0.1}}
run: {{max_steps: 4, save_checkpoints_steps: 4, seed: 2}}
"""


@pytest.mark.parametrize("loss,op", [("sigmoid_cross_entropy", "Sigmoid"), ("mean_squared_error", "Identity")])
def test_prediction_heads_and_input_scale_match_predict(tmp_path, loss, op):
    """Sigmoid probabilities or raw values, as predict gives them, and
    data.predict.scale applied to the features inside the model."""
    rng = np.random.default_rng(1)
    np.savez(tmp_path / "train.npz", images=rng.standard_normal((64, 5)).astype(np.float32),
             labels=rng.integers(0, 2, size=(64, 3)).astype(np.float32))
    job = tmp_path / "job.yaml"
    job.write_text(HEAD_JOB.format(loss=loss, train=tmp_path / "train.npz"))
    model = export_and_compare(job, tmp_path)
    assert model.graph.node[-1].op_type == op
    assert model.graph.node[0].op_type == "Mul" and model.graph.node[0].input[0] == "input"


RAW_JOB = """
model:
  input: {{shape: [6, 6, 3]}}
  layers:
    - {{type: conv2d, filters: 4, kernel: 3, activation: relu}}
    - {{type: flatten}}
    - {{type: dense, units: 3}}
  loss: sparse_softmax_cross_entropy
  metrics: [accuracy]
data:
  train: {{format: npz, path: {train}, batch_size: 16, scale: 0.00392156862745098,
          map: [{{random_flip: horizontal}}, {{normalize: {{mean: [0.4, 0.5, 0.6], std: [0.2, 0.25, 0.3]}}}}]}}
  eval: {{format: npz, path: {train}, batch_size: 32, scale: 0.00392156862745098,
         map: [{{normalize: {{mean: [0.4, 0.5, 0.6], std: [0.2, 0.25, 0.3]}}}}]}}
optimizer: {{type: sgd, learning_rate: 0.1}}
run: {{max_steps: 6, save_checkpoints_steps: 6, seed: 4}}
"""


@pytest.mark.parametrize("eval_section", [True, False], ids=["eval", "train-only"])
def test_raw_pixels_get_the_evaluations_scale_and_normalize_in_predict_and_in_the_graph(tmp_path, eval_section):
    """Raw 0..255 pixels in: predict applies data.eval's scale and normalize
    (or data.train's without its random_flip), the exported graph holds the
    same, and onnxruntime on the raw pixels equals predict; the evaluation
    accuracy equals predict's on the same rows."""
    rng = np.random.default_rng(6)
    pixels = rng.integers(0, 256, size=(96, 6, 6, 3)).astype(np.float32)
    labels = (pixels[:, :, :, 0].mean(axis=(1, 2)) > 127.5).astype(np.float32) + (pixels[:, 0, 0, 1] > 200)
    np.savez(tmp_path / "train.npz", images=pixels, labels=labels.astype(np.float32))
    text = RAW_JOB.format(train=tmp_path / "train.npz")
    if not eval_section:
        text = "\n".join(line for line in text.splitlines() if not line.startswith("  eval:")
                         and not line.startswith("         map:"))
    job = tmp_path / "job.yaml"
    job.write_text(text)
    train_briefly(job, tmp_path / "run")
    np.save(tmp_path / "x.npy", pixels)
    out = run_dtrain("predict", job, "--model-dir", tmp_path / "run", "--input", tmp_path / "x.npy",
                     "--output", tmp_path / "p.npy", env=ENV)
    assert out.returncode == 0, out.stderr
    role = "data.eval" if eval_section else "data.train"
    assert f"predict: applies {role}'s preprocessing: scale 0.00392157, map normalize" in out.stderr, out.stderr
    if not eval_section:
        assert "left out data.train's random operations random_flip (augmentation is for training)" in out.stderr
    expected = np.load(tmp_path / "p.npy")
    onnx_path = tmp_path / "model.onnx"
    out = run_dtrain("export", job, "--model-dir", tmp_path / "run", "--format", "onnx", "--out", onnx_path, env=ENV)
    assert out.returncode == 0, out.stderr
    model = onnx.load(str(onnx_path))
    assert [n.op_type for n in model.graph.node[:3]] == ["Mul", "Sub", "Div"]
    session = ort.InferenceSession(str(onnx_path), providers=["CPUExecutionProvider"])
    (got,) = session.run(["predictions"], {"input": pixels})
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-5)
    beside = json.loads((tmp_path / "model.preprocessing.json").read_text())
    assert beside["input"]["in_graph"] is True and beside["input"]["normalize"]["std"] == pytest.approx([0.2, 0.25, 0.3])
    if eval_section:
        out = run_dtrain("evaluate", job, "--model-dir", tmp_path / "run", env=ENV)
        assert out.returncode == 0, out.stderr
        acc = float(next(l for l in out.stdout.splitlines() if l.startswith("accuracy:")).split()[1])
        assert acc == pytest.approx((expected.argmax(axis=1) == labels).mean(), abs=1e-6)


def test_export_errors(tmp_path):
    job = all_layers_job(tmp_path)
    out = run_dtrain("export", job, "--model-dir", tmp_path / "empty", "--out", tmp_path / "m.onnx")
    assert out.returncode == 2
    assert out.stderr.strip().endswith(
        f"no checkpoint in model_dir {tmp_path / 'empty'}: train first, or pass --checkpoint PATH")
    out = run_dtrain("export", job, "--format", "tflite", "--out", tmp_path / "m.onnx")
    assert out.returncode == 2
    assert out.stderr.strip().endswith("--format tflite: expected onnx")
    assert not (tmp_path / "m.onnx").exists()


def exported_steps(model_dir):
    export_dir = model_dir / "export"
    return sorted(int(p.name) for p in export_dir.iterdir() if p.is_dir()) if export_dir.exists() else []


def test_train_exports_after_evaluations_keeping_the_newest(mlp_job, tmp_path):
    job, model_dir = mlp_job(max_steps=80, save_steps=20)
    job.write_text(job.read_text() + "export: {keep: 2}\n")
    out = run_dtrain("train", job, "--log-format", "plain", env=ENV)
    assert out.returncode == 0, out.stderr
    # Evaluations at 20, 40, 60, 80 (throttle_secs 0); keep: 2 leaves the last two.
    assert exported_steps(model_dir) == [60, 80]
    assert f"exported step 80 to {model_dir / 'export' / '80' / 'model.onnx'}" in out.stderr
    model = onnx.load(str(model_dir / "export" / "80" / "model.onnx"))
    onnx.checker.check_model(model, full_check=True)
    assert model.model_version == 80
    # The export of step 80 is what dtrain export writes from that checkpoint.
    out = run_dtrain("export", job, "--checkpoint", model_dir / "model.ckpt-80.safetensors", "--out",
                     tmp_path / "same.onnx", env=ENV)
    assert out.returncode == 0, out.stderr
    again = onnx.load(str(tmp_path / "same.onnx"))
    assert [t.raw_data for t in again.graph.initializer] == [t.raw_data for t in model.graph.initializer]


def test_best_exporter_exports_only_improvements(mlp_job):
    job, model_dir = mlp_job(max_steps=100, save_steps=10, keep=20)
    job.write_text(job.read_text() + "export: {best_by: accuracy, keep: 20}\n")
    out = run_dtrain("train", job, "--log-format", "plain", env=ENV)
    assert out.returncode == 0, out.stderr
    # Exactly the evaluations whose accuracy beat every earlier export's.
    accuracy = {step: json.loads((model_dir / "eval" / f"metrics-{step}.json").read_text())["metrics"]["accuracy"]
                for step in range(10, 101, 10)}
    best, expected = None, []
    for step, value in sorted(accuracy.items()):
        if best is None or value > best:
            best = value
            expected.append(step)
    assert exported_steps(model_dir) == expected
    assert len(expected) >= 2
    saved = json.loads((model_dir / "export" / "best.json").read_text())
    assert saved["metric"] == "accuracy" and saved["step"] == expected[-1] and saved["value"] == best


def test_final_export_without_evaluation(mlp_job):
    job, model_dir = mlp_job(max_steps=30, save_steps=10)
    job.write_text(job.read_text() + "export: {every: final}\n")
    out = run_dtrain("train", job, "--no-eval", "--log-format", "plain", env=ENV)
    assert out.returncode == 0, out.stderr
    assert exported_steps(model_dir) == [30]


def test_every_eval_without_evaluation_says_nothing_is_exported(mlp_job):
    job, model_dir = mlp_job(max_steps=20, save_steps=10)
    job.write_text(job.read_text() + "export: {every: eval}\n")
    out = run_dtrain("train", job, "--no-eval", "--log-format", "plain", env=ENV)
    assert out.returncode == 0, out.stderr
    assert ("export: every: eval exports after evaluations, and this run does not evaluate (--no-eval): nothing is "
            "exported; every: final exports after the last step") in out.stderr
    assert exported_steps(model_dir) == []


def test_in_a_cluster_the_evaluator_exports_after_its_evaluations(mlp_job):
    """A 2-worker collective run with an evaluator task: every: eval is the
    evaluator's (Estimator's exporters ran there), so each checkpoint it
    evaluates is exported, and keep leaves the newest two."""
    from test_cluster import clean_env
    job, model_dir = mlp_job(max_steps=60, save_steps=20, keep=10)
    job.write_text(job.read_text() + "export: {keep: 2}\n")
    out = run_dtrain("launch", "--workers", 2, "--evaluator", job, "--log-format", "plain",
                     "--set", "strategy.type=collective", env={**clean_env(), **ENV}, timeout=600)
    assert out.returncode == 0, out.stderr[-4000:]
    assert "[worker 0] export: every: eval: the evaluator task exports after its evaluations" in out.stderr
    assert f"[evaluator 0] exported step 60 to {model_dir / 'export' / '60' / 'model.onnx'}" in out.stderr
    assert exported_steps(model_dir) == [40, 60]
    onnx.checker.check_model(onnx.load(str(model_dir / "export" / "60" / "model.onnx")), full_check=True)


@pytest.mark.parametrize("section,error", [
    ("export: {best_by: acuracy}", "job.yaml:{line}:19: export.best_by: \"acuracy\" is not a metric of the evaluation; "
                                   "expected one of loss, accuracy, mean_loss (did you mean \"accuracy\"?)"),
    ("export: {every: eval}", "job.yaml:{line}:17: export.every: eval exports after each evaluation, but the job has no "
                              "data.eval; add data.eval, or export once at the end with every: final"),
])
def test_export_section_errors(mlp_job, section, error):
    job, _ = mlp_job()
    text = job.read_text()
    if "every: eval" in section:
        text = "\n".join(line for line in text.splitlines() if not line.startswith("  eval:")
                         and not line.startswith("          scale"))
    text = text.rstrip("\n") + "\n" + section + "\n"
    job.write_text(text)
    line = len(text.splitlines())
    out = run_dtrain("validate", job)
    assert out.returncode == 2
    assert out.stderr == f"dtrain: {job.parent}/" + error.format(line=line) + "\n"
