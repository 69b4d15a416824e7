#!/usr/bin/env python3
"""CPU mixed-precision benchmark: dtrain float32, dtrain bfloat16 and PyTorch
eager under torch.autocast("cpu", dtype=torch.bfloat16) training mnist_cnn
(sample_configs/mnist_cnn.yaml and its twin in bench/torch_reference.py) with
the same batch, optimizer (Adam, constant learning rate) and thread count, in
one run on this machine.

The sides alternate (dtrain fp32, dtrain bf16, torch bf16, then again) for
--rounds rounds, so a drift in machine speed hits every side alike; each
round's three runs are adjacent, and the speed ratios are taken per round.
Each run is its own process: peak memory is that process's maximum RSS
(wait4), examples/s covers only the steps after --warmup (dtrain: from its
JSON step log; torch: timed in the process). Every run is verified before any
time is reported: its loss went down, PyTorch's conv/linear outputs were
bfloat16 under autocast, and dtrain bf16 ends within --loss-factor of dtrain
fp32's loss at the same step.

    python3 bench/bench_precision.py --python /work/venv-torch/bin/python
    python3 bench/bench_precision.py --python /work/venv-torch/bin/python --skip-bf16 --steps 60 --rounds 3

--skip-bf16 leaves dtrain bf16 out (for a dtrain without it); --bf16-set
names the job override that turns it on (default precision.compute=bfloat16).
"""
import argparse
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MODEL = "mnist_cnn"
CONFIG = ROOT / "sample_configs" / f"{MODEL}.yaml"

# Side names, in the order they alternate within a round.
FP32, BF16, TORCH_BF16, TORCH_FP32 = "dtrain-fp32", "dtrain-bf16", "torch-bf16", "torch-fp32"
LABEL = {FP32: "dtrain fp32", BF16: "dtrain bf16", TORCH_BF16: "torch bf16 (autocast)", TORCH_FP32: "torch fp32"}
# (name, numerator, denominator, target or None)
RATIOS = [("dtrain bf16 / dtrain fp32", BF16, FP32, 1.3),
          ("dtrain bf16 / torch bf16", BF16, TORCH_BF16, 1.5),
          ("dtrain fp32 / torch bf16", FP32, TORCH_BF16, None),
          ("torch bf16 / torch fp32", TORCH_BF16, TORCH_FP32, None)]


class BenchError(Exception):
    pass


def run_peak_rss(cmd, env, timeout):
    """Runs cmd to completion, reaping it with wait4 for its own peak RSS.
    Returns (exit code, stdout, stderr, peak MiB, wall seconds, CPU seconds)."""
    t0 = time.perf_counter()
    with tempfile.TemporaryFile("w+") as fo, tempfile.TemporaryFile("w+") as fe:
        proc = subprocess.Popen(cmd, stdout=fo, stderr=fe, text=True, env=env)
        timer = threading.Timer(timeout, proc.kill) if timeout else None
        if timer:
            timer.start()
        try:
            _, status, usage = os.wait4(proc.pid, 0)
        finally:
            if timer:
                timer.cancel()
        proc.returncode = os.waitstatus_to_exitcode(status)
        fo.seek(0)
        fe.seek(0)
        out, err = fo.read(), fe.read()
    return (proc.returncode, out, err, usage.ru_maxrss / 1024.0, time.perf_counter() - t0,
            usage.ru_utime + usage.ru_stime)


def wait_for_binary(path, patience):
    """dtrain may be being rebuilt by someone else: wait until it exists and
    has not changed for a few seconds."""
    deadline = time.monotonic() + patience
    while True:
        try:
            st = os.stat(path)
            if os.access(path, os.X_OK) and time.time() - st.st_mtime > 5:
                return st.st_mtime
        except FileNotFoundError:
            pass
        if time.monotonic() > deadline:
            raise BenchError(f"{path} is missing or still changing after {patience}s (is it being built?)")
        time.sleep(5)


def dtrain_cmd(a, batch, model_dir, extra_sets):
    cmd = [a.dtrain, "train", str(CONFIG), "--model-dir", model_dir, "--no-eval", "--log-format", "json",
           "--set", f"run.max_steps={a.warmup + a.steps}", "--set", f"run.log_step_count_steps={a.log_every}",
           "--set", "run.save_summary_steps=1000000", "--set", "run.save_checkpoints_steps=1000000",
           "--set", f"data.train.batch_size={batch}", "--set", "optimizer.schedule.type=constant"]
    for s in extra_sets:
        cmd += ["--set", s]
    return cmd


