#!/usr/bin/env python3
"""Per-step communication of the collective strategy: mnist_cnn (the sample
config mnist_cnn_collective.yaml) trained by 2 worker processes on loopback
(`dtrain launch --workers 2`, Gloo ring all-reduce) next to one_device with the
same global batch, in one run on this machine. Reports steps/sec, the time each
step spends in the cross-worker all-reduce (measured by dtrain around each
bucket's Gloo call), the part of it not overlapped with backward, the bytes
all-reduced per step and the bus bandwidth that implies (nccl-tests' formula).
Each run is verified to have trained (loss at the end below the start).

    python3 bench/bench_collective.py [--steps 300] [--bin build/cli/dtrain]
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
JOB = ROOT / "sample_configs" / "mnist_cnn_collective.yaml"
# mnist_cnn's trainable floats: conv 3x3x1x32+32, conv 3x3x32x64+64, dense 3136x128+128, dense 128x10+10.
PARAMS = (9 * 32 + 32) + (9 * 32 * 64 + 64) + (3136 * 128 + 128) + (128 * 10 + 10)


def env_without_cluster():
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_") and k != "TF_CONFIG"}
    env.setdefault("OMP_NUM_THREADS", "1")
    return env


def run(cmd):
    out = subprocess.run(cmd, capture_output=True, text=True, env=env_without_cluster(), timeout=1800)
    if out.returncode != 0:
        sys.exit(f"{' '.join(map(str, cmd))} failed (exit {out.returncode}):\n{out.stderr[-3000:]}")
    return out.stderr


def steps_per_sec(log, prefix=""):
    """Mean steps/s over the logged windows after the first (warm-up)."""
    rates, losses = [], []
    for line in log.splitlines():
        if not line.startswith(prefix):
            continue
        m = re.search(r"step (\d+)/\d+\s+loss ([\d.]+).*?([\d.]+) steps/s", line)
        if m:
            losses.append(float(m.group(2)))
            rates.append(float(m.group(3)))
    if len(rates) < 3 or not losses[-1] < losses[0]:
        sys.exit(f"the run did not train (losses {losses}):\n{log[-2000:]}")
    return sum(rates[1:]) / len(rates[1:])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--bin", default=str(ROOT / "build/cli/dtrain"))
    a = ap.parse_args()
    common = ["--no-eval", "--log-format", "plain", "--set", f"run.max_steps={a.steps}",
              "--set", "run.log_step_count_steps=50", "--set", f"run.save_checkpoints_steps={a.steps}"]
    with tempfile.TemporaryDirectory() as d:
        one = run([a.bin, "train", JOB, "--model-dir", f"{d}/one", *common, "--set", "strategy.type=one_device",
                   "--set", "data.train.batch_size=64"])
        runs = {}
        for bucket_mb in (25, 0.25):
            runs[bucket_mb] = run([a.bin, "launch", "--workers", "2", JOB, "--model-dir", f"{d}/two-{bucket_mb}",
                                   *common, "--set", f"strategy.bucket_mb={bucket_mb}"])
    one_rate = steps_per_sec(one)
    nbytes = PARAMS * 4
    print(f"# mnist_cnn, global batch 64, {a.steps} steps, OMP_NUM_THREADS={env_without_cluster()['OMP_NUM_THREADS']}, "
          f"{os.cpu_count()} CPUs, loopback")
    print("| run | steps/s | step ms | all-reduce ms/step | not overlapped ms/step | bytes/step | busbw GB/s |")
    print("|---|---|---|---|---|---|---|")
    print(f"| one_device (batch 64) | {one_rate:.1f} | {1e3 / one_rate:.2f} | - | - | - | - |")
    for bucket_mb, log in runs.items():
        rate = steps_per_sec(log, "[worker 0] ")
        m = re.search(r"\[worker 0\] cross-worker all-reduce: ([\d.]+) ms per step, ([\d.]+) ms of it not "
                      r"overlapped", log)
        comm_ms, exposed_ms = float(m.group(1)), float(m.group(2))
        # busbw of the step's all-reduces as one: bytes / time x 2(n-1)/n, n = 2.
        busbw = nbytes / (comm_ms / 1e3) * 2 * (2 - 1) / 2 / 1e9 if comm_ms > 0 else float("nan")
        print(f"| collective, 2 workers x 32, bucket_mb {bucket_mb} | {rate:.1f} | {1e3 / rate:.2f} | {comm_ms:.2f} "
              f"| {exposed_ms:.2f} | {nbytes} | {busbw:.2f} |")
        print(f"ratio collective(2, bucket_mb {bucket_mb}) / one_device steps/s: {rate / one_rate:.2f}",
              file=sys.stderr)


if __name__ == "__main__":
    main()
