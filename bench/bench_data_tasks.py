"""Data as users have it, dtrain against Keras (issue 27's comparison): the same two tasks, side
by side, alternating A B A B, each run a process of its own.

  csv:    a CSV with a BOM, CRLF, quoted fields, number columns with missing values (empty, NA,
          ?), two category columns and a label column of names (tests/integration/
          test_tabular_csv.py's generator: 20,000 training rows, 5,000 held out), a 32-unit MLP.
  images: class folders of mixed JPEG/PNG/grayscale PNG of sizes 20..47 (test_image_folder.py's
          generator: 3 classes, 200 training and 60 held-out images each) resized to 24x24, a
          small CNN.

dtrain trains from a job file (bench writes it; its non-blank lines are counted); Keras from
bench/keras_data_tasks.py (the lines between its BEGIN/END markers are counted), run by
--tf-python. Each side trains the same steps at the same batch with the same optimizer and is
evaluated on the same held-out rows or images. Reported per task: lines, held-out accuracy
(the majority-class baseline beside it), training examples/s (dtrain: from its step lines;
Keras: model.fit's time), whole-process seconds and peak RSS (ru_maxrss of the process), and
the median and spread of the per-pair ratios.

    python3 bench/bench_data_tasks.py --tf-python /work/venv-tf/bin/python [--pairs 3] [--json-out r.json]
"""
import argparse
import json
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "integration"))
import test_image_folder as images_gen  # noqa: E402
import test_tabular_csv as csv_gen  # noqa: E402

CSV_JOB = """model:
  input: {{shape: [{width}]}}
  layers:
    - {{type: dense, units: 32, activation: relu}}
    - {{type: dense, units: 3}}
  metrics: [accuracy]
optimizer: {{type: adam, learning_rate: 0.01}}
data:
  train: {{format: csv, path: {d}/train.csv, label_column: grade, batch_size: 64, shuffle: 4096,
          columns: [{{name: age, fill: mean}}, {{name: income, fill: median}}, {{name: city, type: category}},
                    {{name: plan, type: category, fill: most_frequent}}, visits]}}
  eval: {{format: csv, path: {d}/eval.csv, label_column: grade, batch_size: 256}}
run: {{max_steps: {steps}, save_checkpoints_steps: {steps}, log_step_count_steps: 100, seed: 7, threads: {threads}}}
"""

IMAGE_JOB = """model:
  input: {{shape: [24, 24, 3]}}
  layers:
    - {{type: conv2d, filters: 8, kernel: 3, activation: relu}}
    - {{type: max_pool2d, size: 2}}
    - {{type: flatten}}
    - {{type: dense, units: 3}}
  metrics: [accuracy]
optimizer: {{type: adam, learning_rate: 0.003}}
data:
  train: {{format: image_folder, dir: {d}/train, image_size: [24, 24], scale: 0.00392156862745098, batch_size: 32,
          shuffle: 1024, num_parallel_calls: auto}}
  eval: {{format: image_folder, dir: {d}/eval, image_size: [24, 24], scale: 0.00392156862745098, batch_size: 64,
         num_parallel_calls: auto}}
run: {{max_steps: {steps}, save_checkpoints_steps: {steps}, log_step_count_steps: 100, seed: 3, threads: {threads}}}
"""


def make_csv(d):
    rng = np.random.default_rng(0)
    d.mkdir(parents=True, exist_ok=True)
    train, held = csv_gen.rows(20000, rng), csv_gen.rows(5000, rng)
    csv_gen.write_csv(d / "train.csv", csv_gen.HEADER, train)
    csv_gen.write_csv(d / "eval.csv", csv_gen.HEADER, held)
    return max(Counter(r[-1] for r in held).values()) / len(held)


def make_images(d):
    images_gen.make_folder(d / "train", per_class=200, seed=0)
    images_gen.make_folder(d / "eval", per_class=60, seed=1)
    return 1 / 3


def run_measured(cmd):
    """(stdout, stderr, wall seconds) of one process."""
    start = time.perf_counter()
    p = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, check=False)
    wall = time.perf_counter() - start
    if p.returncode != 0:
        raise SystemExit(f"{cmd[0]} failed ({p.returncode}):\n{p.stderr[-3000:]}")
    return p.stdout, p.stderr, wall


def dtrain_side(a, task, d, work, k):
    job = work / f"{task}.yaml"
    steps = a.csv_steps if task == "csv" else a.image_steps
    text = (CSV_JOB.format(d=d, width=csv_gen.WIDTH, steps=steps, threads=a.threads) if task == "csv"
            else IMAGE_JOB.format(d=d, steps=steps, threads=a.threads))
    job.write_text(text)
    model_dir = work / f"m-{task}-{k}"
    out, err, wall = run_measured([a.dtrain, "train", job, "--model-dir", model_dir, "--log-format", "plain"])
    # The step lines give each window's rate: training time is the sum of windows / rate.
    windows = re.findall(r"^step (\d+)/\d+ .* ([0-9.]+) steps/s", err, re.M)
    seconds, last = 0.0, 0
    for step, rate in windows:
        seconds += (int(step) - last) / float(rate)
        last = int(step)
    m = json.loads((model_dir / "eval" / f"metrics-{steps}.json").read_text())
    batch = 64 if task == "csv" else 32
    lines = sum(1 for line in text.splitlines() if line.strip())
    return {"accuracy": m["metrics"]["accuracy"], "examples_per_s": steps * batch / seconds, "wall_s": wall,
            "lines": lines}


