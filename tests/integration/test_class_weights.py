"""Class weights and example weights with the real binary (issue 28, part 3).

On an imbalanced 3-class set (90/8/2%) model.class_weight: balanced logs
scikit-learn's compute_class_weight("balanced") values and raises both
minority classes' recall (measured on `dtrain predict`'s predictions with
scikit-learn), while the evaluation report still equals scikit-learn's on the
same predictions. data.*.weight (an npz array or a csv column) multiplies each
example's loss and gradient: weights of 2 with half the SGD learning rate give
the unweighted run's variables bit for bit, a csv column gives the npz array's
bits, and the weighted eval accuracy and loss equal NumPy's on the
predictions. Under run.micro_batch_rows every strategy (towers, mirrored,
collective, sync parameter_server) holds one_device's bits after 20 steps with
balanced class weights and data weights. Misuse is a located config error."""
import json
import math
import re

import numpy as np
import pytest
from safetensors.numpy import load_file
from sklearn.metrics import confusion_matrix, precision_recall_fscore_support
from sklearn.utils.class_weight import compute_class_weight

from conftest import run_dtrain
from jpeg_shards import _field, frame
from test_cluster import clean_env
from test_global_batch import MICRO

SHARES = [0.90, 0.08, 0.02]

JOB = """
model:
  input: {{shape: [6]}}
  layers:
    - {{type: dense, units: 16, activation: relu}}
    - {{type: dense, units: 3}}
  loss: sparse_softmax_cross_entropy
  metrics: [accuracy, recall]
optimizer: {{type: {optimizer}, learning_rate: {lr}}}
data:
  train: {{format: npz, path: {d}/train.npz, batch_size: 64, shuffle: 1024{train_extra}}}
  eval: {{format: npz, path: {d}/eval.npz, batch_size: 256{eval_extra}}}
run: {{max_steps: {steps}, save_checkpoints_steps: {steps}, log_step_count_steps: 100, seed: 5}}
"""