def bench_dtrain(a, side, batch, env):
    extra = a.bf16_set if side == BF16 else []
    attempts = 2
    for attempt in range(attempts):
        mtime = wait_for_binary(a.dtrain, a.wait_binary)
        with tempfile.TemporaryDirectory(prefix="bench_precision_") as d:
            cmd = dtrain_cmd(a, batch, d, extra)
            rc, _, err, rss, wall, cpu = run_peak_rss(cmd, env, a.timeout)
        if rc == 0:
            break
        # A relink under our feet shows up as a failed run; wait for it and try once more.
        relinked = not os.path.exists(a.dtrain) or os.stat(a.dtrain).st_mtime != mtime
        if not relinked or attempt == attempts - 1:
            raise BenchError(f"{LABEL[side]} batch {batch} failed (exit {rc}):\n  {' '.join(cmd)}\n{err[-3000:]}")
        print(f"  {a.dtrain} changed during the run; retrying", file=sys.stderr)
    events = [json.loads(line) for line in err.splitlines() if line.startswith("{")]
    steps = [e for e in events if e.get("event") == "step"]
    if not steps:
        raise BenchError(f"{LABEL[side]} batch {batch}: no step events in dtrain's log:\n{err[-2000:]}")
    timed = [e for e in steps if e["step"] > a.warmup]
    want = a.steps // a.log_every
    if len(timed) != want or timed[-1]["step"] != a.warmup + a.steps:
        raise BenchError(f"{LABEL[side]} batch {batch}: expected {want} timed log windows ending at step "
                         f"{a.warmup + a.steps}, got {[e['step'] for e in timed]}")
    # examples/s over the timed windows: total examples / total time (each
    # window's time is log_every / steps_per_sec; logging itself is outside).
    secs = sum(a.log_every / e["steps_per_sec"] for e in timed)
    return {"examples_per_sec": want * a.log_every * batch / secs, "timed_seconds": secs,
            "window_losses": [[e["step"], e["loss"]] for e in steps],
            "peak_mib": rss, "wall_seconds": wall, "cpu_seconds": cpu,
            "input_wait_fraction": statistics.fmean(e.get("input_wait_fraction", 0.0) for e in timed),
            "dtrain_mtime": mtime, "info": [e["message"] for e in events if e.get("event") == "info"]}


def bench_torch(a, side, batch, env):
    cmd = [a.python, str(ROOT / "bench" / "torch_reference.py"), "--model", MODEL, "--steps", str(a.steps),
           "--warmup", str(a.warmup), "--batch", str(batch), "--threads", str(a.threads), "--root", str(ROOT),
           "--autocast", "bf16" if side == TORCH_BF16 else "none", "--log-every", str(a.log_every)]
    rc, out, err, rss, wall, cpu = run_peak_rss(cmd, env, a.timeout)
    if rc != 0:
        raise BenchError(f"{LABEL[side]} batch {batch} failed (exit {rc}):\n  {' '.join(cmd)}\n{err[-3000:]}")
    r = json.loads(out.strip().splitlines()[-1])
    if "window_losses" not in r:
        raise BenchError(f"{a.python} ran an old bench/torch_reference.py without window_losses")
    want = "bfloat16" if side == TORCH_BF16 else "float32"
    wrong = {k: v for k, v in r["layer_output_dtypes"].items() if v != want}
    if wrong or not r["layer_output_dtypes"]:
        raise BenchError(f"{LABEL[side]}: conv/linear outputs should be {want}, got {r['layer_output_dtypes']}")
    if r["num_threads"] != a.threads:
        raise BenchError(f"{LABEL[side]}: torch ran {r['num_threads']} threads, not {a.threads}")
    r.update(peak_mib=rss, wall_seconds=wall, cpu_seconds=cpu)
    return r


def verify_trained(side, batch, r):
    """The loss went down: the last log window's mean loss is below 0.8x the first's."""
    losses = [l for _, l in r["window_losses"]]
    first, last = losses[0], losses[-1]
    r["first_loss"], r["last_loss"] = first, last
    if not all(math.isfinite(l) for l in losses) or not last < 0.8 * first:
        raise BenchError(f"verification failed: {LABEL[side]} batch {batch} did not train "
                         f"(window losses {losses})")


