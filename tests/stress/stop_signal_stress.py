#!/usr/bin/env python3
"""Stop-signal stress test (issue 25, part 2): stops real dtrain runs with
SIGINT, SIGTERM or SIGUSR1 at random moments (start-up, mid-step, during a
checkpoint write, during evaluation, during an all-reduce, during a ps push)
under one_device, towers, mirrored, collective (dtrain launch, 2 workers)
and sync parameter_server (launch: chief, 1 worker, 1 ps), and checks every
run:
  - it ends within --limit seconds of the signal (no lost signal, no hang);
  - the documented exit code: 75 (stopped; run the same command to resume),
    or the signal's default action only for a signal sent before dtrain's
    handler was installed (the shared libraries still loading: SigCgt in
    /proc/PID/status, read just before the signal is sent);
  - the last line says what stopped it (at step N, or before training started);
  - the latest checkpoint (model_dir/checkpoint) loads with Python's
    safetensors, and the step it names was saved by the stop (or there is none
    for a stop before training); no temporary file is left behind;
  - no sanitizer report (ASan, UBSan, LeakSanitizer, TSan) on stderr.
The moments inside checkpoint writes, evaluation, all-reduce and ps push are
hit by the DTRAIN_TEST_PAUSE hook (engine/thread_errors.hpp): the run pauses
there (300 ms) and prints "dtrain: test pause: <where>"; the signal goes at a
random point of the pause.

    python3 tests/stress/stop_signal_stress.py --runs 200 --dtrain build-asan/cli/dtrain
Exit status 0 when every run passed; a summary table and runs/stress/summary.json.
"""
import argparse
import collections
import json
import os
import pathlib
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

ROOT = pathlib.Path(__file__).resolve().parents[2]
SIGNALS = [signal.SIGINT, signal.SIGTERM, signal.SIGUSR1]
STRATEGIES = ["one_device", "towers", "mirrored", "collective", "parameter_server"]
SANITIZER = re.compile(r"ERROR: AddressSanitizer|runtime error:|ERROR: LeakSanitizer|WARNING: ThreadSanitizer|"
                       r"ERROR: ThreadSanitizer|UndefinedBehaviorSanitizer")


def moments_for(strategy):
    m = ["start-up", "mid-step", "checkpoint write"]
    if strategy in ("one_device", "towers", "mirrored"):
        m.append("evaluation")  # a cluster's chief evaluates only through an evaluator task
    if strategy == "collective":
        m.append("all_reduce")
    if strategy == "parameter_server":
        m.append("ps push")
    return m


def write_job(d, strategy):
    images = ROOT / "sample_configs/data/mnist-sample-train-images-idx3-ubyte.gz"
    labels = ROOT / "sample_configs/data/mnist-sample-train-labels-idx1-ubyte.gz"
    strat = {
        "one_device": "{type: one_device}",
        "towers": "{type: towers, devices: [cpu:0, cpu:1]}",
        "mirrored": "{type: mirrored, devices: [cpu:0, cpu:1]}",
        "collective": "{type: collective, communication: ring}",
        "parameter_server": "{type: parameter_server, mode: sync}",
    }[strategy]
    job = d / "job.yaml"
    job.write_text(f"""
model:
  input: {{shape: [28, 28, 1]}}
  layers:
    - {{type: flatten}}
    - {{type: dense, units: 32, activation: relu}}
    - {{type: dropout, rate: 0.1}}
    - {{type: dense, units: 10}}
  loss: sparse_softmax_cross_entropy
  metrics: [accuracy]
optimizer: {{type: adam, learning_rate: 0.001}}
strategy: {strat}
data:
  train: {{format: idx, images: {images}, labels: {labels}, take: 2000, batch_size: 32, shuffle: 2000}}
  eval: {{format: idx, images: {images}, labels: {labels}, skip: 9000, take: 200, batch_size: 100}}
run:
  max_steps: 1000000
  save_checkpoints_steps: 10
  keep_checkpoint_max: 3
  save_summary_steps: 10
  log_step_count_steps: 5
  seed: 7
eval: {{throttle_secs: 0}}
cluster: {{timeout_secs: 60}}
""")
    return job


def handler_installed(pid, sig):
    """Whether the process catches `sig` now (SigCgt of /proc/PID/status):
    before dtrain's first constructor runs (the shared libraries still
    loading) the signal has its default action, as documented."""
    try:
        for line in open(f"/proc/{pid}/status"):
            if line.startswith("SigCgt:"):
                return bool(int(line.split()[1], 16) & (1 << (sig - 1)))
    except OSError:
        pass
    return True


