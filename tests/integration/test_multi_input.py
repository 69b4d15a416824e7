"""Models of several inputs (model.inputs) through the real binary: an npz of
one array per input trains a model that needs both inputs; mirrored and
towers equal one_device; evaluate and predict (an .npz per input) agree; a
tfrecord source's features named like the inputs give the same run as the
same values in an npz; and the errors of several inputs."""
import json

import numpy as np
import pytest
from safetensors.numpy import load_file

from conftest import SOURCE_ROOT, run_dtrain

TFRECORD = SOURCE_ROOT / "tests/data/tfrecord"

JOB = """
model:
  inputs:
    ids: {{shape: [6], dtype: int32}}
    dense: {{shape: [4]}}
  layers:
    - {{name: embed, type: embedding, input_dim: 10, output_dim: 8, inputs: ids}}
    - {{name: pooled, type: global_avg_pool1d}}
    - {{name: hidden, type: dense, units: 16, activation: relu, inputs: dense}}
    - {{name: both, type: concatenate, inputs: [pooled, hidden]}}
    - {{name: logits, type: dense, units: 4}}
  loss: sparse_softmax_cross_entropy
  metrics: [accuracy]
data:
  train: {{format: npz, path: {train}, batch_size: 32, shuffle: 256, seed: 1}}
  eval: {{format: npz, path: {eval}, batch_size: 100}}
optimizer: {{type: adam, learning_rate: 0.02}}
run: {{max_steps: {steps}, save_checkpoints_steps: {steps}, seed: 4, deterministic: true}}
"""


def examples(n, seed):
    """Labels 0..3: bit 1 from the ids (is id 7 among them), bit 0 from the
    dense features (sign of their sum): a model reading one input alone
    cannot pass 50% (about 75% with the majority guess of the other bit)."""
    rng = np.random.default_rng(seed)
    ids = rng.integers(0, 10, size=(n, 6))
    dense = rng.standard_normal((n, 4)).astype(np.float32)
    labels = 2 * (ids == 7).any(axis=1) + (dense.sum(axis=1) > 0)
    return ids, dense, labels.astype(np.int64)


@pytest.fixture
def job(tmp_path):
    def make(steps=40, **data):
        for name, (n, seed) in {"train": (1024, 1), "eval": (400, 2)}.items():
            ids, dense, labels = examples(n, seed)
            np.savez(tmp_path / f"{name}.npz", ids=ids, dense=dense, labels=labels)
        path = tmp_path / "job.yaml"
        path.write_text(JOB.format(train=tmp_path / "train.npz", eval=tmp_path / "eval.npz", steps=steps))
        return path
    return make


def train(job, model_dir, *sets, evaluate_too=False):
    args = ["train", job, "--model-dir", model_dir, "--log-format", "plain"] + ([] if evaluate_too else ["--no-eval"])
    for s in sets:
        args += ["--set", s]
    out = run_dtrain(*args, env={"OMP_WAIT_POLICY": "passive"})
    assert out.returncode == 0, out.stderr
    return out


def evaluate(job, model_dir, *sets):
    args = ["evaluate", job, "--model-dir", model_dir]
    for s in sets:
        args += ["--set", s]
    out = run_dtrain(*args, env={"OMP_WAIT_POLICY": "passive"})
    assert out.returncode == 0, out.stderr
    return {k: float(v) for k, v in (l.split(": ") for l in out.stdout.splitlines())}


def test_validate_prints_both_inputs(job):
    out = run_dtrain("validate", "--graph", job())
    assert out.returncode == 0, out.stderr
    rows = [l.split() for l in out.stdout.splitlines()]
    assert rows[1] == ["ids", "input", "(int32)", "[6]", "0"]
    assert rows[2] == ["dense", "input", "[4]", "0"]


def test_a_model_of_two_inputs_learns_what_needs_both(job, tmp_path):
    path = job(steps=300)
    train(path, tmp_path / "run")
    metrics = evaluate(path, tmp_path / "run")
    assert metrics["accuracy"] > 0.9, metrics


# debug devices keep their own memory: every input is copied to each replica's device.
@pytest.mark.parametrize("strategy,devices", [("mirrored", "[cpu:0,cpu:1]"), ("towers", "[cpu:0,cpu:1]"),
                                              ("mirrored", "[debug:0,debug:1]")])