def verify_bf16_tracks_fp32(batch, rnd, fp32, bf16, factor):
    """dtrain bf16's loss at the last logged steps is within factor of fp32's at the same steps."""
    a, b = dict(map(tuple, fp32["window_losses"])), dict(map(tuple, bf16["window_losses"]))
    if a == b:
        raise BenchError(f"round {rnd} batch {batch}: dtrain bf16's losses are bit-identical to fp32's at every "
                         f"logged step, so the bf16 override seems to have had no effect")
    common = sorted(set(a) & set(b))[-3:]  # mean of the last three windows: less noise than one
    if not common:
        raise BenchError(f"dtrain fp32 and bf16 batch {batch} logged no common steps")
    la, lb = statistics.fmean(a[s] for s in common), statistics.fmean(b[s] for s in common)
    ratio = lb / la
    check = {"steps": common, "fp32_loss": la, "bf16_loss": lb, "ratio": ratio, "factor": factor}
    if not (1 / factor <= ratio <= factor):
        raise BenchError(f"verification failed: round {rnd} batch {batch}: dtrain bf16 loss {lb:.4f} vs fp32 "
                         f"{la:.4f} at steps {common} (ratio {ratio:.2f}, allowed 1/{factor}..{factor})")
    return check


def bf16_available(a):
    wait_for_binary(a.dtrain, a.wait_binary)
    cmd = [a.dtrain, "validate", str(CONFIG)]
    for s in a.bf16_set:
        cmd += ["--set", s]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        return False, (p.stderr or p.stdout).strip()[-500:]
    if "bfloat16" not in p.stdout:
        print(f"warning: `{' '.join(cmd)}` accepted the override but its resolved job does not mention "
              f"bfloat16", file=sys.stderr)
    return True, ""


def baseline_rss(a, env):
    """Peak RSS of each side's process doing nothing but start: dtrain printing
    its version, python importing torch and numpy (the CUDA-enabled wheel maps
    its GPU libraries too). Context for the peak RSS columns."""
    out = {}
    for name, cmd in [("dtrain", [a.dtrain, "version"]), ("torch", [a.python, "-c", "import numpy, torch"])]:
        rc, _, err, rss, _, _ = run_peak_rss(cmd, env, a.timeout)
        if rc != 0:
            hint = "; pass --python with a python that has torch and numpy" if name == "torch" else ""
            raise BenchError(f"`{' '.join(cmd)}` failed (exit {rc}){hint}:\n{err[-2000:]}")
        out[name] = rss
    return out


def spread(values):
    return {"median": statistics.median(values), "min": min(values), "max": max(values), "n": len(values)}


def machine_info(a):
    info = {"platform": platform.platform(), "cpu_count": os.cpu_count(), "load_average_start": os.getloadavg()}
    try:
        cpu = Path("/proc/cpuinfo").read_text()
        info["cpu_model"] = next(l.split(":", 1)[1].strip() for l in cpu.splitlines() if l.startswith("model name"))
        flags = next(l.split(":", 1)[1].split() for l in cpu.splitlines() if l.startswith("flags"))
        info["cpu_bf16_flags"] = sorted(f for f in flags if "bf16" in f)
    except (OSError, StopIteration):
        pass
    try:
        info["dtrain_version"] = subprocess.run([a.dtrain, "version"], capture_output=True, text=True).stdout.strip()
        g = lambda *c: subprocess.run(["git", "-C", str(ROOT), *c], capture_output=True, text=True).stdout.strip()
        info["git_head"] = g("rev-parse", "HEAD")
        info["git_dirty"] = bool(g("status", "--porcelain", "--untracked-files=no"))
    except OSError:
        pass
    return info


def fmt_spread(s, digits=0):
    return f"{s['median']:.{digits}f} ({s['min']:.{digits}f}..{s['max']:.{digits}f})"


