"""The evaluation report with the real binary (issue 28, part 2): on an
imbalanced 3-class set (about 90/8/2%) and a binary set, the per-class
precision, recall, F1 and support, the averages, the confusion matrix and ROC
AUC in eval/metrics-<step>.json equal scikit-learn's on `dtrain predict`'s
predictions of the same rows; `dtrain evaluate` logs them as a table after
its eval line (one JSON event with --log-format json), its stdout unchanged;
TensorBoard's EventAccumulator loads the confusion matrix image from the eval
summaries."""
import io
import json

import numpy as np
import pytest
from PIL import Image
from sklearn.metrics import (classification_report, confusion_matrix, precision_recall_fscore_support,
                             roc_auc_score)
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from conftest import run_dtrain

JOB = """
model:
  input: {{shape: [6]}}
  layers:
    - {{type: dense, units: 16, activation: relu}}
    - {{type: dense, units: {classes}}}
  loss: sparse_softmax_cross_entropy
  metrics: [accuracy, precision, recall]
optimizer: {{type: adam, learning_rate: 0.01}}
strategy: {{type: mirrored, devices: [cpu:0, cpu:1]}}
data:
  train: {{format: npy, images: {d}/x.npy, labels: {d}/y.npy, batch_size: 64, shuffle: 1024}}
  eval: {{format: npy, images: {d}/x_eval.npy, labels: {d}/y_eval.npy, batch_size: 256}}
run: {{model_dir: {d}/run, max_steps: {steps}, save_checkpoints_steps: {steps}, log_step_count_steps: 100, seed: 5}}
"""


def make_data(d, shares, n_train=2000, n_eval=700, seed=0):
    """Gaussian classes in 6 dimensions, overlapping enough that the rare
    classes are partly confused with the common one."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(scale=1.3, size=(len(shares), 6))

    def draw(n):
        y = rng.choice(len(shares), size=n, p=shares)
        x = centres[y] + rng.normal(size=(n, 6))
        return x.astype(np.float32), y.astype(np.int64)

    x, y = draw(n_train)
    x_eval, y_eval = draw(n_eval)
    for name, a in (("x", x), ("y", y), ("x_eval", x_eval), ("y_eval", y_eval)):
        np.save(d / f"{name}.npy", a)
    return y_eval


def train_evaluate_predict(tmp_path, shares, steps):
    y_eval = make_data(tmp_path, shares)
    job = tmp_path / "job.yaml"
    job.write_text(JOB.format(classes=len(shares), d=tmp_path, steps=steps))
    r = run_dtrain("train", job, "--no-eval")
    assert r.returncode == 0, r.stderr
    ev = run_dtrain("evaluate", job)
    assert ev.returncode == 0, ev.stderr
    pr = run_dtrain("predict", job, "--input", tmp_path / "x_eval.npy", "--output", tmp_path / "p.npy")
    assert pr.returncode == 0, pr.stderr
    report = json.loads((tmp_path / "run" / "eval" / f"metrics-{steps}.json").read_text())
    return job, y_eval, np.load(tmp_path / "p.npy"), report, ev.stdout, ev.stderr


def test_three_class_report_equals_scikit_learn(tmp_path):
    job, y, p, saved, stdout, stderr = train_evaluate_predict(tmp_path, [0.90, 0.08, 0.02], steps=150)
    counts = np.bincount(y, minlength=3)
    assert counts[2] >= 5 and counts[1] >= 30  # about 90/8/2%
    pred = p.argmax(axis=1)
    labels = [0, 1, 2]
    # The existing keys are unchanged beside the report.
    assert set(saved) == {"global_step", "examples", "checkpoint", "metrics", "report"}
    assert set(saved["metrics"]) == {"loss", "accuracy", "precision", "recall"}
    assert saved["examples"] == len(y)
    (r,) = saved["report"]["outputs"]
    assert (r["output"], r["loss"], r["kind"]) == ("", "sparse_softmax_cross_entropy", "classification")
    assert r["num_classes"] == 3 and r["decisions"] == len(y)
    assert r["classes"] == ["0", "1", "2"]
    cm = confusion_matrix(y, pred, labels=labels)
    assert r["confusion_matrix"] == cm.tolist()
    # The model must get some but not all of the rare classes for the test to mean something.
    assert 0 < cm[1, 1] < counts[1] or 0 < cm[2, 2] < counts[2], cm
    prec, rec, f1, sup = precision_recall_fscore_support(y, pred, labels=labels, average=None, zero_division=0)
    assert [c["class"] for c in r["per_class"]] == ["0", "1", "2"]
    assert [c["precision"] for c in r["per_class"]] == prec.tolist()
    assert [c["recall"] for c in r["per_class"]] == rec.tolist()
    assert [c["f1"] for c in r["per_class"]] == f1.tolist()
    assert [c["support"] for c in r["per_class"]] == sup.tolist()
    for average in ("macro", "micro", "weighted"):
        want = precision_recall_fscore_support(y, pred, labels=labels, average=average, zero_division=0)[:3]
        assert (r[f"precision_{average}"], r[f"recall_{average}"], r[f"f1_{average}"]) == want, average
    text_report = classification_report(y, pred, labels=labels, output_dict=True, zero_division=0)
    assert r["accuracy"] == text_report["accuracy"]
    assert r["f1_weighted"] == text_report["weighted avg"]["f1-score"]
    assert "top_5_accuracy" not in r and "roc_auc" not in r  # 3 classes: neither
    # precision/recall, the existing metrics: macro averages over the classes
    # predicted (precision) or present (recall) only, as documented.
    m = saved["metrics"]
    assert m["precision"] == pytest.approx(np.mean([prec[k] for k in labels if (pred == k).any()]), rel=1e-12)
    assert m["recall"] == pytest.approx(np.mean([rec[k] for k in labels if (y == k).any()]), rel=1e-12)
    assert m["accuracy"] == pytest.approx(r["accuracy"], rel=1e-12)

    # dtrain evaluate: stdout keeps its "name: value" lines; the table follows
    # the eval line on the log (stderr).
    lines = stdout.splitlines()
    assert [l.split(":")[0] for l in lines] == ["loss", "accuracy", "precision", "recall"]
    log = stderr.splitlines()
    at = next(i for i, l in enumerate(log) if l.startswith("eval at step 150:"))
    w = len("weighted avg")
    row = lambda name, s: f"{name:<{w}}  {s[0]:>9.4f}  {s[1]:>6.4f}  {s[2]:>6.4f}  {s[3]:>7}"
    want = [f"{'class':<{w}}  precision  recall      f1  support"]
    want += [row(str(k), (prec[k], rec[k], f1[k], sup[k])) for k in labels]
    for average in ("macro", "micro", "weighted"):
        want.append(row(f"{average} avg", (r[f"precision_{average}"], r[f"recall_{average}"], r[f"f1_{average}"],
                                           len(y))))
    want.append(f"{'accuracy':<{w}}  {'':>9}  {'':>6}  {r['accuracy']:>6.4f}  {len(y):>7}")
    want.append("confusion matrix (rows: true class, columns: predicted class):")
    cell = max(len(str(n)) for n in cm.flatten())
    want.append(" " + "".join(f"  {k:>{cell}}" for k in labels))
    want += [f"{t}" + "".join(f"  {n:>{cell}}" for n in cm[t]) for t in labels]
    assert log[at + 1:] == want

    # --log-format json: the report as one event instead of the table.
    js = run_dtrain("evaluate", job, "--log-format", "json")
    assert js.returncode == 0, js.stderr
    assert js.stdout.splitlines() == lines
    events = [json.loads(l) for l in js.stderr.splitlines() if l.startswith("{")]
    reports = [e for e in events if e["event"] == "eval_report"]
    assert len(reports) == 1
    assert reports[0]["step"] == 150
    assert reports[0]["report"] == saved["report"]

    # TensorBoard's own reader loads the confusion matrix image.
    acc = EventAccumulator(str(tmp_path / "run" / "eval"), size_guidance={"images": 0})
    acc.Reload()
    assert "confusion_matrix" in acc.Tags()["images"]
    images = acc.Images("confusion_matrix")
    assert [i.step for i in images] == [150, 150]  # two evaluations of step 150
    img = images[-1]
    assert (img.width, img.height) == (3 * 64, 3 * 64)
    pixels = np.asarray(Image.open(io.BytesIO(img.encoded_image_string)).convert("RGB"))
    assert pixels.shape == (192, 192, 3)
    for t in labels:
        for q in labels:
            share = cm[t, q] / cm[t].sum()
            want_rgb = [round(255 - share * (255 - d) + 1e-9) for d in (8, 48, 107)]
            assert np.abs(pixels[t * 64 + 32, q * 64 + 32].astype(int) - want_rgb).max() <= 1, (t, q)


BINARY_JOB = """
model:
  input: {{shape: [6]}}
  layers:
    - {{type: dense, units: 8, activation: relu}}
    - {{type: dense, units: 1}}
  loss: sigmoid_cross_entropy
  metrics: [accuracy]
