#!/usr/bin/env python3
"""Gloo all-reduce bandwidth benchmark: starts --ranks processes of
dtrain_bench_gloo on loopback (rank 0 hosts the coordination service on a free
port), waits for them, and prints rank 0's table: per message size (float32
sum), time per all-reduce, algbw = bytes / time and busbw = algbw * 2(n-1)/n,
nccl-tests' bus bandwidth formula for all-reduce. Every size is verified
against an independently computed sum before and after it is timed. Exits
non-zero if any rank fails.

    python3 bench/bench_gloo.py [--bin build/bench/dtrain_bench_gloo] [--ranks 2]
        [--min-bytes 1024] [--max-bytes 67108864] [--factor 2] [--iters auto]
        [--json out.json] [--timeout 120]
"""
import argparse
import os
import platform
import socket
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def free_port(ranks):
    """A free loopback port p such that p + ranks - 1 is still a valid port
    (rank r's task address is 127.0.0.1:p+r; only p is bound)."""
    for _ in range(100):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        if port + ranks - 1 <= 65535:
            return port
    raise RuntimeError("no free loopback port found")


def wait_listening(port, proc, seconds):
    """Waits until rank 0's coordination service accepts connections, so the
    other ranks' gRPC clients connect at once instead of backing off."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.05)


def cpu_model():
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bin", default=str(ROOT / "build" / "bench" / "dtrain_bench_gloo"))
    ap.add_argument("--ranks", type=int, default=2)
    ap.add_argument("--min-bytes", default="1024")
    ap.add_argument("--max-bytes", default=str(64 << 20))
    ap.add_argument("--factor", default="2")
    ap.add_argument("--iters", default="auto")
    ap.add_argument("--json", help="rank 0 writes the table as JSON here")
    ap.add_argument("--timeout", type=float, default=120, help="seconds before the driver kills the ranks")
    args = ap.parse_args()

    binary = Path(args.bin)
    if not binary.is_file():
        sys.exit(f"bench_gloo: {binary} not found (build it: ninja -C build bench/dtrain_bench_gloo)")
    port = free_port(args.ranks)
    service = f"127.0.0.1:{port}"
    print(f"# machine: {platform.node()}, nproc={os.cpu_count()} ({cpu_model()}); "
          f"{args.ranks} processes on loopback ({service}), Gloo TCP")
    print("# busbw = algbw * 2*(n-1)/n: nccl-tests' formula for all-reduce")
    sys.stdout.flush()

    common = ["--size", str(args.ranks), "--service", service, "--min-bytes", args.min_bytes,
              "--max-bytes", args.max_bytes, "--factor", args.factor, "--iters", args.iters,
              "--timeout", str(min(60.0, args.timeout / 2))]
    procs = []
    for rank in range(args.ranks):
        cmd = [str(binary), "--rank", str(rank)] + common
        if rank == 0 and args.json:
            cmd += ["--json", args.json]
        procs.append(subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
        if rank == 0:
            wait_listening(port, procs[0], min(30.0, args.timeout / 2))
            if procs[0].poll() is not None:
                break  # rank 0 failed to start: its stderr says why

    deadline = time.monotonic() + args.timeout
    outputs = [None] * len(procs)
    timed_out = False
    for i, p in enumerate(procs):
        try:
            outputs[i] = p.communicate(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            timed_out = True
            for q in procs:
                if q.poll() is None:
                    q.kill()
            outputs[i] = p.communicate()

    print(outputs[0][0], end="")
    failed = False
    for rank, (p, (_, err)) in enumerate(zip(procs, outputs)):
        if p.returncode != 0:
            failed = True
            print(f"bench_gloo: rank {rank} exited with {p.returncode}", file=sys.stderr)
        if err.strip():
            print(f"--- rank {rank} stderr ---\n{err.rstrip()}", file=sys.stderr)
    if timed_out:
        print(f"bench_gloo: killed the ranks after {args.timeout:g} s", file=sys.stderr)
    return 1 if failed or timed_out else 0


if __name__ == "__main__":
    sys.exit(main())