def test_strategies_equal_one_device_and_agree_on_evaluate_and_predict(strategy, devices, job, tmp_path):
    path = job(steps=20)
    train(path, tmp_path / "one")
    out = train(path, tmp_path / strategy, f"strategy.type={strategy}", f"strategy.devices={devices}")
    assert f"strategy {strategy} on {devices[1:-1].replace(',', ', ')};" in out.stderr
    a = load_file(str(tmp_path / "one" / "model.ckpt-20.safetensors"))
    b = load_file(str(tmp_path / strategy / "model.ckpt-20.safetensors"))
    assert a.keys() == b.keys()
    for k in a:
        diff = np.linalg.norm(a[k] - b[k]) / max(np.linalg.norm(a[k]), 1e-12)
        assert diff < 1e-5, (k, diff)
    assert evaluate(path, tmp_path / "one") == pytest.approx(
        evaluate(path, tmp_path / "one", f"strategy.type={strategy}", f"strategy.devices={devices}"), rel=1e-6)
    ids, dense, _ = examples(7, 9)
    np.savez(tmp_path / "x.npz", ids=ids, dense=dense)
    preds = []
    for sets in ([], ["--set", f"strategy.type={strategy}", "--set", f"strategy.devices={devices}"]):
        out = tmp_path / f"p{len(sets)}.npy"
        pr = run_dtrain("predict", path, "--model-dir", tmp_path / "one", "--input", tmp_path / "x.npz",
                        "--output", out, *sets)
        assert pr.returncode == 0, pr.stderr
        preds.append(np.load(out))
    assert preds[0].shape == (7, 4)
    np.testing.assert_allclose(preds[1], preds[0], rtol=1e-5, atol=1e-7)
    # The ids matter: another id in one example changes only its prediction.
    ids[3, 0] = 7 if ids[3, 0] != 7 else 0
    np.savez(tmp_path / "y.npz", ids=ids, dense=dense)
    pr = run_dtrain("predict", path, "--model-dir", tmp_path / "one", "--input", tmp_path / "y.npz", "--output",
                    tmp_path / "q.npy")
    assert pr.returncode == 0, pr.stderr
    changed = np.abs(np.load(tmp_path / "q.npy") - preds[0]).max(axis=1) > 0
    assert changed.tolist() == [False, False, False, True, False, False, False]


TFRECORD_JOB = """
model:
  inputs:
    image: {{shape: [2, 3, 1]}}
    vals: {{shape: [3]}}
  layers:
    - {{type: flatten, inputs: image}}
    - {{name: both, type: concatenate, inputs: [flatten, vals]}}
    - {{name: logits, type: dense, units: 10}}
  loss: sparse_softmax_cross_entropy
data:
  train: {data}
optimizer: {{type: sgd, learning_rate: 0.01}}
run: {{max_steps: 6, save_checkpoints_steps: 6, seed: 4}}
"""