def make_data(d, n_train=3000, n_eval=1500, seed=0):
    """Gaussian classes in 6 dimensions, overlapping so that an unweighted
    model gives up much of the rare classes; weights uniform in [0.5, 1.5]."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(scale=1.0, size=(3, 6))

    def draw(n):
        y = rng.choice(3, size=n, p=SHARES)
        x = centres[y] + rng.normal(size=(n, 6))
        w = rng.uniform(0.5, 1.5, size=n)
        return x.astype(np.float32), y.astype(np.float32), w.astype(np.float32)

    x, y, w = draw(n_train)
    np.savez(d / "train.npz", images=x, labels=y, w=w, two=np.full(n_train, 2.0, np.float32))
    xe, ye, we = draw(n_eval)
    np.savez(d / "eval.npz", images=xe, labels=ye, w=we)
    np.save(d / "x_eval.npy", xe)
    return y.astype(np.int64), ye.astype(np.int64), we


def write_job(d, name, steps=400, optimizer="adam", lr=0.01, train_extra="", eval_extra="", extra=""):
    job = d / f"{name}.yaml"
    job.write_text(JOB.format(d=d, steps=steps, optimizer=optimizer, lr=lr, train_extra=train_extra,
                              eval_extra=eval_extra) + extra)
    return job


def train(job, model_dir, *args):
    r = run_dtrain("train", job, "--model-dir", model_dir, "--log-format", "plain", *args)
    assert r.returncode == 0, r.stderr[-3000:]
    return r


def predict(job, model_dir, d, name):
    out = d / f"{name}.npy"
    r = run_dtrain("predict", job, "--model-dir", model_dir, "--input", d / "x_eval.npy", "--output", out)
    assert r.returncode == 0, r.stderr
    return np.load(out)


def test_balanced_class_weights_raise_minority_recall_and_the_report_stays_exact(tmp_path):
    y_train, y_eval, _ = make_data(tmp_path)
    job = write_job(tmp_path, "job")
    steps = 400
    train(job, tmp_path / "plain")
    weighted = train(job, tmp_path / "balanced", "--set", "model.class_weight=balanced")

    # The weights logged are scikit-learn's, from every example of data.train.
    want = compute_class_weight("balanced", classes=np.unique(y_train), y=y_train)
    line = next(l for l in weighted.stderr.splitlines() if l.startswith("class_weight: balanced"))
    assert f"from {len(y_train)} examples of data.train" in line, line
    got = [float(v) for v in re.findall(r"class \d: ([0-9.e+-]+)", line)]
    assert got == pytest.approx(want.tolist(), rel=5e-4), (line, want)

    recalls = {}
    for name in ("plain", "balanced"):
        p = predict(job, tmp_path / name, tmp_path, name)
        pred = p.argmax(axis=1)
        recalls[name] = precision_recall_fscore_support(y_eval, pred, labels=[0, 1, 2], average=None,
                                                        zero_division=0)[1]
        # The evaluation report (unweighted, as evaluation is) equals scikit-learn's on the same predictions.
        report = json.loads((tmp_path / name / "eval" / f"metrics-{steps}.json").read_text())
        (r,) = report["report"]["outputs"]
        assert r["confusion_matrix"] == confusion_matrix(y_eval, pred, labels=[0, 1, 2]).tolist()
        assert [c["recall"] for c in r["per_class"]] == recalls[name].tolist()
    print(f"recall per class (0, 1, 2) on {len(y_eval)} eval rows, counts {np.bincount(y_eval).tolist()}: "
          f"unweighted {np.round(recalls['plain'], 4).tolist()}, balanced {np.round(recalls['balanced'], 4).tolist()}")
    for k in (1, 2):
        assert recalls["balanced"][k] > recalls["plain"][k] + 0.1, recalls
    # Evaluation is unweighted: the eval loss of the weighted run is the plain mean over examples.
    assert "eval at step 400:" in weighted.stderr


def test_example_weights_scale_the_gradient_exactly_and_weight_the_metrics(tmp_path):
    _, y_eval, w_eval = make_data(tmp_path)
    steps = 60
    # Weights of 2 with half the learning rate: plain SGD takes the same steps, bit for bit.
    plain = write_job(tmp_path, "plain", steps=steps, optimizer="sgd", lr=0.1)
    twice = write_job(tmp_path, "twice", steps=steps, optimizer="sgd", lr=0.05, train_extra=", weight: two")
    train(plain, tmp_path / "plain", "--no-eval")
    train(twice, tmp_path / "twice", "--no-eval")
    a = load_file(str(tmp_path / "plain" / f"model.ckpt-{steps}.safetensors"))
    b = load_file(str(tmp_path / "twice" / f"model.ckpt-{steps}.safetensors"))
    assert a.keys() == b.keys()
    for k in a:
        assert np.array_equal(a[k], b[k]), k

    # Uneven weights move the variables, and a csv column gives the npz array's bits.
    npz = write_job(tmp_path, "npz", steps=steps, train_extra=", weight: w", eval_extra=", weight: w")
    r = train(npz, tmp_path / "npz")
    data = np.load(tmp_path / "train.npz")
    header = "a,b,c,d,e,f,label,weight"
    rows = np.column_stack([data["images"], data["labels"], data["w"]])
    np.savetxt(tmp_path / "train.csv", rows, delimiter=",", header=header, comments="", fmt="%.9g")
    csv = write_job(tmp_path, "csv", steps=steps, eval_extra=", weight: w")
    csv.write_text(csv.read_text().replace(
        f"{{format: npz, path: {tmp_path}/train.npz, batch_size: 64, shuffle: 1024}}",
        f"{{format: csv, path: {tmp_path}/train.csv, label_column: label, weight: weight, batch_size: 64, "
        "shuffle: 1024}"))
    train(csv, tmp_path / "csv")
    unweighted = write_job(tmp_path, "unweighted", steps=steps)
    train(unweighted, tmp_path / "unweighted", "--no-eval")
    w_run = load_file(str(tmp_path / "npz" / f"model.ckpt-{steps}.safetensors"))
    c_run = load_file(str(tmp_path / "csv" / f"model.ckpt-{steps}.safetensors"))
    u_run = load_file(str(tmp_path / "unweighted" / f"model.ckpt-{steps}.safetensors"))
    for k in w_run:
        assert np.array_equal(w_run[k], c_run[k]), k
    assert any(not np.array_equal(w_run[k], u_run[k]) for k in w_run)

    # Weighted evaluation: accuracy = sum(w * correct) / sum(w); recall per
    # class weighted, macro over the classes present; loss = sum(w * l) / N.
    p = predict(npz, tmp_path / "npz", tmp_path, "npz").astype(np.float64)
    pred = p.argmax(axis=1)
    m = json.loads((tmp_path / "npz" / "eval" / f"metrics-{steps}.json").read_text())["metrics"]
    w = w_eval.astype(np.float64)
    assert m["accuracy"] == pytest.approx(np.sum(w * (pred == y_eval)) / np.sum(w), rel=1e-9)
    per_class = [np.sum(w[(y_eval == k) & (pred == k)]) / np.sum(w[y_eval == k]) for k in range(3)]
    assert m["recall"] == pytest.approx(np.mean(per_class), rel=1e-9)
    nll = -np.log(p[np.arange(len(y_eval)), y_eval])
    assert m["loss"] == pytest.approx(np.sum(w * nll) / len(y_eval), rel=1e-5)
    assert m["accuracy"] != pytest.approx(np.mean(pred == y_eval), rel=1e-9)  # the weights mattered


def float_example(x, label, w):
    """A serialized tf.Example {"x": float_list x, "label": float_list [label], "w": float_list [w]}."""
    def floats(values):
        return _field(2, _field(1, np.asarray(values, "<f4").tobytes()))  # Feature.float_list -> packed value
    entries = b"".join(_field(1, _field(1, name.encode()) + _field(2, floats(v)))
                       for name, v in (("x", x), ("label", [label]), ("w", [w])))
    return _field(1, entries)


def test_a_tfrecord_weight_feature_gives_the_npz_arrays_bits_whole_and_streamed(tmp_path):
    make_data(tmp_path)
    data = np.load(tmp_path / "train.npz")
    with open(tmp_path / "train.tfrecord", "wb") as f:
        for x, y, w in zip(data["images"], data["labels"], data["w"]):
            f.write(frame(float_example(x, y, w)))
    steps = 30
    npz = write_job(tmp_path, "npz", steps=steps, train_extra=", weight: w")
    train(npz, tmp_path / "npz", "--no-eval", "--set", "data.train.shuffle=0")
    want = load_file(str(tmp_path / "npz" / f"model.ckpt-{steps}.safetensors"))
    tfrecord = (f"{{format: tfrecord, files: [{tmp_path}/train.tfrecord], label_feature: label, weight: w, "
                "features: {x: {dtype: float, shape: [6]}, label: {dtype: float}, w: {dtype: float}}, "
                "batch_size: 64, shuffle: 1024}")
    job = write_job(tmp_path, "tfrecord", steps=steps)
    job.write_text(job.read_text().replace(f"{{format: npz, path: {tmp_path}/train.npz, batch_size: 64, shuffle: 1024}}",
                                           tfrecord))
    for stream in ("false", "true"):
        train(job, tmp_path / f"tf-{stream}", "--no-eval", "--set", "data.train.shuffle=0",
              "--set", f"data.train.stream={stream}")
        got = load_file(str(tmp_path / f"tf-{stream}" / f"model.ckpt-{steps}.safetensors"))
        for k in want:
            assert np.array_equal(got[k], want[k]), (stream, k)
    # A negative weight in a record: a data error naming the file, the record and the feature.
    with open(tmp_path / "train.tfrecord", "ab") as f:
        f.write(frame(float_example(np.zeros(6), 1.0, -2.0)))
    for stream in ("false", "true"):
        r = run_dtrain("train", job, "--model-dir", tmp_path / f"bad-{stream}", "--no-eval", "--set",
                       "data.train.shuffle=0", "--set", f"data.train.stream={stream}", "--set", "data.train.repeat=false",
                       "--set", "run.max_steps=1000")
        assert r.returncode == 3, r.stderr
        assert f'{tmp_path}/train.tfrecord: record 3000: feature "w": weight -2 must be finite and >= 0' in r.stderr, \
            r.stderr


def test_strategies_hold_one_devices_bits_with_class_and_example_weights(tmp_path):
    make_data(tmp_path)
    job = write_job(tmp_path, "job", steps=20, train_extra=", weight: w",
                    extra="")
    job.write_text(job.read_text().replace("  metrics: [accuracy, recall]\n",
                                           "  metrics: [accuracy, recall]\n  class_weight: balanced\n"))
    common = ["--no-eval", "--log-format", "plain", "--set", "run.micro_batch_rows=16"]
    env = clean_env(OMP_NUM_THREADS="1")
    ref = run_dtrain("train", job, "--model-dir", tmp_path / "one", *common, "--set", "strategy.type=one_device",
                     "--set", "data.train.batch_size=64", env=env)
    assert ref.returncode == 0, ref.stderr[-3000:]
    want = load_file(str(tmp_path / "one" / "model.ckpt-20.safetensors"))
    differ = {}
    for label, (n, how) in MICRO.items():
        if n != 2:
            continue
        model_dir = tmp_path / re.sub(r"[ +]", "_", label)
        cut = how.index("--set")
        batch = 64 if how[0] == "train" else 32
        out = run_dtrain(*how[:cut], job, *how[cut:], "--model-dir", model_dir, *common,
                         "--set", f"data.train.batch_size={batch}", env=env, timeout=600)
        assert out.returncode == 0, (label, out.stderr[-3000:])
        assert "class_weight: balanced from 3000 examples of data.train" in out.stderr, (label, out.stderr[-3000:])
        got = load_file(str(model_dir / "model.ckpt-20.safetensors"))
        moved = [k for k in got if not np.array_equal(got[k], want[k])]
        if moved:
            differ[label] = moved
    assert not differ, differ


@pytest.mark.parametrize("setting, expected", [
    ("model.loss=mean_squared_error",
     "model.class_weight: class weights need a classification loss, not mean_squared_error"),
    ("model.class_weight={1: 2, 3: 5}", "model.class_weight: class 3 is not a class of the output [3] (classes 0..2)"),
    ("model.class_weight={1: 2, cat: 5}", 'model.class_weight: key "cat" is not a class id'),
    ("model.class_weight={1: -2}", "model.class_weight"),
    ("data.train.format=synthetic",
     "data.train: weight: format synthetic cannot give example weights; use format csv (a column), tfrecord (a "
     "feature) or npz (an array)"),
])
def test_misused_weights_are_config_errors(tmp_path, setting, expected):
    make_data(tmp_path)
    job = write_job(tmp_path, "job", steps=5, train_extra=", weight: w")
    r = run_dtrain("train", job, "--model-dir", tmp_path / "m", "--set", "model.class_weight={1: 2.0}",
                   "--set", setting)
    assert r.returncode == 2, r.stderr
    assert expected in r.stderr, r.stderr
    assert "Traceback" not in r.stderr and "terminate" not in r.stderr


def test_a_bad_weight_is_a_located_data_error(tmp_path):
    (tmp_path / "t.csv").write_text("a,b,label,weight\n1,2,0,1\n3,4,1,-0.5\n")
    job = tmp_path / "job.yaml"
    job.write_text(f"""
model:
  input: {{shape: [2]}}
  layers: [{{type: dense, units: 2}}]
data:
  train: {{format: csv, path: {tmp_path}/t.csv, label_column: label, weight: weight, batch_size: 2}}
run: {{max_steps: 1}}
""")
    r = run_dtrain("train", job, "--model-dir", tmp_path / "m")
    assert r.returncode == 3, r.stderr
    assert f'{tmp_path}/t.csv:3:4: weight "-0.5" (column "weight") must be finite and >= 0' in r.stderr, r.stderr
    assert not (tmp_path / "m" / "checkpoint").exists()
