#!/usr/bin/env python3
"""CPU model benchmark: dtrain against PyTorch eager on ResNet-20 (batch 128,
32x32x3 synthetic images, SGD momentum 0.9; sample_configs/resnet20_synthetic.yaml
on one_device, where its sync batch norm is plain batch norm) and a transformer
classifier (bench/configs/transformer_bench.yaml: 2 encoder layers, d_model 64,
4 heads, 64 tokens, batch 128, Adam, on synthetic is_sorted sequences), each
with the same model, batch, optimizer and thread count in one run. The PyTorch
twins are in bench/torch_models.py.

Before anything is timed, each model is verified: dtrain's trainable parameter
count (`dtrain validate --graph`) equals PyTorch's and the expected one, both
sides' first-step loss is within a factor --first-loss-band of ln(classes) (a
run of dtrain logging every step; the sides start from different random
weights, so this catches a wrong head or labels, not a subtle difference), and in every timed run the loss went down (last log window below
--train-factor x the first).

dtrain and PyTorch alternate (dtrain, torch, dtrain, torch, ...) for --rounds
rounds per model, so a drift in machine speed hits both alike; the speed ratio
is taken per round, and the report gives its median and spread (min..max).
Each run is its own process: peak memory is that process's maximum RSS
(wait4); examples/s covers only the steps after --warmup (dtrain: its JSON step
log, whose windows exclude start-up and logging; torch: timed in the process).

    python3 bench/bench_models.py --python /work/venv-torch/bin/python --json-out models.json
    python3 bench/bench_models.py --python /work/venv-torch/bin/python --models transformer --steps 20 --rounds 1
"""
import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_precision import BenchError, resolve_log_every, run_and_write, baseline_rss, fmt_spread, machine_info, run_peak_rss, spread, \
    wait_for_binary  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]

# One row per model. dtrain reads the job file with `sets` applied; torch_args
# give bench/torch_models.py the same model, data size and optimizer; params is
# the trainable parameter count both must have (Keras' ResNet-20 count for it).
MODELS = {
    "resnet20": {
        "config": ROOT / "sample_configs" / "resnet20_synthetic.yaml",
        "batch": 128, "classes": 10, "params": 272474, "lr": 0.05, "examples": 1024,
        "sets": ["strategy.type=one_device", "optimizer.type=sgd", "optimizer.momentum=0.9"],
        "lr_set": "optimizer.learning_rate", "batch_set": "data.train.batch_size",
        "examples_set": "data.train.synthetic.num_examples",
        "torch_args": [],
        "describe": "ResNet-20, 32x32x3 synthetic, SGD momentum 0.9 (lr 0.05)",
    },
    "transformer": {
        "config": ROOT / "bench" / "configs" / "transformer_bench.yaml",
        "batch": 128, "classes": 2, "params": 72194, "lr": 0.001, "examples": 4096,
        "sets": ["strategy.type=one_device"],
        "lr_set": "optimizer.learning_rate", "batch_set": "data.train.batch_size",
        "examples_set": "data.train.synthetic_sequence.num_examples",
        "torch_args": ["--vocab", "16", "--seq-len", "64", "--d-model", "64", "--heads", "4", "--ff", "128",
                       "--layers", "2"],
        "describe": "transformer classifier, 2 layers, d_model 64, 4 heads, 64 tokens, is_sorted, Adam (lr 0.001)",
    },
}
DTRAIN, TORCH = "dtrain", "torch"
SPEED_TARGET = 1.5  # dtrain examples/s >= 1.5x PyTorch's, at lower peak memory


def dtrain_cmd(a, m, model_dir, max_steps, log_every):
    cmd = [a.dtrain, "train", str(m["config"]), "--model-dir", model_dir, "--no-eval", "--log-format", "json",
           "--set", f"run.max_steps={max_steps}", "--set", f"run.log_step_count_steps={log_every}",
           "--set", "run.save_summary_steps=1000000", "--set", "run.save_checkpoints_steps=1000000",
           "--set", "optimizer.schedule.type=constant"]
    for s in dtrain_sets(m):
        cmd += ["--set", s]
    return a.pin + cmd


def dtrain_sets(m):
    return m["sets"] + [f"{m['batch_set']}={m['batch']}", f"{m['lr_set']}={m['lr']}",
                        f"{m['examples_set']}={m['examples']}"]


def torch_cmd(a, name, m, steps, warmup, log_every):
    return a.pin + [a.python, str(ROOT / "bench" / "torch_models.py"), "--model", name, "--steps", str(steps),
                    "--warmup", str(warmup), "--batch", str(m["batch"]), "--threads", str(a.threads),
                    "--lr", str(m["lr"]), "--examples", str(m["examples"]), "--log-every", str(log_every),
                    *m["torch_args"]]


