#!/usr/bin/env python3
"""Reference values for tests/engine/losses: loss sums, gradients and
predictions computed with PyTorch in float64 (autograd for the gradients) on
fixed float32 inputs. Run from anywhere; writes losses.json beside this file:

    python3 tests/engine/losses/reference/gen_refs.py
"""
import json
import pathlib

import numpy as np
import torch
import torch.nn.functional as F

rng = np.random.RandomState(20240601)


def f32(a):
    """Round to float32 so the C++ side reads exactly these inputs."""
    return np.asarray(a, dtype=np.float32).astype(np.float64)


def loss_sum(name, x, y):
    """Sum over the batch of the per-example loss (mean over elements for
    sigmoid_cross_entropy / mean_squared_error, mean over positions for
    sparse_softmax_cross_entropy on (B, T..., C)), as engine/losses/loss.hpp."""
    b = x.shape[0]
    if name == "sparse_softmax_cross_entropy" and x.dim() == 2:
        return F.cross_entropy(x, y.reshape(b).long(), reduction="sum")
    if name == "sparse_softmax_cross_entropy":
        c = x.shape[-1]
        per = F.cross_entropy(x.reshape(-1, c), y.reshape(-1).long(), reduction="none")
        return per.reshape(b, -1).mean(dim=1).sum()
    if name == "softmax_cross_entropy":
        return -(y * torch.log_softmax(x, dim=-1)).sum()
    if name == "sigmoid_cross_entropy":
        per = F.binary_cross_entropy_with_logits(x, y.reshape(x.shape), reduction="none")
        return per.reshape(b, -1).mean(dim=1).sum()
    if name == "mean_squared_error":
        per = (x - y.reshape(x.shape)) ** 2
        return per.reshape(b, -1).mean(dim=1).sum()
    raise ValueError(name)


def predictions(name, x):
    if name in ("sparse_softmax_cross_entropy", "softmax_cross_entropy"):
        return torch.softmax(x, dim=-1)
    if name == "sigmoid_cross_entropy":
        return torch.sigmoid(x)
    return x


def case(name, logits, labels, grad_scale):
    x = torch.tensor(f32(logits), dtype=torch.float64, requires_grad=True)
    y = torch.tensor(f32(labels), dtype=torch.float64)
    total = loss_sum(name, x, y)
    (g,) = torch.autograd.grad(total * grad_scale, x)
    return {
        "loss": name,
        "grad_scale": grad_scale,
        "logits_shape": list(x.shape),
        "logits": f32(logits).ravel().tolist(),
        "labels_shape": list(np.shape(labels)),
        "labels": f32(labels).ravel().tolist(),
        "loss_sum": float(total.detach()),
        "dlogits": g.numpy().ravel().tolist(),
        "predictions": predictions(name, x.detach()).numpy().ravel().tolist(),
    }


def one_hot_soft(b, c):
    """Rows of probabilities: a mix of one-hot rows and soft rows."""
    t = rng.rand(b, c)
    t = t / t.sum(axis=1, keepdims=True)
    t[0] = 0.0
    t[0, c - 1] = 1.0
    return t


cases = [
    case("sparse_softmax_cross_entropy", rng.randn(4, 5) * 2, [0, 3, 4, 1], 0.25),
    case("sparse_softmax_cross_entropy", rng.randn(3, 2), [[1], [0], [1]], 1.0),
    # Large logits: a naive exp overflows float32; log-softmax must not.
    case("sparse_softmax_cross_entropy", [[90.0, -80.0, 10.0], [-100.0, 100.0, 0.5]], [2, 1], 0.5),
    case("softmax_cross_entropy", rng.randn(4, 6), one_hot_soft(4, 6), 0.25),
    case("softmax_cross_entropy", [[60.0, -60.0, 0.0], [1.0, 2.0, 3.0]], [[0.0, 1.0, 0.0], [0.2, 0.3, 0.5]], 2.0),
    case("sigmoid_cross_entropy", rng.randn(5, 3) * 3, rng.rand(5, 3).round(1), 0.2),
    case("sigmoid_cross_entropy", [[40.0], [-40.0], [0.0], [-3.0]], [1.0, 1.0, 0.0, 0.0], 1.0),
    case("sigmoid_cross_entropy", rng.randn(2, 2, 3), (rng.rand(2, 2, 3) > 0.5).astype(float), 0.5),
    case("mean_squared_error", rng.randn(3, 4), rng.randn(3, 4), 1.0 / 3.0),
    case("mean_squared_error", rng.randn(4, 1), rng.randn(4), 0.25),
    # Sequence outputs: logits (B, T, C) with labels (B, T), (B, T, 1), and (B, H, W, C).
    case("sparse_softmax_cross_entropy", rng.randn(3, 4, 5) * 2, rng.randint(0, 5, size=(3, 4)), 1.0 / 3.0),
    case("sparse_softmax_cross_entropy", rng.randn(2, 3, 4), rng.randint(0, 4, size=(2, 3, 1)), 1.0),
    case("sparse_softmax_cross_entropy", rng.randn(2, 2, 3, 6), rng.randint(0, 6, size=(2, 2, 3)), 0.5),
]

out = pathlib.Path(__file__).with_name("losses.json")
lines = ",\n  ".join(json.dumps(c) for c in cases)
out.write_text('{"generator": "tests/engine/losses/reference/gen_refs.py",\n "cases": [\n  ' + lines + "\n ]\n}\n")
print(f"wrote {out} ({len(cases)} cases)")