def print_report(a, sides, runs, summary, info, torch_info):
    cpu = info.get("cpu_model", "?")
    flags = ",".join(info.get("cpu_bf16_flags", [])) or "no bf16 flags"
    print(f"\n{MODEL} CPU training, {a.threads} threads, Adam (constant lr), {a.steps} timed steps after "
          f"{a.warmup} warm-up, {a.rounds} rounds alternating {', '.join(LABEL[s] for s in sides)}")
    print(f"CPU: {cpu} ({flags}); PyTorch {torch_info.get('torch_version', '?')} "
          f"(capability {torch_info.get('cpu_capability', '?')}); {info.get('dtrain_version', 'dtrain ?')}")
    base = info.get("baseline_peak_mib", {})
    loads = [r["load_average_after"] for r in runs]
    print(f"{info.get('cpu_count')} CPUs; 1-minute load average after each run {min(loads):.1f}..{max(loads):.1f} "
          f"(other work on the machine slows every side, not necessarily alike)")
    print("examples/s: median (min..max) over rounds; peak RSS: median (max) of the side's process "
          f"(start-up alone: dtrain {base.get('dtrain', 0):.0f} MiB, python+torch {base.get('torch', 0):.0f} MiB)\n")
    print(f"{'batch':>5}  {'side':<22} {'examples/s':>24} {'peak RSS MiB':>16}  {'loss (median over rounds)':<24}")
    for batch in a.batches:
        for side in sides:
            s = summary[str(batch)]["sides"][side]
            rss = f"{s['peak_mib']['median']:.0f} ({s['peak_mib']['max']:.0f})"
            print(f"{batch:>5}  {LABEL[side]:<22} {fmt_spread(s['examples_per_sec']):>24} {rss:>16}  "
                  f"{s['first_loss']:.3f} -> {s['last_loss']:.3f}")
    print("\nper-round speed ratios: median (min..max)")
    print(f"{'batch':>5}  {'ratio':<26} {'value':>20}  target")
    for batch in a.batches:
        for name, r in summary[str(batch)]["ratios"].items():
            tgt = r["target"]
            verdict = "" if tgt is None else f">= {tgt}: {'met' if r['median'] >= tgt else 'NOT met'} (median)"
            print(f"{batch:>5}  {name:<26} {fmt_spread(r, 2):>20}  {verdict}")
    checks = [c for b in a.batches for c in summary[str(b)].get("bf16_loss_checks", [])]
    if checks:
        worst = max(checks, key=lambda c: abs(math.log(c["ratio"])))
        print(f"\ndtrain bf16 vs fp32 loss at the same steps (mean of last 3 log windows): worst ratio "
              f"{worst['ratio']:.3f} (allowed 1/{a.loss_factor}..{a.loss_factor}) over {len(checks)} checks")
    elif BF16 not in sides:
        print("\ndtrain bf16 skipped (--skip-bf16): only its fp32 and the torch side were measured")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--steps", type=int, default=200, help="timed steps per run (default 200)")
    p.add_argument("--warmup", type=int, default=20, help="untimed steps before them (default 20)")
    p.add_argument("--rounds", type=int, default=3, help="rounds of alternating runs (at least 3)")
    p.add_argument("--batches", default="64,256", help="comma-separated batch sizes (default 64,256)")
    p.add_argument("--threads", type=int, default=2, help="threads for both frameworks (default 2)")
    p.add_argument("--dtrain", default=str(ROOT / "build/cli/dtrain"))
    p.add_argument("--python", default=sys.executable, help="python with torch and numpy for the torch side")
    p.add_argument("--skip-bf16", action="store_true", help="leave dtrain bf16 out (dtrain lacks it)")
    p.add_argument("--bf16-set", action="append", metavar="KEY=VALUE",
                   help="job override(s) that turn dtrain's bf16 on (default precision.compute=bfloat16)")
    p.add_argument("--torch-fp32", action="store_true", help="also run PyTorch without autocast, for context")
    p.add_argument("--loss-factor", type=float, default=1.5,
                   help="dtrain bf16 must end within this factor of fp32's loss at the same step (default 1.5)")
    p.add_argument("--log-every", type=int, default=0,
                   help="dtrain log window in steps; must divide --warmup and --steps (default: the largest "
                        "such number up to 10)")
    p.add_argument("--timeout", type=float, default=1800, help="seconds before one run is killed (default 1800)")
    p.add_argument("--wait-binary", type=float, default=600,
                   help="seconds to wait for a missing or changing dtrain binary (default 600)")
    p.add_argument("--json-out", help="write the full result (every run, summaries, machine) here")
    a = p.parse_args()
    sys.stdout.reconfigure(line_buffering=True)  # keep the table and stderr's progress in order
    a.batches = [int(b) for b in a.batches.split(",") if b.strip()]
    a.bf16_set = a.bf16_set or ["precision.compute=bfloat16"]
    a.dtrain = str(Path(a.dtrain).resolve())
    if a.rounds < 3:
        p.error("--rounds must be at least 3")
    if a.steps < 1 or a.warmup < 0 or a.threads < 1 or not a.batches:
        p.error("--steps >= 1, --warmup >= 0, --threads >= 1 and at least one batch size")
    resolve_log_every(p, a)
    run_and_write(a, run_all)


def resolve_log_every(p, a):
    """--log-every 0: the largest divisor (<= 10) of --steps and --warmup; any
    value must divide both, so that warm-up windows are left out of timing."""
    if a.log_every == 0:
        a.log_every = max(d for d in range(1, 11) if a.steps % d == 0 and a.warmup % d == 0)
    if a.steps % a.log_every or a.warmup % a.log_every:
        p.error(f"--log-every {a.log_every} must divide --steps and --warmup so warm-up windows are excluded")
    if a.steps // a.log_every < 2:
        p.error("--steps must span at least two log windows")


