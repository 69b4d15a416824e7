#!/usr/bin/env python3
"""Reference forward/backward values for the layers whose math is a closed
form, computed with NumPy (float64) from small deterministic inputs, in the
case format of gen_layer_refs.py (which needs PyTorch). Writes
layer_refs_numpy.json beside this script; tests/engine/layers/test_layer_refs.cpp
compares against both files.

leaky_relu follows Keras' LeakyReLU (y = x for x > 0, negative_slope * x
otherwise) and TensorFlow's LeakyReluGrad (dx = dy for x > 0, else
negative_slope * dy: x = 0 takes the slope).

Run: python3 tests/engine/layers/reference/gen_layer_refs_numpy.py
"""
import json
import os

import numpy as np

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "layer_refs_numpy.json")


def f32(rng, shape, scale=1.0):
    """Float32-representable values (so the C++ side sees the same inputs)."""
    return (rng.standard_normal(shape) * scale).astype(np.float32).astype(np.float64)


def enc(a):
    a = np.asarray(a, dtype=np.float64)
    return {"shape": list(a.shape), "data": [float("%.10g" % v) for v in a.reshape(-1)]}


def leaky_relu_cases(rng):
    out = []
    for slope, shape in ((0.3, (3, 7)), (0.01, (2, 3, 4, 5)), (0.0, (4, 6)), (1.5, (2, 5, 3))):
        x = f32(rng, shape)
        x.reshape(-1)[0] = 0.0  # the kink: its gradient takes the slope
        dy = f32(rng, shape)
        s = np.float64(np.float32(slope))  # the slope as dtrain holds it (float32)
        y = np.where(x > 0, x, s * x)
        dx = np.where(x > 0, dy, s * dy)
        out.append({"name": f"leaky_relu_{slope}_{'x'.join(map(str, shape))}",
                    "layer": {"type": "leaky_relu", "negative_slope": slope}, "training": True,
                    "x": enc(x), "params": [], "dy": enc(dy), "y": enc(y), "dx": enc(dx), "dparams": []})
    return out


def main():
    rng = np.random.default_rng(20261129)
    cases = leaky_relu_cases(rng)
    with open(OUT, "w") as f:
        json.dump({"generator": "tests/engine/layers/reference/gen_layer_refs_numpy.py", "numpy": np.__version__,
                   "cases": cases}, f, separators=(",", ":"))
        f.write("\n")
    print(f"wrote {len(cases)} cases to {OUT} ({os.path.getsize(OUT)} bytes)")


if __name__ == "__main__":
    main()
