#!/usr/bin/env python3
"""A shared machine: dtrain against PyTorch eager on mnist_cnn and mnist_mlp
(the sample configs; bench/torch_reference.py is the PyTorch twin) with 0, 1
and 2 CPU-bound processes beside them, each side with its own default thread
count (dtrain: run.threads auto, which measures the contention at start-up;
PyTorch: torch.get_num_threads()). The number is each side's slowdown, its
training throughput (examples/s over the timed steps) quiet divided by that
with k busy processes; dtrain is doing well when its slowdown is no worse than
PyTorch's at each level.

Rounds alternate the sides and the levels (dtrain quiet, PyTorch quiet, dtrain
with 1 busy, PyTorch with 1 busy, ...), so the machine's drift hits both; each
round gives one ratio of slowdowns per level (dtrain's / PyTorch's: below 1,
dtrain slows down less), reported as the median over rounds and its spread.
Both sides are verified to have trained (loss went down) before any number is
used.

    python3 bench/bench_shared.py [--rounds 3] [--steps 150] [--models mnist_cnn,mnist_mlp]
"""
import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
from bench_cpu import bench_dtrain, bench_torch, verify  # noqa: E402

BATCH = {"mnist_cnn": 64, "mnist_mlp": 128}


def start_busy(k):
    """k CPU-bound processes, unpinned, as other users' jobs would be."""
    procs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(k)]
    time.sleep(0.5)  # running before the measured side starts
    return procs


def stop_busy(procs):
    for p in procs:
        p.kill()
        p.wait()


def measure(side, model, k, a, torch_threads):
    env = {n: v for n, v in os.environ.items() if n not in ("OMP_NUM_THREADS", "OMP_WAIT_POLICY", "GOMP_SPINCOUNT")}
    if side == "dtrain" and a.dtrain_threads:
        env["OMP_NUM_THREADS"] = str(a.dtrain_threads)  # a fixed count: no contention measure
    busy = start_busy(k)
    try:
        if side == "dtrain":
            r = bench_dtrain(a.dtrain, model, a.steps, a.warmup, BATCH[model], env)
        else:
            r = bench_torch(model, a.steps, a.warmup, BATCH[model], torch_threads, env)
    finally:
        stop_busy(busy)
    verify(f"{side} {model} with {k} busy", r)
    return r["examples_per_sec"]


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--steps", type=int, default=150, help="timed steps per run")
    p.add_argument("--warmup", type=int, default=20)
    p.add_argument("--levels", default="0,1,2", help="busy processes beside the job; 0 is the reference")
    p.add_argument("--models", default="mnist_cnn,mnist_mlp")
    p.add_argument("--dtrain", default=str(ROOT / "build/cli/dtrain"))
    p.add_argument("--dtrain-threads", type=int, default=0,
                   help="give dtrain this fixed count (OMP_NUM_THREADS) instead of auto: how it ran before it "
                        "measured contention")
    a = p.parse_args()
    import torch
    torch_threads = torch.get_num_threads()
    levels = [int(x) for x in a.levels.split(",")]
    assert levels[0] == 0, "the first level is the quiet reference"
    print(f"{os.cpu_count()} CPUs; dtrain with {a.dtrain_threads or 'auto'} threads; "
          f"PyTorch {torch.__version__} with its default {torch_threads} threads; "
          f"{a.steps} timed steps after {a.warmup}; {a.rounds} rounds", flush=True)
    for model in a.models.split(","):
        eps = {(s, k): [] for s in ("dtrain", "torch") for k in levels}
        for r in range(a.rounds):
            for k in levels:
                for side in (("dtrain", "torch") if r % 2 == 0 else ("torch", "dtrain")):
                    eps[side, k].append(measure(side, model, k, a, torch_threads))
                    print(f"  {model} round {r + 1}: {side:<6} {k} busy: {eps[side, k][-1]:8.0f} ex/s", flush=True)
        print(f"{model} (batch {BATCH[model]}): slowdown = quiet ex/s / ex/s with k busy, per round")
        for k in levels[1:]:
            slow = {s: [q / b for q, b in zip(eps[s, 0], eps[s, k])] for s in ("dtrain", "torch")}
            ratios = [d / t for d, t in zip(slow["dtrain"], slow["torch"])]
            print(f"  {k} busy: dtrain {statistics.median(slow['dtrain']):5.2f}x "
                  f"({min(slow['dtrain']):.2f}-{max(slow['dtrain']):.2f}), PyTorch "
                  f"{statistics.median(slow['torch']):5.2f}x ({min(slow['torch']):.2f}-{max(slow['torch']):.2f}); "
                  f"dtrain / PyTorch {statistics.median(ratios):.2f} (spread {min(ratios):.2f}-{max(ratios):.2f})")
        print(f"  quiet: dtrain {statistics.median(eps['dtrain', 0]):.0f} ex/s, PyTorch "
              f"{statistics.median(eps['torch', 0]):.0f} ex/s", flush=True)


if __name__ == "__main__":
    main()
