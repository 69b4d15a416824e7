#!/usr/bin/env python3
"""Reference losses and gradients for a model of two outputs (model.outputs):
a shared tanh trunk, a classification head `cls` (sparse softmax cross-entropy
over 3 classes, weight 0.7) that also feeds the regression head `reg` (mean
squared error over 2 targets, weight 1.5) through a concatenation; computed
with PyTorch (CPU, float64) from float32-representable weights and data.
The total loss is 0.7 x mean cross-entropy + 1.5 x mean squared error, each a
mean over the batch (dtrain's loss_reduction: mean). Writes
multi_output_refs.json beside this script; tests/engine/model/test_multi_output.cpp
builds the same model from YAML (MODEL_YAML below, copied into the JSON) and
runs it through run_replica (the step every strategy runs).

Keras layout: dense kernels are (in, out).

Run: /work/venv-torch/bin/python tests/engine/model/reference/gen_multi_output_refs.py
"""
import json
import os

import numpy as np
import torch

torch.set_default_dtype(torch.float64)
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "multi_output_refs.json")

# cls is an output and the input of `both`: its gradient is the sum of its
# own loss's and the one coming back from reg.
MODEL_YAML = """model:
  input: {shape: [5]}
  layers:
    - {name: trunk, type: dense, units: 6, activation: tanh}
    - {name: cls, type: dense, units: 3}
    - {name: both, type: concatenate, inputs: [trunk, cls]}
    - {name: reg, type: dense, units: 2}
  outputs:
    cls: {loss: sparse_softmax_cross_entropy, labels: classes, weight: 0.7, metrics: [accuracy]}
    reg: {loss: mean_squared_error, labels: targets, weight: 1.5}
"""
WEIGHTS = {"cls": 0.7, "reg": 1.5}


def f32(rng, shape, scale=1.0):
    return (rng.standard_normal(shape) * scale).astype(np.float32).astype(np.float64)


def enc(a):
    a = np.asarray(a, dtype=np.float64)
    return {"shape": list(a.shape), "data": [float("%.10g" % v) for v in a.reshape(-1)]}


def main():
    rng = np.random.default_rng(20261127)
    shapes = {"trunk/kernel": (5, 6), "trunk/bias": (6,), "cls/kernel": (6, 3), "cls/bias": (3,),
              "reg/kernel": (9, 2), "reg/bias": (2,)}
    params = {k: torch.tensor(f32(rng, s, 0.4), requires_grad=True) for k, s in shapes.items()}
    x = torch.tensor(f32(rng, (4, 5)))
    classes = rng.integers(0, 3, size=(4,))
    targets = torch.tensor(f32(rng, (4, 2), 0.5))

    trunk = torch.tanh(x @ params["trunk/kernel"] + params["trunk/bias"])
    cls = trunk @ params["cls/kernel"] + params["cls/bias"]
    both = torch.cat([trunk, cls], dim=-1)
    reg = both @ params["reg/kernel"] + params["reg/bias"]
    ce = torch.nn.functional.cross_entropy(cls, torch.tensor(classes), reduction="mean")
    mse = ((reg - targets) ** 2).mean(dim=1).mean()
    total = WEIGHTS["cls"] * ce + WEIGHTS["reg"] * mse
    total.backward()
    accuracy = float((cls.argmax(dim=1).numpy() == classes).mean())

    ref = {"generator": "tests/engine/model/reference/gen_multi_output_refs.py", "torch": torch.__version__,
           "yaml": MODEL_YAML, "x": enc(x), "classes": enc(classes), "targets": enc(targets),
           "loss": float(total.detach()), "loss_cls": float(ce.detach()), "loss_reg": float(mse.detach()), "cls_accuracy": accuracy,
           "cls": enc(cls.detach()), "reg": enc(reg.detach()),
           "params": {k: enc(v.detach()) for k, v in params.items()},
           "grads": {k: enc(v.grad) for k, v in params.items()}}
    with open(OUT, "w") as f:
        json.dump(ref, f, indent=None, separators=(",", ":"))
        f.write("\n")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
