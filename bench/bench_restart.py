#!/usr/bin/env python3
"""Recovery from a lost worker: `dtrain launch --max-restarts 1` against
`torchrun --max-restarts 1` (bench/torch_ddp_restart.py, the PyTorch DDP twin
of the same job) on a 3-worker mnist_cnn collective (batch 32 per worker, Adam,
Gloo) on loopback. Each run trains past its step-20 checkpoint, then worker 1
gets kill -9; the number is the recovery time: from the kill to the first step
the restarted cluster completes (worker 0 / rank 0's step line after its
"resuming" line). Both sides restart every worker and resume from the
checkpoint (torchrun's model; dtrain does the same today).

Runs alternate (dtrain, torch, dtrain, torch, ...) for --rounds rounds; each
round in which both recovered gives one ratio (torch's time over dtrain's:
above 1, dtrain recovers faster), reported as the median and its spread; a
run that gives up (its restarts used up) is counted apart. A run counts only if it was
verified: the kill happened, the cluster restarted, and it resumed at a step
of at least 20 and trained on from there.

    python3 bench/bench_restart.py [--rounds 3] [--python /path/to/python-with-torch]
"""
import argparse
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WORKERS = 3


# torch_ddp_restart.py's line after its process group forms (dtrain restarts once).
RESTART_COUNT = re.compile(r"rank 0: process group of \d+ in \S+ s \(restart (\d+)\)")


def children(pid):
    try:
        return [int(p) for p in open(f"/proc/{pid}/task/{pid}/children").read().split()]
    except FileNotFoundError:
        return []


def environ(pid):
    try:
        return dict(v.split(b"=", 1) for v in open(f"/proc/{pid}/environ", "rb").read().split(b"\0") if b"=" in v)
    except (FileNotFoundError, ProcessLookupError):
        return {}


def dtrain_worker(proc, index):
    for pid in children(proc.pid):
        tf = environ(pid).get(b"TF_CONFIG")
        if tf and json.loads(tf)["task"] == {"type": "worker", "index": index}:
            return pid
    return None


def torch_worker(proc, index):
    for pid in children(proc.pid):  # torchrun's agent is the process itself; ranks are its children
        if environ(pid).get(b"RANK") == str(index).encode():
            return pid
    return None


SIDES = {
    "dtrain": {
        "find": dtrain_worker,
        "trained_past": re.compile(r"^\[worker 0\] step (\d+)/"),
        "resumed": re.compile(r"^\[worker 0\] .*resuming from \S+ at step (\d+)"),
        "step": re.compile(r"^\[worker 0\] step (\d+)/"),
    },
    "torch": {
        "find": torch_worker,
        "trained_past": re.compile(r"rank 0: step (\d+) "),
        "resumed": re.compile(r"rank 0: resuming at step (\d+)"),
        "step": re.compile(r"rank 0: step (\d+) "),
    },
}


def command(side, work, python):
    if side == "dtrain":
        return [str(ROOT / "build/cli/dtrain"), "launch", "--workers", str(WORKERS),
                str(ROOT / "sample_configs/mnist_cnn_collective.yaml"), "--model-dir", str(work), "--no-eval",
                "--log-format", "plain", "--max-restarts", "1", "--set", "run.max_steps=100000",
                "--set", "run.save_checkpoints_steps=20", "--set", "run.log_step_count_steps=1"]
    # torchrun's first restart sometimes fails (its Gloo mesh connects to a rank of the generation
    # before: "Connection refused"); it gets 3 tries, and the run says how many it took.
    return [python, "-m", "torch.distributed.run", "--nproc-per-node", str(WORKERS), "--max-restarts", "3",
            "--standalone", str(ROOT / "bench/torch_ddp_restart.py"),
            "--root", str(ROOT), "--dir", str(work), "--save-steps", "20"]


