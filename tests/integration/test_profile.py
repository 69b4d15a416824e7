"""run.profile through the real binary: the trace of an mnist_cnn run is valid
Chrome trace JSON (Trace Event Format), every step's top-level phases sum to
within 5% of the step's measured span, the per-phase table is printed at the
end of the window, and a 2-worker collective run records its all-reduce
buckets on the communication thread."""
import json
import re

from conftest import SOURCE_ROOT, run_dtrain

SAMPLE = SOURCE_ROOT / "sample_configs/mnist_cnn.yaml"
COLLECTIVE = SOURCE_ROOT / "sample_configs/mnist_cnn_collective.yaml"
# The step span's direct children on the main thread.
TOP_LEVEL = {"input", "sync", "compute", "summaries", "checkpoint", "eval"}


def load_trace(path):
    with open(path) as f:
        trace = json.load(f)
    events = trace["traceEvents"]
    names = {e["tid"]: e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "thread_name"}
    complete = [e for e in events if e["ph"] == "X"]
    assert complete and {e["ph"] for e in events} == {"M", "X"}
    for e in complete:
        assert set(e) >= {"name", "cat", "ph", "ts", "dur", "pid", "tid", "args"}, e
        assert isinstance(e["ts"], (int, float)) and e["dur"] >= 0
        assert e["tid"] in names, e  # every track is named
    return complete, names


def within(child, parent):
    return parent["ts"] <= child["ts"] and child["ts"] + child["dur"] <= parent["ts"] + parent["dur"] + 1e-3


def check_steps(events, main_tid, first, last):
    steps = sorted((e for e in events if e["cat"] == "step"), key=lambda e: e["ts"])
    assert [s["args"]["step"] for s in steps] == list(range(first, last + 1))
    for s in steps:
        assert s["tid"] == main_tid
        top = [e for e in events if e["tid"] == main_tid and e["cat"] in TOP_LEVEL and within(e, s)]
        assert {e["cat"] for e in top} >= {"input", "compute", "summaries"}
        covered = sum(e["dur"] for e in top)
        assert abs(covered - s["dur"]) <= 0.05 * s["dur"], (s, covered)
    return steps


def test_mnist_cnn_trace_is_valid_and_phases_add_up_to_each_step(tmp_path):
    model_dir = tmp_path / "run"
    out = run_dtrain("train", SAMPLE, "--model-dir", model_dir, "--log-format", "plain",
                     "--set", "run.max_steps=8", "--set", "run.save_checkpoints_steps=4",
                     "--set", "run.profile.start_step=2", "--set", "run.profile.steps=4")
    assert out.returncode == 0, out.stderr
    trace = model_dir / "profile" / "trace-2-6.json"
    assert f"profile of steps 2..5 (4 steps): {trace} (open it in ui.perfetto.dev or chrome://tracing)" in out.stderr
    events, names = load_trace(trace)
    main = next(t for t, n in names.items() if n == "main")
    steps = check_steps(events, main, 2, 5)
    cats = {e["cat"] for e in events}
    assert cats >= {"step", "input", "compute", "forward", "loss", "backward", "optimizer", "summaries",
                    "checkpoint", "eval"}
    # Each layer's forward and backward (a dense activation is a layer of its own), once per
    # step (one_device: on the main thread).
    layers = ["conv2d", "max_pool2d", "conv2d_1", "max_pool2d_1", "flatten", "dense", "dense/relu", "dropout",
              "dense_1"]
    for phase in ["forward", "backward"]:
        got = [e["name"] for e in events if e["cat"] == phase and within(e, steps[0])]
        assert sorted(got) == sorted(f"{phase} {l}" for l in layers), got
    # The input pipeline prepares batches ahead on its own thread (prefetch: 2).
    input_tid = next(t for t, n in names.items() if n == "input")
    assert [e["name"] for e in events if e["tid"] == input_tid] and all(
        e["name"] == "pipeline batch" for e in events if e["tid"] == input_tid)
    # The checkpoint of step 4 (and its evaluation) happen in the step computing index 3.
    ckpt = [e for e in events if e["cat"] == "checkpoint"]
    assert len(ckpt) == 1 and ckpt[0]["args"]["step"] == 3
    # Inside compute, one_device's phases account for the time too.
    compute = sum(e["dur"] for e in events if e["cat"] == "compute")
    inner = sum(e["dur"] for e in events if e["cat"] in {"forward", "loss", "backward", "optimizer"})
    assert 0.95 * compute <= inner <= compute
    # The table: every phase, and shares that add up to the step.
    table = out.stderr[out.stderr.index(str(trace)):].splitlines()[1:16]
    assert re.search(r"phase +total ms +ms/step +share", table[0]), table
    rows = {}
    for line in table[1:]:
        m = re.search(r"(\S.*?) +(-?[\d.]+) +(-?[\d.]+) +(-?[\d.]+)%$", line)
        assert m, line
        rows[m.group(1).split("] ")[-1].strip()] = (float(m.group(2)), float(m.group(3)), float(m.group(4)))
    assert list(rows) == ["input wait", "worker sync", "forward", "loss", "backward", "all-reduce (in process)",
                          "ps pull and push", "optimizer",
                          "other compute", "summaries", "checkpoint", "eval", "other", "step"]
    assert abs(rows["step"][0] - sum(s["dur"] for s in steps) / 1e3) < 0.01
    assert abs(sum(v[2] for k, v in rows.items() if k != "step") - 100.0) < 0.6
    assert rows["forward"][0] > 0 and rows["backward"][0] > 0 and rows["checkpoint"][0] > 0