def run_dtrain(a, name, m, env, max_steps, log_every):
    """One dtrain training run; returns (step events, info messages, peak MiB, wall s, CPU s, binary mtime)."""
    mtime = wait_for_binary(a.dtrain, a.wait_binary)
    with tempfile.TemporaryDirectory(prefix="bench_models_") as d:
        cmd = dtrain_cmd(a, m, d, max_steps, log_every)
        rc, _, err, rss, wall, cpu = run_peak_rss(cmd, env, a.timeout)
    if rc != 0:
        raise BenchError(f"dtrain {name} failed (exit {rc}):\n  {' '.join(cmd)}\n{err[-3000:]}")
    events = [json.loads(line) for line in err.splitlines() if line.startswith("{")]
    steps = [e for e in events if e.get("event") == "step"]
    if not steps:
        raise BenchError(f"dtrain {name}: no step events in its log:\n{err[-2000:]}")
    return steps, [e["message"] for e in events if e.get("event") == "info"], rss, wall, cpu, mtime


def bench_dtrain(a, name, m, env):
    steps, info, rss, wall, cpu, mtime = run_dtrain(a, name, m, env, a.warmup + a.steps, a.log_every)
    timed = [e for e in steps if e["step"] > a.warmup]
    want = a.steps // a.log_every
    if len(timed) != want or timed[-1]["step"] != a.warmup + a.steps:
        raise BenchError(f"dtrain {name}: expected {want} timed log windows ending at step {a.warmup + a.steps}, "
                         f"got {[e['step'] for e in timed]}")
    # examples/s over the timed windows: total examples / total time (each
    # window's time is log_every / steps_per_sec; start-up and logging are outside).
    secs = sum(a.log_every / e["steps_per_sec"] for e in timed)
    return {"examples_per_sec": want * a.log_every * m["batch"] / secs, "timed_seconds": secs,
            "window_losses": [[e["step"], e["loss"]] for e in steps], "peak_mib": rss, "wall_seconds": wall,
            "cpu_seconds": cpu, "dtrain_mtime": mtime, "info": info,
            "input_wait_fraction": statistics.fmean(e.get("input_wait_fraction", 0.0) for e in timed)}


def bench_torch(a, name, m, env, steps=None, warmup=None):
    cmd = torch_cmd(a, name, m, a.steps if steps is None else steps, a.warmup if warmup is None else warmup,
                    a.log_every)
    rc, out, err, rss, wall, cpu = run_peak_rss(cmd, env, a.timeout)
    if rc != 0:
        raise BenchError(f"torch {name} failed (exit {rc}):\n  {' '.join(cmd)}\n{err[-3000:]}")
    r = json.loads(out.strip().splitlines()[-1])
    if r["num_threads"] != a.threads:
        raise BenchError(f"torch {name}: ran {r['num_threads']} threads, not {a.threads}")
    r.update(peak_mib=rss, wall_seconds=wall, cpu_seconds=cpu)
    return r


def dtrain_trainable_params(a, m, env):
    """The `(N trainable)` of the graph's last line in `dtrain validate --graph` (its memory plan follows)."""
    cmd = [a.dtrain, "validate", "--graph", str(m["config"])]
    for s in dtrain_sets(m):
        cmd += ["--set", s]
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if p.returncode != 0:
        raise BenchError(f"`{' '.join(cmd)}` failed (exit {p.returncode}):\n{(p.stderr or p.stdout)[-2000:]}")
    last = p.stdout.split("\n\n")[0].strip().splitlines()[-1]
    try:  # "72 layers, 107 variables, 274042 parameters (272474 trainable)"
        return int(last.rsplit("(", 1)[1].split()[0])
    except (IndexError, ValueError):
        raise BenchError(f"cannot read the trainable parameter count from `{' '.join(cmd)}`: {last!r}") from None


def verify_model(a, name, m, env):
    """Before timing: equal parameter counts and a first-step loss near ln(classes) on both sides."""
    band = a.first_loss_band
    chance = math.log(m["classes"])
    d_params = dtrain_trainable_params(a, m, env)
    steps, *_ = run_dtrain(a, name, m, env, 2, 1)
    t = bench_torch(a, name, m, env, steps=1, warmup=1)
    check = {"trainable_params": {"expected": m["params"], DTRAIN: d_params, TORCH: t["trainable_params"]},
             "first_step_loss": {"chance": chance, DTRAIN: steps[0]["loss"], TORCH: t["first_step_loss"]},
             "band": band}
    if not d_params == t["trainable_params"] == m["params"]:
        raise BenchError(f"verification failed: {name} trainable parameters: dtrain {d_params}, torch "
                         f"{t['trainable_params']}, expected {m['params']}: the two are not the same model")
    for side, loss in [(DTRAIN, steps[0]["loss"]), (TORCH, t["first_step_loss"])]:
        if not (math.isfinite(loss) and chance / band <= loss <= chance * band):
            raise BenchError(f"verification failed: {side} {name} first-step loss {loss:.4f} is not within a factor "
                             f"{band} of ln({m['classes']}) = {chance:.4f}")
    print(f"verified {name}: {d_params} trainable parameters on both sides; first-step loss dtrain "
          f"{steps[0]['loss']:.4f}, torch {t['first_step_loss']:.4f} (ln {m['classes']} = {chance:.4f})",
          file=sys.stderr)
    return check