def keras_side(a, task, d):
    steps = a.csv_steps if task == "csv" else a.image_steps
    script = ROOT / "bench" / "keras_data_tasks.py"
    out, err, wall = run_measured([a.tf_python, script, task, d, "--steps", steps, "--threads", a.threads])
    r = json.loads(out.strip().splitlines()[-1])
    body = script.read_text().split(f"# BEGIN {task}\n")[1].split(f"# END {task}")[0]
    lines = sum(1 for line in body.splitlines() if line.strip() and not line.strip().startswith("#"))
    return {"accuracy": r["accuracy"], "examples_per_s": r["examples"] / r["fit_seconds"], "wall_s": wall,
            "lines": lines}


def peak_rss(fn):
    """Runs fn, which starts exactly one child process, and adds its peak RSS in MiB (ru_maxrss
    of RUSAGE_CHILDREN is the largest child's, so each run has a fresh python: measure())."""
    r = fn()
    r["peak_rss_mib"] = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    return r


def measure(a, side, task, d, work, k):
    """One run of one side in a fresh interpreter, so ru_maxrss is that run's alone."""
    cmd = [sys.executable, __file__, "--one", side, task, str(d), str(work), str(k), "--dtrain", a.dtrain,
           "--tf-python", a.tf_python, "--threads", str(a.threads), "--csv-steps", str(a.csv_steps),
           "--image-steps", str(a.image_steps)]
    out = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if out.returncode != 0:
        raise SystemExit(out.stderr[-3000:])
    return json.loads(out.stdout.strip().splitlines()[-1])


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--dtrain", default=str(ROOT / "build" / "cli" / "dtrain"))
    p.add_argument("--tf-python", required=True, help="python with tensorflow-cpu 2.15 and pandas")
    p.add_argument("--pairs", type=int, default=3)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--csv-steps", type=int, default=2000)
    p.add_argument("--image-steps", type=int, default=300)
    p.add_argument("--json-out")
    p.add_argument("--one", nargs=5, metavar=("SIDE", "TASK", "DATA", "WORK", "K"), help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.one:
        side, task, d, work, k = a.one
        fn = (lambda: dtrain_side(a, task, Path(d), Path(work), k)) if side == "dtrain" else \
            (lambda: keras_side(a, task, Path(d)))
        print(json.dumps(peak_rss(fn)))
        return
    results = {}
    with tempfile.TemporaryDirectory(prefix="bench-data-tasks-") as tmp:
        work = Path(tmp)
        baselines = {"csv": make_csv(work / "csv"), "images": make_images(work / "images")}
        for task in ("csv", "images"):
            runs = {"dtrain": [], "keras": []}
            for k in range(a.pairs):
                for side in (("dtrain", "keras") if k % 2 == 0 else ("keras", "dtrain")):
                    r = measure(a, side, task, work / task, work, k)
                    runs[side].append(r)
                    print(f"{task} pair {k} {side}: accuracy {r['accuracy']:.4f}, {r['examples_per_s']:.0f} "
                          f"examples/s, {r['wall_s']:.1f} s, peak RSS {r['peak_rss_mib']:.0f} MiB", flush=True)
            ratios = [d["examples_per_s"] / k_["examples_per_s"] for d, k_ in zip(runs["dtrain"], runs["keras"])]
            wall = [k_["wall_s"] / d["wall_s"] for d, k_ in zip(runs["dtrain"], runs["keras"])]
            summary = {
                "majority_baseline": baselines[task],
                "lines": {s: runs[s][0]["lines"] for s in runs},
                "accuracy": {s: statistics.median(r["accuracy"] for r in runs[s]) for s in runs},
                "examples_per_s": {s: statistics.median(r["examples_per_s"] for r in runs[s]) for s in runs},
                "peak_rss_mib": {s: statistics.median(r["peak_rss_mib"] for r in runs[s]) for s in runs},
                "wall_s": {s: statistics.median(r["wall_s"] for r in runs[s]) for s in runs},
                "train_speed_ratio": {"median": statistics.median(ratios), "min": min(ratios), "max": max(ratios)},
                "wall_ratio_keras_over_dtrain": {"median": statistics.median(wall), "min": min(wall),
                                                 "max": max(wall)},
                "runs": runs,
            }
            results[task] = summary
            print(f"{task}: lines dtrain {summary['lines']['dtrain']} / keras {summary['lines']['keras']}; "
                  f"accuracy {summary['accuracy']['dtrain']:.4f} / {summary['accuracy']['keras']:.4f} "
                  f"(majority {baselines[task]:.4f}); training {summary['train_speed_ratio']['median']:.2f}x "
                  f"(spread {min(ratios):.2f}..{max(ratios):.2f}); whole process {summary['wall_s']['dtrain']:.1f} s "
                  f"/ {summary['wall_s']['keras']:.1f} s; peak RSS {summary['peak_rss_mib']['dtrain']:.0f} / "
                  f"{summary['peak_rss_mib']['keras']:.0f} MiB", flush=True)
    if a.json_out:
        Path(a.json_out).write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