class Run:
    def __init__(self, args, idx, strategy, sig, moment, rng):
        self.args, self.idx, self.strategy, self.sig, self.moment = args, idx, strategy, sig, moment
        self.rng = rng
        self.dir = pathlib.Path(tempfile.mkdtemp(prefix=f"stress-{idx}-", dir=args.tmp))
        self.model_dir = self.dir / "run"
        self.lines = []
        self.cv = threading.Condition()

    def command(self, job):
        common = [str(job), "--model-dir", str(self.model_dir), "--log-format", "plain"]
        if self.strategy == "collective":
            return [self.args.dtrain, "launch", "--workers", "2"] + common
        if self.strategy == "parameter_server":
            return [self.args.dtrain, "launch", "--chief", "--workers", "1", "--ps", "1"] + common
        return [self.args.dtrain, "train"] + common

    def reader(self, stream):
        for line in stream:
            with self.cv:
                self.lines.append(line.rstrip("\n"))
                self.cv.notify_all()

    def wait_for(self, pattern, timeout):
        rx = re.compile(pattern)
        end = time.monotonic() + timeout
        with self.cv:
            seen = 0
            while time.monotonic() < end:
                for line in self.lines[seen:]:
                    if rx.search(line):
                        return True
                seen = len(self.lines)
                if self.proc.poll() is not None:
                    return False
                self.cv.wait(0.05)
        return False

    def go(self):
        job = write_job(self.dir, self.strategy)
        env = {k: v for k, v in os.environ.items() if k not in ("TF_CONFIG", "SLURM_PROCID", "SLURM_JOB_ID")}
        env.setdefault("OMP_NUM_THREADS", "1")
        pause = {"checkpoint write": "checkpoint write:300", "evaluation": "evaluation:300",
                 "all_reduce": "all_reduce:300", "ps push": "ps push:300"}.get(self.moment)
        if pause:
            env["DTRAIN_TEST_PAUSE"] = pause
        # A session of its own: a run that must be killed takes its tasks with it.
        self.proc = subprocess.Popen(self.command(job), cwd=self.dir, env=env, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE, text=True, errors="replace", start_new_session=True)
        t = threading.Thread(target=self.reader, args=(self.proc.stderr,), daemon=True)
        t.start()
        started = time.monotonic()
        detail = ""
        if self.moment == "start-up":
            delay = self.rng.choice([0.0, 0.005, 0.02, 0.05, 0.1, 0.2, 0.4, 0.8])
            time.sleep(delay)
            detail = f"{delay * 1000:.0f} ms after start"
        elif self.moment == "mid-step":
            if not self.wait_for(r"step \d+/", self.args.limit):
                return self.finish(started, "never reached a step")
            delay = self.rng.uniform(0, 0.5)
            time.sleep(delay)
            detail = f"{delay * 1000:.0f} ms after the first step line"
        else:
            # The k-th time the run reaches the point (k random), at a random point of the pause.
            k = self.rng.randint(1, 3)
            for _ in range(k):
                n = sum(1 for l in self.lines if f"test pause: {self.moment}" in l)
                if not self.wait_for_count(f"test pause: {self.moment}", n + 1, self.args.limit):
                    return self.finish(started, f"never reached {self.moment}")
            delay = self.rng.uniform(0, 0.25)
            time.sleep(delay)
            detail = f"pause {k}, +{delay * 1000:.0f} ms"
        self.signalled_at = time.monotonic() - started
        self.handler_installed = handler_installed(self.proc.pid, self.sig)
        self.proc.send_signal(self.sig)
        return self.finish(started, None, detail)

    def kill_all(self):
        """SIGKILL to the run's whole session (launch's tasks too)."""
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass

    def wait_for_count(self, text, count, timeout):
        end = time.monotonic() + timeout
        with self.cv:
            while time.monotonic() < end:
                if sum(1 for l in self.lines if text in l) >= count:
                    return True
                if self.proc.poll() is not None:
                    return False
                self.cv.wait(0.05)
        return False

    def finish(self, started, setup_problem, detail=""):
        problems = []
        if setup_problem:
            self.kill_all()
            problems.append(setup_problem)
        try:
            self.proc.wait(timeout=self.args.limit)
        except subprocess.TimeoutExpired:
            self.kill_all()
            self.proc.wait()
            problems.append(f"still running {self.args.limit} s after the signal (lost or hung)")
        time.sleep(0.1)
        text = "\n".join(self.lines)
        code = self.proc.returncode
        last = next((l for l in reversed(self.lines) if l.strip() and "test pause" not in l), "")
        outcome = "?"
        if not setup_problem and not problems:
            if code == -self.sig:
                outcome = "default action"
                if self.handler_installed:
                    problems.append(f"the signal's default action at {self.signalled_at:.3f} s, with dtrain's "
                                    "handler installed")
            elif code == 75:
                if "before training started" in text:
                    outcome = "stopped before training"
                elif re.search(rf"stopped by {self.sig.name} at step \d+", text):
                    outcome = "stopped after a step"
                else:
                    problems.append(f"exit 75 without the stop line (last: {last!r})")
            else:
                problems.append(f"exit code {code} (last: {last!r})")
        if SANITIZER.search(text):
            problems.append("sanitizer report: " + next(l for l in self.lines if SANITIZER.search(l)))
        problems += self.check_checkpoints(text, outcome)
        if not getattr(self, "handler_installed", True):
            detail += " (no handler yet)"
        return {"run": self.idx, "strategy": self.strategy, "signal": self.sig.name, "moment": self.moment,
                "detail": detail, "exit": code, "outcome": outcome, "problems": problems,
                "stderr_tail": text[-3000:] if problems else ""}

    def check_checkpoints(self, text, outcome):
        problems = []
        if not self.model_dir.exists():
            return problems if outcome != "stopped after a step" else ["no model_dir after a stop after a step"]
        temps = [p.name for p in self.model_dir.rglob("*.tmp-*")]
        if temps:
            problems.append(f"temporary files left: {temps}")
        index = self.model_dir / "checkpoint"
        ckpts = sorted(self.model_dir.glob("model.ckpt-*.safetensors"))
        if outcome == "stopped before training" and ckpts:
            problems.append(f"checkpoints after a stop before training: {[p.name for p in ckpts]}")
        if not index.exists():
            if outcome == "stopped after a step":
                problems.append("no checkpoint index after a stop after a step")
            return problems
        try:
            latest = json.loads(index.read_text())["latest"]
            from safetensors.numpy import load_file
            load_file(str(self.model_dir / latest))
        except Exception as e:  # noqa: BLE001 - any failure to read is the finding
            return problems + [f"latest checkpoint unreadable: {e}"]
        m = re.search(rf"stopped by {self.sig.name} at step (\d+)", text)
        if m and latest != f"model.ckpt-{m.group(1)}.safetensors":
            problems.append(f"stopped at step {m.group(1)} but the latest checkpoint is {latest}")
        return problems


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=200)
    ap.add_argument("--dtrain", default=str(ROOT / "build/cli/dtrain"))
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--limit", type=float, default=120, help="seconds a run may take to reach a moment or to end")
    ap.add_argument("--strategies", default=",".join(STRATEGIES))
    ap.add_argument("--moments", default="", help="only these moments (comma-separated), e.g. start-up")
    ap.add_argument("--out", default=str(ROOT / "runs/stress"))
    args = ap.parse_args()
    # The runs start with every stop signal at its default action, as from an
    # interactive shell or a scheduler: a background job of a script would
    # start with SIGINT ignored, which exec passes on, and a SIGINT that came
    # before dtrain's handler existed would then be discarded, not "lost".
    for sig in SIGNALS:
        if signal.getsignal(sig) == signal.SIG_IGN:
            signal.signal(sig, signal.default_int_handler if sig == signal.SIGINT else signal.SIG_DFL)
    args.dtrain = str(pathlib.Path(args.dtrain).resolve())  # the runs start in their own directories
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    args.tmp = tempfile.mkdtemp(prefix="dtrain-stress-")
    rng = random.Random(args.seed)
    strategies = args.strategies.split(",")
    plan = []
    # Every (strategy, signal, moment) at least once, then random ones.
    only = [m for m in args.moments.split(",") if m]
    pick = lambda s: [m for m in moments_for(s) if not only or m in only]  # noqa: E731
    for s in strategies:
        for sig in SIGNALS:
            for m in pick(s):
                plan.append((s, sig, m))
    rng.shuffle(plan)
    plan = plan[:args.runs]
    while len(plan) < args.runs:
        s = rng.choice(strategies)
        plan.append((s, rng.choice(SIGNALS), rng.choice(pick(s))))
    results = []
    t0 = time.monotonic()
    for i, (s, sig, m) in enumerate(plan):
        r = Run(args, i, s, sig, m, random.Random(rng.random())).go()
        results.append(r)
        status = "ok" if not r["problems"] else "FAILED: " + "; ".join(r["problems"])
        print(f"[{i + 1}/{len(plan)}] {s:16} {sig.name:7} {m:16} {r['detail']:28} exit {r['exit']:>4} "
              f"{r['outcome']:22} {status}", flush=True)
        if not r["problems"]:
            shutil.rmtree(pathlib.Path(args.tmp) / next(p for p in os.listdir(args.tmp) if p.startswith(f"stress-{i}-")),
                          ignore_errors=True)
    failed = [r for r in results if r["problems"]]
    table = collections.Counter((r["strategy"], r["signal"], r["outcome"]) for r in results)
    print(f"\n{len(results)} runs in {time.monotonic() - t0:.0f} s with {args.dtrain}: {len(failed)} failed")
    by = collections.defaultdict(collections.Counter)
    for r in results:
        by[(r["strategy"], r["signal"])][r["outcome"] if not r["problems"] else "FAILED"] += 1
    for (s, sig), c in sorted(by.items()):
        print(f"  {s:16} {sig:7} " + ", ".join(f"{k}: {v}" for k, v in sorted(c.items())))
    moments = collections.Counter(r["moment"] for r in results)
    print("  moments: " + ", ".join(f"{k}: {v}" for k, v in sorted(moments.items())))
    (out / "summary.json").write_text(json.dumps({"dtrain": args.dtrain, "runs": results,
                                                  "table": [list(k) + [v] for k, v in table.items()]}, indent=1))
    if not failed:
        shutil.rmtree(args.tmp, ignore_errors=True)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