def test_mirrored_replicas_have_their_own_tracks_and_sum_buckets_in_process(tmp_path):
    model_dir = tmp_path / "mirrored"
    out = run_dtrain("train", SOURCE_ROOT / "sample_configs/mnist_cnn_mirrored.yaml", "--model-dir", model_dir,
                     "--no-eval", "--log-format", "plain", "--set", "run.max_steps=3",
                     "--set", "run.profile.start_step=0", "--set", "run.profile.steps=2")
    assert out.returncode == 0, out.stderr
    events, names = load_trace(model_dir / "profile" / "trace-0-2.json")
    main = next(t for t, n in names.items() if n == "main")
    check_steps(events, main, 0, 1)
    replicas = sorted(n for n in names.values() if n.startswith("replica"))
    assert replicas == ["replica 0", "replica 1"]
    for tid in (t for t, n in names.items() if n in replicas):
        mine = {e["cat"] for e in events if e["tid"] == tid}
        assert mine >= {"forward", "loss", "backward", "optimizer"}, (names[tid], mine)
    in_process = [e["name"] for e in events if e["cat"] == "all-reduce"]
    assert sorted(set(in_process)) == ["all-reduce bucket 0 (1.54 MiB) in process",
                                       "all-reduce bucket 1 (0.07 MiB) in process"]
    assert len(in_process) == 2 * 2
    assert "mean over 2 replica threads" in out.stderr


def test_two_worker_collective_trace_has_all_reduce_buckets(tmp_path):
    model_dir = tmp_path / "multi"
    out = run_dtrain("launch", "--workers", 2, COLLECTIVE, "--model-dir", model_dir, "--no-eval",
                     "--log-format", "plain", "--set", "run.max_steps=5", "--set", "run.profile.start_step=1",
                     "--set", "run.profile.steps=3", timeout=300)
    assert out.returncode == 0, out.stderr
    trace = model_dir / "profile" / "trace-1-4.json"
    events, names = load_trace(trace)
    main = next(t for t, n in names.items() if n == "main")
    check_steps(events, main, 1, 3)
    assert {e["cat"] for e in events if e["tid"] == main} >= {"sync", "compute"}
    comm = [t for t, n in names.items() if n == "all-reduce"]
    assert len(comm) == 1
    buckets = [e for e in events if e["cat"] == "all-reduce" and e["tid"] == comm[0]]
    # mnist_cnn's gradients (1.6 MiB) make 2 buckets: the first closes at 1 MiB.
    assert sorted({b["name"] for b in buckets}) == ["all-reduce bucket 0 (1.54 MiB) across workers",
                                                    "all-reduce bucket 1 (0.07 MiB) across workers"]
    assert len(buckets) == 2 * 3
    assert "all-reduce across workers" in out.stderr
    # The other worker prints its own table and writes no trace.
    assert "[worker 1] " in out.stderr and "profile of steps 1..3 (3 steps) on this task" in out.stderr
    assert len(list((model_dir / "profile").iterdir())) == 1


def test_parameter_server_worker_traces_its_pulls_and_pushes(tmp_path):
    model_dir = tmp_path / "ps"
    out = run_dtrain("launch", "--chief", "--workers", 1, "--ps", 1, SAMPLE, "--model-dir", model_dir, "--no-eval",
                     "--log-format", "plain", "--set", "strategy.type=parameter_server",
                     "--set", "strategy.mode=sync", "--set", "run.max_steps=3", "--set", "run.profile.start_step=0",
                     "--set", "run.profile.steps=2", timeout=300)
    assert out.returncode == 0, out.stderr
    events, names = load_trace(model_dir / "profile" / "trace-0-2.json")
    main = next(t for t, n in names.items() if n == "main")
    check_steps(events, main, 0, 1)
    ps = [e["name"] for e in events if e["cat"] == "ps" and e["tid"] == main]
    assert ps == ["ps pull", "ps push"] * 2
    assert re.search(r"ps pull and push +[\d.]+ +[\d.]+ +[\d.]+%", out.stderr)