def run_and_write(a, run):
    """run(a, result), then result as JSON to --json-out, also when it fails."""
    result = {"args": {k: v for k, v in vars(a).items()}, "runs": [], "summary": {}}
    try:
        run(a, result)
    except BenchError as e:
        result["error"] = str(e)
        write_json(a, result)
        sys.exit(str(e))
    write_json(a, result)


def write_json(a, result):
    if a.json_out:
        Path(a.json_out).write_text(json.dumps(result, indent=1, default=str) + "\n")
        print(f"\nwrote {a.json_out}")


def run_all(a, result):
    info = machine_info(a)
    result["machine"] = info
    sides = [FP32, BF16, TORCH_BF16]
    if a.skip_bf16:
        sides.remove(BF16)
    else:
        ok, why = bf16_available(a)
        if not ok:
            raise BenchError(f"dtrain has no bf16 yet ({why}); pass --skip-bf16 to benchmark without it")
    if a.torch_fp32:
        sides.append(TORCH_FP32)
    result["sides"] = sides
    # Same thread count for both frameworks: OpenMP for dtrain (and torch's
    # intra-op pool, which torch_reference.py also sets with set_num_threads).
    env = dict(os.environ, OMP_NUM_THREADS=str(a.threads), MKL_NUM_THREADS=str(a.threads))
    print(f"{len(sides)} sides x {len(a.batches)} batches x {a.rounds} rounds = "
          f"{len(sides) * len(a.batches) * a.rounds} runs; log window {a.log_every} steps", file=sys.stderr)
    info["baseline_peak_mib"] = baseline_rss(a, env)
    torch_info = {}
    runs = result["runs"]
    for rnd in range(1, a.rounds + 1):
        for batch in a.batches:
            round_runs = {}
            for side in sides:
                r = (bench_torch if side.startswith("torch") else bench_dtrain)(a, side, batch, env)
                verify_trained(side, batch, r)
                if side.startswith("torch"):
                    torch_info = {k: r[k] for k in ("torch_version", "cpu_capability")}
                r.update(side=side, batch=batch, round=rnd, load_average_after=os.getloadavg()[0])
                runs.append(r)
                round_runs[side] = r
                print(f"round {rnd} batch {batch:>4} {LABEL[side]:<22} {r['examples_per_sec']:>8.1f} ex/s  "
                      f"peak {r['peak_mib']:>6.0f} MiB  loss {r['first_loss']:.3f} -> {r['last_loss']:.3f}  "
                      f"(load {r['load_average_after']:.1f})", file=sys.stderr)
            if BF16 in round_runs:
                check = verify_bf16_tracks_fp32(batch, rnd, round_runs[FP32], round_runs[BF16], a.loss_factor)
                check["round"] = rnd
                result.setdefault("bf16_loss_checks", {}).setdefault(str(batch), []).append(check)
    mtimes = {r["dtrain_mtime"] for r in runs if "dtrain_mtime" in r}
    if len(mtimes) > 1:
        print(f"WARNING: {a.dtrain} was rebuilt during the benchmark; rounds mix builds", file=sys.stderr)
        result["warning"] = "dtrain binary changed during the benchmark"
    info["load_average_end"] = os.getloadavg()
    info.update(torch_info)

    summary = result["summary"]
    for batch in a.batches:
        mine = [r for r in runs if r["batch"] == batch]
        by_side = {s: [r for r in mine if r["side"] == s] for s in sides}
        sb = {"sides": {}, "ratios": {}}
        for s, rs in by_side.items():
            sb["sides"][s] = {"examples_per_sec": spread([r["examples_per_sec"] for r in rs]),
                              "peak_mib": spread([r["peak_mib"] for r in rs]),
                              "first_loss": statistics.median(r["first_loss"] for r in rs),
                              "last_loss": statistics.median(r["last_loss"] for r in rs)}
        for name, num, den, target in RATIOS:
            if num in sides and den in sides:
                per_round = [n["examples_per_sec"] / d["examples_per_sec"]
                             for n, d in zip(by_side[num], by_side[den])]
                sb["ratios"][name] = dict(spread(per_round), per_round=per_round, target=target)
        sb["bf16_loss_checks"] = result.get("bf16_loss_checks", {}).get(str(batch), [])
        summary[str(batch)] = sb
    print_report(a, sides, runs, summary, info, torch_info)


if __name__ == "__main__":
    main()
