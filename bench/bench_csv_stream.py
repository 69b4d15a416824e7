"""A csv source read as training goes (stream: true: each batch's rows read
back from the file) against the same source held in memory (stream: false:
its columns compact), side by side in one run: `dtrain data bench` of the
same job both ways, alternating (A B A B ...), examples/s and peak RSS.

Two tables: numbers (200,000 rows x 100 number columns, two with missing
values filled) and text (100,000 reviews of 20-60 words, max_length 64,
a category and a number beside them).

Before timing it checks that both ways give the same examples in the same
order: 20 training steps each way must give equal variables, bit for bit.

    python3 bench/bench_csv_stream.py [--pairs 3] [--batches 200] [--dtrain build/cli/dtrain]
"""
import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


def write_numbers(path, rng, n=200_000, k=100):
    x = rng.normal(0, 1, (n, k)).round(2)
    label = (x[:, 0] + x[:, 1] > 0).astype(int)
    x[rng.random(n) < 0.05, 2] = np.nan
    x[rng.random(n) < 0.05, 3] = np.nan
    with open(path, "w") as f:
        f.write(",".join(f"x{j}" for j in range(k)) + ",label\n")
        np.savetxt(f, np.column_stack([x, label]), fmt=["%.2f"] * k + ["%d"], delimiter=",")
    columns = ", ".join(["{name: x2, fill: mean}", "{name: x3, fill: median}"] +
                        [f"x{j}" for j in range(k) if j not in (2, 3)])
    model = f"""model:
  input: {{shape: [{k}]}}
  layers: [{{type: dense, units: 2}}]
"""
    return model, f"label_column: label, columns: [{columns}]"


WORDS = ("the a it this and was to of with for my is very after one week but great awful love broken quiet "
         "noisy fast slow sturdy flimsy perfect refund reliable leaking").split()


def write_text(path, rng, n=100_000):
    products = ["kettle", "toaster", "blender", "mixer", "grill"]
    with open(path, "w") as f:
        f.write("review,product,price,label\n")
        for _ in range(n):
            words = rng.choice(WORDS, int(rng.integers(20, 60)))
            good = np.isin(words, ["great", "love", "perfect", "sturdy", "reliable", "quiet", "fast"]).sum()
            bad = np.isin(words, ["awful", "broken", "noisy", "slow", "flimsy", "refund", "leaking"]).sum()
            f.write(f"\"{' '.join(words)}\",{products[int(rng.integers(0, 5))]},{rng.uniform(10, 100):.2f},"
                    f"{'good' if good >= bad else 'bad'}\n")
    model = """model:
  inputs:
    words: {shape: [64], dtype: int32}
    product: {shape: [1], dtype: int32}
    price: {shape: [1]}
  layers:
    - {name: embed, type: embedding, input_dim: auto, output_dim: 8, inputs: words}
    - {name: pooled, type: global_avg_pool1d}
    - {name: product_embed, type: embedding, input_dim: auto, output_dim: 2, inputs: product}
    - {name: product_flat, type: flatten}
    - {name: both, type: concatenate, inputs: [pooled, product_flat, price]}
    - {name: logits, type: dense, units: auto}
"""
    keys = ("label_column: label, max_length: 64, columns: [{name: review, type: text, input: words}, "
            "{name: product, type: category, encoding: id, input: product}, {name: price, input: price}]")
    return model, keys


def job(d, name, model, path, keys, stream, steps):
    p = d / f"{name}-{stream}.yaml"
    p.write_text(model + f"""  metrics: [accuracy]
optimizer: {{type: adam, learning_rate: 0.01}}
data:
  train: {{format: csv, path: {path}, batch_size: 256, shuffle: 10000, stream: {stream}, {keys}}}
run: {{model_dir: {d / f'm-{name}-{stream}'}, max_steps: {steps}, save_checkpoints_steps: {steps}, seed: 3}}
""")
    return p


def verify(dtrain, d, name, model, path, keys):
    """20 training steps each way: the checkpoints' variables must be equal."""
    from safetensors.numpy import load_file
    got = {}
    for stream in ("true", "false"):
        j = job(d, name, model, path, keys, stream, 20)
        r = subprocess.run([dtrain, "train", str(j), "--no-eval", "--log-format", "plain"], capture_output=True,
                           text=True)
        if r.returncode != 0:
            sys.exit(f"{name} stream: {stream}: training failed:\n{r.stderr[-3000:]}")
        got[stream] = load_file(str(d / f"m-{name}-{stream}" / "model.ckpt-20.safetensors"))
    for k, v in got["false"].items():
        if not np.array_equal(v, got["true"][k]):
            sys.exit(f"{name}: variable {k} differs between stream: true and false")
    print(f"{name}: 20 training steps read as training goes and held give equal variables ({len(got['false'])})")


def bench_once(dtrain, j, batches):
    r = subprocess.run([dtrain, "data", "bench", str(j), "--batches", str(batches), "--json"], capture_output=True,
                       text=True)
    if r.returncode != 0:
        sys.exit(f"data bench failed:\n{r.stderr[-3000:]}")
    return json.loads(r.stdout)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pairs", type=int, default=3)
    ap.add_argument("--batches", type=int, default=200)
    ap.add_argument("--dtrain", default=str(ROOT / "build" / "cli" / "dtrain"))
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        for name, write in (("numbers", write_numbers), ("text", write_text)):
            path = d / f"{name}.csv"
            model, keys = write(path, rng)
            verify(args.dtrain, d, name, model, path, keys)
            jobs = {s: job(d, name, model, path, keys, s, 1) for s in ("true", "false")}
            rows = {"true": [], "false": []}
            for _ in range(args.pairs):
                for s in ("true", "false"):
                    rows[s].append(bench_once(args.dtrain, jobs[s], args.batches))
            key = "examples_per_sec"
            ratios = [a[key] / b[key] for a, b in zip(rows["true"], rows["false"])]
            mib = path.stat().st_size / 2**20
            print(f"{name} ({mib:.0f} MiB): examples/s read as training goes "
                  f"{statistics.median(r[key] for r in rows['true']):.0f}, held "
                  f"{statistics.median(r[key] for r in rows['false']):.0f}: ratio median {statistics.median(ratios):.2f} "
                  f"(spread {min(ratios):.2f}-{max(ratios):.2f}); peak RSS "
                  f"{statistics.median(r['peak_rss_kib'] for r in rows['true']) / 1024:.0f} vs "
                  f"{statistics.median(r['peak_rss_kib'] for r in rows['false']) / 1024:.0f} MiB")


if __name__ == "__main__":
    main()