def verify_trained(a, side, name, r):
    """The loss went down: the last log window's mean loss is below train_factor x the first's."""
    losses = [l for _, l in r["window_losses"]]
    r["first_loss"], r["last_loss"] = losses[0], losses[-1]
    if not all(math.isfinite(l) for l in losses) or not losses[-1] < a.train_factor * losses[0]:
        raise BenchError(f"verification failed: {side} {name} did not train (window losses {losses}; the last "
                         f"must be below {a.train_factor} x the first)")


def print_report(a, result):
    info, summary = result["machine"], result["summary"]
    print(f"\nCPU training, {a.threads} threads both sides, {a.steps} timed steps after {a.warmup} warm-up, "
          f"{a.rounds} round(s) alternating dtrain and PyTorch eager")
    print(f"CPU: {info.get('cpu_model', '?')}; {info.get('cpu_count')} CPUs; PyTorch "
          f"{info.get('torch_version', '?')} (capability {info.get('cpu_capability', '?')}); "
          f"{info.get('dtrain_version', 'dtrain ?')}; pinned to {a.cpus or 'no CPU list'}; OMP_WAIT_POLICY "
          f"{a.omp_wait_policy}")
    base = info.get("baseline_peak_mib", {})
    loads = [r["load_average_after"] for r in result["runs"]]
    print(f"1-minute load average after each run {min(loads):.1f}..{max(loads):.1f}; start-up alone: dtrain "
          f"{base.get('dtrain', 0):.0f} MiB, python+torch {base.get('torch', 0):.0f} MiB peak RSS")
    print("examples/s and peak RSS: median (min..max) over rounds, [peak RSS above the side's start-up]; ratios "
          "taken per round\n")
    for name in a.models:
        s = summary[name]
        print(f"{name}: {MODELS[name]['describe']}, batch {MODELS[name]['batch']}, "
              f"{s['trainable_params']} trainable parameters")
        for side in (DTRAIN, TORCH):
            x = s["sides"][side]
            above = x["peak_mib"]["median"] - base.get(side, 0)
            print(f"  {side:<7} {fmt_spread(x['examples_per_sec'], 1):>26} ex/s  "
                  f"{fmt_spread(x['peak_mib']):>20} MiB [{above:>5.0f}]  loss {x['first_loss']:.3f} -> {x['last_loss']:.3f}")
        sp, mem = s["speed_ratio"], s["memory_ratio"]
        met = sp["median"] >= SPEED_TARGET and mem["max"] < 1.0
        print(f"  dtrain/torch examples/s {fmt_spread(sp, 2)}, peak RSS {fmt_spread(mem, 2)}: target "
              f">= {SPEED_TARGET}x at lower memory {'met' if met else 'NOT met'} (median speed, every round's RSS)")
    if a.rounds < 3:
        print(f"\n{a.rounds} round(s): a smoke run, no spread to speak of; measure with --rounds 3 or more")


