#!/usr/bin/env python3
"""The 100-kill soak of elastic training (issue 30): one `dtrain launch
--workers 4 --evaluator --max-restarts 1000` run of mnist_cnn (shuffle and
dropout on, run.deterministic, 16-row micro-batches, strategy.elastic
min_workers 2) loses a random worker to kill -9, again and again, until
--kills kills were made; then the run must finish by itself and:

  - every checkpoint in model_dir loads (none corrupted), every multiple of
    save_checkpoints_steps up to max_steps has one (none lost), and the
    checkpoint index names only files that exist;
  - the final checkpoint equals, bit for bit, the one of the same job run
    first without any kill.

The victims: any of the 4 workers, the chief included: launch starts a lost
worker again alone (it joins the running training). The chief (at first
worker 0) hosts the coordination service: when it is lost the lowest
surviving worker hosts a new one and takes over the chief's duties, and the
evaluator, which loses the service with it, is started again by launch and
goes on watching. The moments: a random one within a step or
two, one while the chief writes a checkpoint (the temporary file written,
not renamed yet: DTRAIN_TEST_PAUSE holds it there 40 ms and says so), or
while the evaluator evaluates (held 40 ms likewise). A kill waits until all
4 workers run and a checkpoint was saved since the last kill (the cluster
recovered and trained on).

    python3 bench/soak_elastic.py [--kills 100] [--steps 3000] [--strategy collective|parameter_server]
        [--seed 1] [--log soak.log]

Prints one line per kill, then the verdicts; exits 1 if any fails.
"""
import argparse
import json
import os
import random
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
from safetensors.numpy import load_file

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
from bench_restart import children  # noqa: E402 (launch's child processes)
WORKERS = 4
SAVE = 20


def command(model_dir, steps, strategy, faulted):
    args = [str(ROOT / "build/cli/dtrain"), "launch", "--workers", str(WORKERS),
            str(ROOT / "sample_configs/mnist_cnn_collective.yaml"), "--model-dir", str(model_dir),
            "--log-format", "plain"]
    if strategy == "parameter_server":
        args += ["--ps", "2", "--set", "strategy.type=parameter_server", "--set", "strategy.mode=sync"]
    args += ["--evaluator", "--max-restarts", "1000"] if faulted else ["--no-eval"]
    for s in [f"run.max_steps={steps}", f"run.save_checkpoints_steps={SAVE}", "run.keep_checkpoint_max=100000",
              "run.deterministic=true", "run.log_step_count_steps=100", "data.train.batch_size=16",
              "run.micro_batch_rows=16", "strategy.elastic.min_workers=2"]:
        args += ["--set", s]
    return args


def task_of(pid):
    try:
        env = open(f"/proc/{pid}/environ", "rb").read().split(b"\0")
    except (FileNotFoundError, ProcessLookupError):
        return None
    for v in env:
        if v.startswith(b"TF_CONFIG="):
            try:  # launch's own (empty) TF_CONFIG in a child not yet exec'd
                t = json.loads(v[len(b"TF_CONFIG="):])["task"]
            except (ValueError, KeyError):
                return None
            return t["type"], t["index"]
    return None


def workers_of(proc):
    out = {}
    for pid in children(proc.pid):
        t = task_of(pid)
        if t and t[0] == "worker":
            out[t[1]] = pid
    return out


def saved_steps(model_dir):
    steps = []
    for p in Path(model_dir).glob("model.ckpt-*.safetensors"):
        m = re.fullmatch(r"model\.ckpt-(\d+)\.safetensors", p.name)
        if m:
            steps.append(int(m.group(1)))
    return sorted(steps)


def env_for(faulted):
    env = dict(os.environ, TF_CONFIG="", SLURM_PROCID="", OMP_NUM_THREADS="1")
    if faulted:
        env["DTRAIN_TEST_PAUSE"] = "checkpoint write:40,evaluation:40"
    return env


def unfaulted_run(work, steps, strategy):
    model_dir = Path(work) / "unfaulted"
    t0 = time.monotonic()
    run = subprocess.run(command(model_dir, steps, strategy, False), cwd=ROOT, env=env_for(False),
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, timeout=3600)
    if run.returncode != 0:
        sys.exit("the unfaulted run failed:\n" + run.stderr[-3000:])
    print(f"unfaulted run: {steps} steps in {time.monotonic() - t0:.0f} s", flush=True)
    return load_file(str(model_dir / f"model.ckpt-{steps}.safetensors"))


def current_chief(lines):
    """The worker that holds the chief's duties now: worker 0 at first, then
    the last that took them over."""
    chief = 0
    for _, l in lines:
        m = re.match(r"\[worker (\d)\] elastic: this worker is the chief from step", l)
        if m:
            chief = int(m.group(1))
    return chief


