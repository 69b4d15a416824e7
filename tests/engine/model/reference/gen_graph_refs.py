#!/usr/bin/env python3
"""Reference forward/backward values for model graphs: every merge layer and
a value read by several layers, computed with PyTorch (CPU, float64) from
float32-representable weights and inputs. Writes graph_refs.json beside this
script; tests/engine/model/test_graph.cpp builds the same graph from YAML
(GRAPH_YAML below, copied into the JSON) and compares.

Keras layouts: dense kernels are (in, out).

Run: /work/venv-torch/bin/python tests/engine/model/reference/gen_graph_refs.py
"""
import json
import os

import numpy as np
import torch

torch.set_default_dtype(torch.float64)
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "graph_refs.json")

GRAPH_YAML = """model:
  input: {shape: [6]}
  layers:
    - {name: a, type: dense, units: 5, activation: tanh}
    - {name: b, type: dense, units: 5, inputs: input}
    - {name: s, type: add, inputs: [a, b], activation: relu}
    - {name: d, type: subtract, inputs: [a, b]}
    - {name: m, type: multiply, inputs: [a, b, s]}
    - {name: av, type: average, inputs: [d, m]}
    - {name: mx, type: maximum, inputs: [av, a]}
    - {name: twice, type: add, inputs: [b, b]}
    - {name: c, type: concatenate, inputs: [mx, s, a, twice]}
    - {name: out, type: dense, units: 3}
  loss: mean_squared_error
"""


def f32(rng, shape, scale=1.0):
    return (rng.standard_normal(shape) * scale).astype(np.float32).astype(np.float64)


def enc(a):
    a = np.asarray(a, dtype=np.float64)
    return {"shape": list(a.shape), "data": [float("%.10g" % v) for v in a.reshape(-1)]}


def main():
    rng = np.random.default_rng(20261124)
    shapes = {"a/kernel": (6, 5), "a/bias": (5,), "b/kernel": (6, 5), "b/bias": (5,), "out/kernel": (20, 3),
              "out/bias": (3,)}
    params = {k: torch.tensor(f32(rng, s, 0.6), requires_grad=True) for k, s in shapes.items()}
    x = torch.tensor(f32(rng, (4, 6)))
    dy = f32(rng, (4, 3))

    a = torch.tanh(x @ params["a/kernel"] + params["a/bias"])
    b = x @ params["b/kernel"] + params["b/bias"]
    s = torch.relu(a + b)
    d = a - b
    m = a * b * s
    av = (d + m) / 2
    mx = torch.maximum(av, a)
    twice = b + b
    c = torch.cat([mx, s, a, twice], dim=-1)
    y = c @ params["out/kernel"] + params["out/bias"]
    (y * torch.tensor(dy)).sum().backward()

    # The relu and maximum must not sit on their kinks (the float32 run could
    # fall on the other side).
    assert (a + b).abs().min().item() > 1e-3 and (av - a).abs().min().item() > 1e-3

    ref = {"generator": "tests/engine/model/reference/gen_graph_refs.py", "torch": torch.__version__,
           "yaml": GRAPH_YAML, "x": enc(x), "dy": enc(dy), "y": enc(y.detach()),
           "params": {k: enc(v.detach()) for k, v in params.items()},
           "grads": {k: enc(v.grad) for k, v in params.items()}}
    with open(OUT, "w") as f:
        json.dump(ref, f, indent=None, separators=(",", ":"))
        f.write("\n")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
