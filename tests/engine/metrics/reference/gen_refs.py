#!/usr/bin/env python3
"""Reference values for tests/engine/metrics, computed with NumPy from the
definitions in engine/metrics/*.cpp: each case feeds one or more batches into
a fresh metric state and records the final result. Writes metrics.json:

    python3 tests/engine/metrics/reference/gen_refs.py

Definitions (float64):
  accuracy: softmax losses: mean over examples (and positions, for logits
            (B, T..., C)) of argmax(logits) == class (label, or
            argmax(target)); sigmoid: mean over elements of
            (logit > 0) == (target > 0.5).
  mean_loss: sum of loss_sum over batches / number of examples.
  precision / recall: sigmoid: pooled over elements, tp/(tp+fp), tp/(tp+fn);
            softmax losses: macro average over classes of per-class
            tp/(tp+fp) (precision) or tp/(tp+fn) (recall), skipping classes
            whose denominator is 0. Empty -> 0.
  mean_absolute_error: mean over elements of |prediction - target| with
            prediction = softmax / sigmoid / identity by loss.
"""
import json
import pathlib

import numpy as np

rng = np.random.RandomState(7)


def f32(a):
    return np.asarray(a, dtype=np.float32).astype(np.float64)


def softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def classes(loss, x, y):
    """Predicted and actual class of every position (logits (B, T..., C))."""
    pred = x.argmax(axis=-1).reshape(-1)
    actual = y.reshape(-1).astype(int) if loss == "sparse_softmax_cross_entropy" else y.argmax(axis=-1).reshape(-1)
    return pred, actual


def result(metric, loss, batches):
    xs = [f32(b["logits"]).reshape(b["logits_shape"]) for b in batches]
    ys = [f32(b["labels"]).reshape(b["labels_shape"]) for b in batches]
    if metric == "mean_loss":
        return sum(b["loss_sum"] for b in batches) / sum(x.shape[0] for x in xs)
    if metric == "mean_absolute_error":
        preds = [softmax(x) if loss == "softmax_cross_entropy" else 1 / (1 + np.exp(-x)) if loss == "sigmoid_cross_entropy" else x for x in xs]
        return float(np.concatenate([np.abs(p - y.reshape(p.shape)).ravel() for p, y in zip(preds, ys)]).mean())
    if loss == "sigmoid_cross_entropy":
        p = np.concatenate([(x > 0).ravel() for x in xs])
        a = np.concatenate([(y > 0.5).ravel() for y in ys])
        if metric == "accuracy":
            return float((p == a).mean())
        tp, fp, fn = np.sum(p & a), np.sum(p & ~a), np.sum(~p & a)
        d = tp + (fp if metric == "precision" else fn)
        return float(tp / d) if d else 0.0
    pairs = [classes(loss, x, y) for x, y in zip(xs, ys)]
    pred = np.concatenate([p for p, _ in pairs])
    actual = np.concatenate([a for _, a in pairs])
    if metric == "accuracy":
        return float((pred == actual).mean())
    c = xs[0].shape[-1]
    scores = []
    for k in range(c):
        tp = np.sum((pred == k) & (actual == k))
        d = np.sum(pred == k) if metric == "precision" else np.sum(actual == k)
        if d:
            scores.append(tp / d)
    return float(np.mean(scores)) if scores else 0.0


def batch(loss, b, out, skew=None):
    x = rng.randn(b, *out) * 2
    if skew is not None:  # make some classes never predicted / never present
        x[:, skew] -= 100.0
    if loss == "sparse_softmax_cross_entropy":
        y = rng.randint(0, out[-1], size=(b, *out[:-1])).astype(float)
    elif loss == "softmax_cross_entropy":
        y = softmax(rng.randn(b, *out) * 3)
    elif loss == "sigmoid_cross_entropy":
        y = rng.rand(b, *out).round(1)
    else:
        y = rng.randn(b, *out)
    return {"logits_shape": list(x.shape), "logits": f32(x).ravel().tolist(), "labels_shape": list(y.shape),
            "labels": f32(y).ravel().tolist(), "loss_sum": float(rng.rand() * b)}


cases = []
plan = [
    ("accuracy", "sparse_softmax_cross_entropy", [(16, [5]), (8, [5])]),
    ("accuracy", "softmax_cross_entropy", [(12, [4])]),
    ("accuracy", "sigmoid_cross_entropy", [(6, [3]), (5, [3])]),
    ("mean_loss", "sparse_softmax_cross_entropy", [(10, [3]), (6, [3])]),
    ("mean_loss", "mean_squared_error", [(4, [2])]),
    ("precision", "sparse_softmax_cross_entropy", [(30, [4]), (10, [4])]),
    ("recall", "sparse_softmax_cross_entropy", [(30, [4]), (10, [4])]),
    ("precision", "softmax_cross_entropy", [(20, [3])]),
    ("recall", "softmax_cross_entropy", [(20, [3])]),
    ("precision", "sigmoid_cross_entropy", [(40, [1]), (9, [1])]),
    ("recall", "sigmoid_cross_entropy", [(40, [1])]),
    ("precision", "sigmoid_cross_entropy", [(10, [3])]),
    ("mean_absolute_error", "mean_squared_error", [(5, [3]), (3, [3])]),
    ("mean_absolute_error", "sigmoid_cross_entropy", [(6, [2])]),
    ("mean_absolute_error", "softmax_cross_entropy", [(6, [4])]),
]
for metric, loss, shapes in plan:
    batches = [batch(loss, b, out) for b, out in shapes]
    cases.append({"metric": metric, "loss": loss, "batches": batches, "result": result(metric, loss, batches)})
# Class 2 is never predicted (logits pushed down): precision must skip it.
for metric in ("precision", "recall"):
    batches = [batch("sparse_softmax_cross_entropy", 24, [4], skew=2)]
    cases.append({"metric": metric, "loss": "sparse_softmax_cross_entropy", "batches": batches,
                  "result": result(metric, "sparse_softmax_cross_entropy", batches)})
# A tie: argmax takes the first largest logit.
tie = {"logits_shape": [2, 3], "logits": [1.0, 1.0, 0.0, 0.0, 2.0, 2.0], "labels_shape": [2],
       "labels": [0.0, 2.0], "loss_sum": 1.0}
cases.append({"metric": "accuracy", "loss": "sparse_softmax_cross_entropy", "batches": [tie],
              "result": result("accuracy", "sparse_softmax_cross_entropy", [tie])})
# Sequence outputs (B, T, C) with labels (B, T): every position is one decision.
for metric, shapes in (("accuracy", [(6, [4, 3]), (3, [4, 3])]), ("precision", [(10, [5, 4])]),
                       ("recall", [(10, [5, 4])]), ("mean_loss", [(4, [3, 2])])):
    batches = [batch("sparse_softmax_cross_entropy", b, out) for b, out in shapes]
    cases.append({"metric": metric, "loss": "sparse_softmax_cross_entropy", "batches": batches,
                  "result": result(metric, "sparse_softmax_cross_entropy", batches)})

out = pathlib.Path(__file__).with_name("metrics.json")
lines = ",\n  ".join(json.dumps(c) for c in cases)
out.write_text('{"generator": "tests/engine/metrics/reference/gen_refs.py",\n "cases": [\n  ' + lines + "\n ]\n}\n")
print(f"wrote {out} ({len(cases)} cases)")
for c in cases:
    print(c["metric"], c["loss"], c["result"])