@pytest.mark.parametrize("strategy,ps", [("collective", 0), ("parameter_server", 1)])
def test_two_worker_processes_equal_one_device_with_both_inputs(strategy, ps, job, tmp_path):
    """Every input is cut into the workers' rows of the shuffled global batch."""
    path = job(steps=20)
    train(path, tmp_path / "one")
    args = ["launch", "--workers", 2, "--ps", ps, path, "--model-dir", tmp_path / strategy, "--no-eval",
            "--log-format", "plain", "--set", f"strategy.type={strategy}", "--set", "data.train.batch_size=16"]
    if ps:
        args += ["--set", "strategy.mode=sync"]
    out = run_dtrain(*args, env={"OMP_WAIT_POLICY": "passive", "OMP_NUM_THREADS": "1", "TF_CONFIG": ""}, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    a = load_file(str(tmp_path / "one" / "model.ckpt-20.safetensors"))
    b = load_file(str(tmp_path / strategy / "model.ckpt-20.safetensors"))
    assert a.keys() == b.keys()
    for k in a:
        diff = np.linalg.norm(a[k] - b[k]) / max(np.linalg.norm(a[k]), 1e-12)
        assert diff < 1e-5, (k, diff)


def test_tfrecord_features_named_like_the_inputs_equal_the_same_values_in_an_npz(tmp_path):
    tfrecord = ("{format: tfrecord, files: [" + str(TFRECORD / "plain.tfrecord") + "], label_feature: label, "
                "batch_size: 2, scale: 0.01, features: {vals: {dtype: float, shape: [3]}, "
                "image: {dtype: bytes, decode: raw_uint8, shape: [2, 3, 1]}, label: {dtype: int64}}}")
    rows = json.loads((TFRECORD / "expected.json").read_text())["files"]["plain.tfrecord"]
    image = np.array([r["features"][:6] for r in rows], np.float32).reshape(5, 2, 3, 1)
    vals = np.array([r["features"][6:9] for r in rows], np.float32)
    np.savez(tmp_path / "same.npz", image=image, vals=vals, labels=np.array([r["label"] for r in rows]))
    npz = "{format: npz, path: " + str(tmp_path / "same.npz") + ", batch_size: 2, scale: 0.01}"
    for name, data in {"tfrecord": tfrecord, "npz": npz}.items():
        (tmp_path / f"{name}.yaml").write_text(TFRECORD_JOB.format(data=data))
        train(tmp_path / f"{name}.yaml", tmp_path / name)
    a = load_file(str(tmp_path / "tfrecord" / "model.ckpt-6.safetensors"))
    b = load_file(str(tmp_path / "npz" / "model.ckpt-6.safetensors"))
    for k in a:
        np.testing.assert_array_equal(a[k], b[k], err_msg=k)
    # The features the model reads must be there, and no others.
    (tmp_path / "missing.yaml").write_text(TFRECORD_JOB.format(data=tfrecord.replace("vals:", "valz:")))
    out = run_dtrain("validate", tmp_path / "missing.yaml")
    assert out.returncode == 2
    assert 'data.train: features: no feature "vals" for model input "vals"; a tfrecord source gives each model ' \
           'input the tf.Example feature of its name (the model reads image, vals)' in out.stderr, out.stderr


def test_errors_of_several_inputs(job, tmp_path):
    path = job()
    text = path.read_text()
    # A format that gives one features tensor: refused when the job loads.
    path.write_text(text.replace("{format: npz, path: " + str(tmp_path / "train.npz"),
                                 "{format: synthetic, synthetic: {shape: [6]}"))
    out = run_dtrain("validate", path)
    assert out.returncode == 2
    assert out.stderr.endswith(
        "data.train: format synthetic gives each example one features tensor, but the model has 2 inputs (ids, dense); "
        "use format csv (columns with input: naming it) or tfrecord (features named like the inputs) or npz (arrays named like the inputs)\n"), out.stderr
    # An npz without the array of an input: a data error naming the input.
    ids, dense, labels = examples(64, 3)
    np.savez(tmp_path / "train.npz", ids=ids, dens=dense, labels=labels)
    path.write_text(text)
    out = run_dtrain("train", path, "--model-dir", tmp_path / "m", "--no-eval")
    assert out.returncode == 3, out.stderr
    assert 'data.train: model input "dense": ' in out.stderr and "dense.npy: no such member" in out.stderr
    # An array whose examples have another shape than the input's.
    np.savez(tmp_path / "train.npz", ids=ids, dense=dense[:, :3], labels=labels)
    out = run_dtrain("train", path, "--model-dir", tmp_path / "m", "--no-eval")
    assert out.returncode == 2, out.stderr
    assert out.stderr.endswith("data.train: examples' \"dense\" have shape [3] but model.inputs.dense.shape is [4]\n")
    # Ids that are not whole numbers in the int32 input.
    np.savez(tmp_path / "train.npz", ids=ids + 0.5, dense=dense, labels=labels)
    out = run_dtrain("train", path, "--model-dir", tmp_path / "m", "--no-eval")
    assert out.returncode == 3, out.stderr
    assert "is not a token id" in out.stderr
    # predict reads an .npz of one array per input.
    out = run_dtrain("predict", path, "--model-dir", tmp_path / "m", "--input", tmp_path / "x.npy", "--output",
                     tmp_path / "p.npy")
    assert out.returncode == 2
    assert "expected a .npz file with one array per model input (ids, dense)" in out.stderr