optimizer: {{type: sgd, learning_rate: 0.1}}
data:
  train: {{format: npy, images: {d}/x.npy, labels: {d}/y.npy, batch_size: 64, shuffle: 1024}}
  eval: {{format: npy, images: {d}/x_eval.npy, labels: {d}/y_eval.npy, batch_size: 100}}
run: {{model_dir: {d}/run, max_steps: 60, save_checkpoints_steps: 60, log_step_count_steps: 100, seed: 2}}
"""


def test_binary_report_auc_equals_scikit_learn(tmp_path):
    y = make_data(tmp_path, [0.7, 0.3], seed=4)
    for name in ("y", "y_eval"):  # sigmoid_cross_entropy: (N, 1) float targets
        np.save(tmp_path / f"{name}.npy", np.load(tmp_path / f"{name}.npy").astype(np.float32).reshape(-1, 1))
    job = tmp_path / "job.yaml"
    job.write_text(BINARY_JOB.format(d=tmp_path))
    assert run_dtrain("train", job, "--no-eval").returncode == 0
    ev = run_dtrain("evaluate", job)
    assert ev.returncode == 0, ev.stderr
    pr = run_dtrain("predict", job, "--input", tmp_path / "x_eval.npy", "--output", tmp_path / "p.npy")
    assert pr.returncode == 0, pr.stderr
    score = np.load(tmp_path / "p.npy").reshape(-1)
    (r,) = json.loads((tmp_path / "run" / "eval" / "metrics-60.json").read_text())["report"]["outputs"]
    assert r["loss"] == "sigmoid_cross_entropy" and r["num_classes"] == 2
    pred = (score > 0.5).astype(int)
    assert r["confusion_matrix"] == confusion_matrix(y, pred, labels=[0, 1]).tolist()
    prec, rec, f1, sup = precision_recall_fscore_support(y, pred, labels=[0, 1], average=None, zero_division=0)
    assert [c["f1"] for c in r["per_class"]] == f1.tolist()
    assert [c["support"] for c in r["per_class"]] == sup.tolist()
    want = roc_auc_score(y, score)
    assert 0.6 < want < 1.0
    assert r["roc_auc"] == pytest.approx(want, rel=1e-12, abs=0)
    assert f"roc auc {want:.4f}" in ev.stderr.splitlines()