def one_run(side, python, log_path=None):
    s = SIDES[side]
    with tempfile.TemporaryDirectory() as work:
        env = dict(os.environ, TF_CONFIG="", SLURM_PROCID="", OMP_NUM_THREADS="1")
        proc = subprocess.Popen(command(side, work, python), cwd=ROOT, env=env, stderr=subprocess.PIPE,
                                stdout=subprocess.DEVNULL, text=True)
        lines = []
        reader = threading.Thread(target=lambda: [lines.append((time.monotonic(), l)) for l in proc.stderr])
        reader.start()
        try:
            deadline = time.monotonic() + 300
            # Past the step-20 checkpoint (a few steps more, done again after the restart).
            while not any((m := s["trained_past"].search(l)) and int(m.group(1)) >= 24 for _, l in list(lines)):
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"{side} did not train: " + "".join(l for _, l in lines[-20:]))
                time.sleep(0.02)
            victim = s["find"](proc, 1)
            if victim is None:
                raise RuntimeError(f"{side}: no worker 1 among {children(proc.pid)}")
            os.kill(victim, signal.SIGKILL)
            killed = time.monotonic()
            resumed_step = None
            while True:
                if time.monotonic() - killed > 60 or proc.poll() is not None:
                    return None  # gave up (its restarts used up) or hung for 60 s
                after = [(t, l) for t, l in list(lines) if t >= killed]
                for t, l in after:
                    if resumed_step is None and (m := s["resumed"].search(l)):
                        resumed_step = int(m.group(1))
                    elif resumed_step is not None and (m := s["step"].search(l)) and int(m.group(1)) > resumed_step:
                        if resumed_step < 20:
                            raise RuntimeError(f"{side} resumed at step {resumed_step}, before the checkpoint")
                        restarts = max([int(m.group(1)) for _, l in lines if (m := RESTART_COUNT.search(l))] or [1])
                        return t - killed, resumed_step, restarts
                time.sleep(0.02)
        finally:
            if log_path:  # every line, seconds since the kill (negative before it)
                t0 = killed if "killed" in locals() else 0.0
                with open(log_path, "w") as f:
                    f.writelines(f"{t - t0:9.3f} {l}" for t, l in lines)
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            reader.join()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--python", default=sys.executable, help="a python with torch (for torchrun)")
    ap.add_argument("--logs", help="a directory for each run's output, timed from the kill")
    a = ap.parse_args()
    if a.logs:
        os.makedirs(a.logs, exist_ok=True)
    times = {"dtrain": [], "torch": []}
    ratios = []
    failed = {"dtrain": 0, "torch": 0}
    for r in range(a.rounds):
        round_times = {}
        for side in ("dtrain", "torch"):
            log = os.path.join(a.logs, f"{side}-{r + 1}.log") if a.logs else None
            got = one_run(side, a.python, log)
            if got is None:
                failed[side] += 1
                print(f"round {r + 1}: {side:6s} did not recover (restarts used up, or no step within 60 s)", flush=True)
                continue
            seconds, step, restarts = got
            times[side].append(seconds)
            print(f"round {r + 1}: {side:6s} recovered in {seconds:.2f} s (resumed at step {step}, "
                  f"{restarts} restart{'s' if restarts > 1 else ''})", flush=True)
            round_times[side] = seconds
        if len(round_times) == 2:
            ratios.append(round_times["torch"] / round_times["dtrain"])
    med = statistics.median
    print(f"did not recover: dtrain {failed['dtrain']} of {a.rounds}, torchrun {failed['torch']} of {a.rounds}")
    if not ratios or not times["dtrain"] or not times["torch"]:
        return
    print(f"recovery (kill -9 of worker 1 -> first step after the restart), {WORKERS} workers, median of "
          f"{a.rounds}: dtrain {med(times['dtrain']):.2f} s ({min(times['dtrain']):.2f}..{max(times['dtrain']):.2f}), "
          f"torchrun {med(times['torch']):.2f} s ({min(times['torch']):.2f}..{max(times['torch']):.2f}); "
          f"torchrun / dtrain {med(ratios):.2f}x ({min(ratios):.2f}..{max(ratios):.2f})")


if __name__ == "__main__":
    main()