def run_all(a, result):
    info = machine_info(a)
    result["machine"] = info
    # Same thread count for both: OpenMP (dtrain's oneDNN) and torch's
    # intra-op pool, which torch_models.py also sets with set_num_threads.
    env = dict(os.environ, OMP_NUM_THREADS=str(a.threads), MKL_NUM_THREADS=str(a.threads))
    env.pop("OMP_WAIT_POLICY", None)
    if a.omp_wait_policy != "default":
        env["OMP_WAIT_POLICY"] = a.omp_wait_policy
    info["baseline_peak_mib"] = baseline_rss(a, env)
    result["verification"] = {name: verify_model(a, name, MODELS[name], env) for name in a.models}
    runs = result["runs"]
    for name in a.models:
        m = MODELS[name]
        for rnd in range(1, a.rounds + 1):
            for side in (DTRAIN, TORCH):
                r = (bench_dtrain if side == DTRAIN else bench_torch)(a, name, m, env)
                verify_trained(a, side, name, r)
                if side == TORCH:
                    info.update({k: r[k] for k in ("torch_version", "cpu_capability")})
                r.update(model=name, side=side, round=rnd, load_average_after=os.getloadavg()[0])
                runs.append(r)
                print(f"{name:<11} round {rnd} {side:<6} {r['examples_per_sec']:>8.1f} ex/s  peak "
                      f"{r['peak_mib']:>6.0f} MiB  loss {r['first_loss']:.3f} -> {r['last_loss']:.3f}  "
                      f"(load {r['load_average_after']:.1f})", file=sys.stderr)
    if len({r["dtrain_mtime"] for r in runs if "dtrain_mtime" in r}) > 1:
        print(f"WARNING: {a.dtrain} was rebuilt during the benchmark; rounds mix builds", file=sys.stderr)
        result["warning"] = "dtrain binary changed during the benchmark"
    info["load_average_end"] = os.getloadavg()
    for name in a.models:
        by = {side: [r for r in runs if r["model"] == name and r["side"] == side] for side in (DTRAIN, TORCH)}
        result["summary"][name] = {
            "batch": MODELS[name]["batch"],
            "trainable_params": result["verification"][name]["trainable_params"][DTRAIN],
            "sides": {side: {"examples_per_sec": spread([r["examples_per_sec"] for r in rs]),
                             "peak_mib": spread([r["peak_mib"] for r in rs]),
                             "first_loss": statistics.median(r["first_loss"] for r in rs),
                             "last_loss": statistics.median(r["last_loss"] for r in rs)} for side, rs in by.items()},
            "speed_ratio": dict(spread(per := [d["examples_per_sec"] / t["examples_per_sec"]
                                               for d, t in zip(by[DTRAIN], by[TORCH])]), per_round=per,
                                target=SPEED_TARGET),
            "memory_ratio": dict(spread(mem := [d["peak_mib"] / t["peak_mib"] for d, t in zip(by[DTRAIN], by[TORCH])]),
                                 per_round=mem),
        }
    print_report(a, result)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--models", default=",".join(MODELS), help=f"comma-separated, of {', '.join(MODELS)} (default all)")
    p.add_argument("--steps", type=int, default=100, help="timed steps per run (default 100)")
    p.add_argument("--warmup", type=int, default=10, help="untimed steps before them (default 10)")
    p.add_argument("--rounds", type=int, default=3, help="dtrain/torch pairs per model (default 3; 1 for a smoke run)")
    p.add_argument("--threads", type=int, default=2, help="threads for both frameworks (default 2)")
    p.add_argument("--cpus", help="run both sides under `taskset -c CPUS` (e.g. 0,1)")
    p.add_argument("--omp-wait-policy", choices=["default", "active", "passive"], default="default",
                   help="OMP_WAIT_POLICY for both sides (default: unset, libgomp spins then sleeps). On a machine "
                        "shared with other work, spinning threads slow both sides several-fold: passive "
                        "measures less of the neighbours")
    p.add_argument("--log-every", type=int, default=0,
                   help="dtrain log window in steps; must divide --warmup and --steps (default: the largest such "
                        "number up to 10)")
    p.add_argument("--train-factor", type=float, default=0.8,
                   help="a run trained if its last log window's loss is below this x the first's (default 0.8)")
    p.add_argument("--first-loss-band", type=float, default=2.0,
                   help="first-step loss must be within this factor of ln(classes) (default 2: ResNet-20's glorot "
                        "head starts at 2.6..4 nats on 10 classes)")
    p.add_argument("--dtrain", default=str(ROOT / "build/cli/dtrain"))
    p.add_argument("--python", default=sys.executable, help="python with torch and numpy for the torch side")
    p.add_argument("--timeout", type=float, default=1800, help="seconds before one run is killed (default 1800)")
    p.add_argument("--wait-binary", type=float, default=600,
                   help="seconds to wait for a missing or changing dtrain binary (default 600)")
    p.add_argument("--json-out", help="write the full result (every run, verification, summaries, machine) here")
    a = p.parse_args()
    sys.stdout.reconfigure(line_buffering=True)  # keep the table and stderr's progress in order
    a.models = [s.strip() for s in a.models.split(",") if s.strip()]
    if unknown := [s for s in a.models if s not in MODELS]:
        p.error(f"--models: {', '.join(unknown)} not one of {', '.join(MODELS)}")
    a.dtrain = str(Path(a.dtrain).resolve())
    a.pin = ["taskset", "-c", a.cpus] if a.cpus else []
    if a.rounds < 1 or a.steps < 1 or a.warmup < 1 or a.threads < 1:
        p.error("--rounds, --steps, --warmup and --threads must be at least 1")
    resolve_log_every(p, a)
    run_and_write(a, run_all)


if __name__ == "__main__":
    main()
