#!/usr/bin/env python3
"""The parameter_server strategy on loopback: mnist_cnn (sample_configs/
mnist_cnn.yaml, batch 64 per worker) trained by 2 workers with 1 and 2 ps
tasks, sync and async, in one run on this machine. For each: steps/sec of the
chief, the bytes it pulled and pushed per step (tensor payloads, counted by the
ps client), its step time and the share of it spent in the pull and push RPCs.
Each run is verified to have trained (loss at the end below the start).

    python3 bench/bench_ps.py [--steps 300] [--bin build/cli/dtrain]
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
JOB = ROOT / "sample_configs" / "mnist_cnn.yaml"


def run(cmd):
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_") and k != "TF_CONFIG"}
    env.setdefault("OMP_NUM_THREADS", "1")
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=1800)
    if out.returncode != 0:
        sys.exit(f"{' '.join(map(str, cmd))} failed (exit {out.returncode}):\n{out.stderr[-3000:]}")
    return out.stderr


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--bin", default=str(ROOT / "build/cli/dtrain"))
    a = ap.parse_args()
    print(f"# mnist_cnn, 2 workers x batch 64, {a.steps} global steps, {os.cpu_count()} CPUs, loopback, "
          "OMP_NUM_THREADS=1 per process")
    print("| mode | ps tasks | chief steps/s | pulled B/step | pushed B/step | step ms | RPC ms/step | RPC share |")
    print("|---|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as d:
        for mode in ("sync", "async"):
            for ps in (1, 2):
                log = run([a.bin, "launch", "--workers", "2", "--ps", str(ps), JOB, "--model-dir", f"{d}/{mode}{ps}",
                           "--no-eval", "--log-format", "plain", "--set", "strategy.type=parameter_server",
                           "--set", f"strategy.mode={mode}", "--set", f"run.max_steps={a.steps}",
                           "--set", "run.log_step_count_steps=50", "--set", f"run.save_checkpoints_steps={a.steps}"])
                chief = "\n".join(l[len("[worker 0] "):] for l in log.splitlines() if l.startswith("[worker 0] "))
                losses = [float(m) for m in re.findall(r"step \d+/\d+\s+loss ([\d.]+)", chief)]
                if len(losses) < 2 or not losses[-1] < losses[0]:
                    sys.exit(f"{mode} with {ps} ps did not train:\n{chief[-2000:]}")
                rpc = re.search(r"ps RPCs \(pull and push\): ([\d.]+) ms per step of ([\d.]+) ms \(mean over (\d+)", chief)
                nbytes = re.search(r"pulled (\d+) B and pushed (\d+) B per step", chief)
                rpc_ms, step_ms, steps = float(rpc.group(1)), float(rpc.group(2)), int(rpc.group(3))
                print(f"| {mode} | {ps} | {1e3 / step_ms:.1f} | {nbytes.group(1)} | {nbytes.group(2)} | {step_ms:.2f} "
                      f"| {rpc_ms:.2f} | {rpc_ms / step_ms:.0%} |")


if __name__ == "__main__":
    main()