def soak(work, steps, strategy, kills, rng, log_path):
    model_dir = Path(work) / "soak"
    proc = subprocess.Popen(command(model_dir, steps, strategy, True), cwd=ROOT, env=env_for(True),
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    lines = []
    reader = threading.Thread(target=lambda: [lines.append((time.monotonic(), l)) for l in proc.stderr])
    reader.start()
    made = []
    t0 = time.monotonic()
    last_saved = -1
    try:
        while len(made) < kills:
            # The cluster recovered: all workers up, and a checkpoint since the last kill.
            deadline = time.monotonic() + 300
            while True:
                if proc.poll() is not None:
                    break
                saved = saved_steps(model_dir)
                if len(workers_of(proc)) == WORKERS and saved and saved[-1] != last_saved:
                    break
                if time.monotonic() > deadline:
                    raise RuntimeError("no recovery within 300 s after kill %d" % len(made))
                time.sleep(0.01)
            if proc.poll() is not None:
                break
            victim = rng.randrange(WORKERS)
            moment = rng.choice(["step", "step", "checkpoint write", "evaluation"])
            seen = len(lines)
            wait_until = time.monotonic() + 20
            if moment == "step":
                time.sleep(rng.uniform(0.0, 0.1))
            else:
                # The next pause at that moment (the chief's write, the evaluator's evaluation).
                while time.monotonic() < wait_until and proc.poll() is None:
                    if any(f"test pause: {moment}" in l for _, l in lines[seen:]):
                        break
                    time.sleep(0.002)
                else:
                    moment = "step (no " + moment + " came)"
            pid = workers_of(proc).get(victim)
            if pid is None:
                continue
            last_saved = saved_steps(model_dir)[-1]
            chief = current_chief(lines)
            os.kill(pid, signal.SIGKILL)
            made.append((victim, moment, victim == chief))
            print(f"kill {len(made):3d}: worker {victim}{' (the chief)' if victim == chief else ''} at a {moment} "
                  f"(latest checkpoint {last_saved}, {time.monotonic() - t0:.0f} s)", flush=True)
        code = proc.wait(timeout=1800)
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=60)
        reader.join()
        if log_path:
            with open(log_path, "w") as f:
                f.writelines(f"{t - t0:9.3f} {l}" for t, l in lines)
    return code, made, model_dir, "".join(l for _, l in lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kills", type=int, default=100)
    ap.add_argument("--steps", type=int, default=3000)
    ap.add_argument("--strategy", choices=["collective", "parameter_server"], default="collective")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--log", help="the soak run's output, seconds from its start")
    a = ap.parse_args()
    rng = random.Random(a.seed)
    failures = []
    with tempfile.TemporaryDirectory() as work:
        expected = unfaulted_run(work, a.steps, a.strategy)
        t0 = time.monotonic()
        code, made, model_dir, err = soak(work, a.steps, a.strategy, a.kills, rng, a.log)
        took = time.monotonic() - t0
        if code != 0:
            failures.append(f"the soak run exited with {code}: {err[-2000:]}")
        if len(made) < a.kills:
            failures.append(f"only {len(made)} of {a.kills} kills were made before the run ended")
        # None corrupted, none lost.
        steps = saved_steps(model_dir)
        corrupted = []
        for s in steps:
            try:
                load_file(str(model_dir / f"model.ckpt-{s}.safetensors"))
            except Exception as e:  # noqa: BLE001 (any failure to read is a corrupted checkpoint)
                corrupted.append(f"{s}: {e}")
        missing = sorted(set(range(SAVE, a.steps + 1, SAVE)) - set(steps))
        index = json.loads((model_dir / "checkpoint").read_text()) if (model_dir / "checkpoint").exists() else {}
        named = [v for v in json.dumps(index).split('"') if v.endswith(".safetensors")]
        dangling = [n for n in named if not (model_dir / Path(n).name).exists()]
        if corrupted:
            failures.append(f"{len(corrupted)} corrupted checkpoints: {corrupted[:5]}")
        if missing:
            failures.append(f"{len(missing)} checkpoints lost: steps {missing[:10]}")
        if dangling:
            failures.append(f"the checkpoint index names {len(dangling)} missing files: {dangling[:5]}")
        same = False
        if a.steps in steps:
            final = load_file(str(model_dir / f"model.ckpt-{a.steps}.safetensors"))
            same = final.keys() == expected.keys() and all(np.array_equal(final[k], expected[k]) for k in final)
        if not same:
            failures.append("the final checkpoint differs from the unfaulted run's")
        chief = sum(1 for _, _, c in made if c)
        by_moment = {}
        for _, m, _ in made:
            by_moment[m] = by_moment.get(m, 0) + 1
        restarts = len(re.findall(r"^dtrain launch: restarting ", err, re.M))
        regroups = len(re.findall(r"^\[worker \d\] elastic: ", err, re.M))
        took_over = len(re.findall(r"^\[worker \d\] elastic: this worker is the chief from step", err, re.M))
        everything = len(re.findall(r"^dtrain launch: .*restarting every task", err, re.M))
        print(f"soak: {len(made)} kills in {took:.0f} s ({chief} of the chief, {len(made) - chief} of the other workers; "
              f"moments {by_moment}); launch restarted {restarts} times ({everything} of them every task); "
              f"{took_over} times a worker took over the chief's duties; {regroups} elastic lines; "
              f"{len(steps)} checkpoints, {len(corrupted)} corrupted, {len(missing)} lost; final checkpoint "
              f"{'bit for bit the unfaulted run' if same else 'DIFFERS'}")
    if failures:
        print("FAILED:\n  " + "\n  ".join(failures))
        sys.exit(1)
    print("ok")


if __name__ == "__main__":
    main()
