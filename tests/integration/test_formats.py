"""On-disk formats read by their reference implementations: checkpoints written
by dtrain are read with Python's safetensors, event files with TensorBoard's own
reader, and safetensors files written by Python are read by dtrain.

Needs the io_format_writer tool (tests/engine/io/format_writer.cpp), whose path
comes in DTRAIN_FORMAT_WRITER (meson test sets it)."""
import json
import os
import struct
import subprocess
import time
from pathlib import Path

import numpy as np
import pytest

safetensors_numpy = pytest.importorskip("safetensors.numpy")
from safetensors import safe_open  # noqa: E402
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator  # noqa: E402
from tensorboard.backend.event_processing.event_file_loader import LegacyEventFileLoader  # noqa: E402


def writer_tool():
    path = os.environ.get("DTRAIN_FORMAT_WRITER")
    if not path:
        pytest.skip("DTRAIN_FORMAT_WRITER is not set (path of the io_format_writer test tool)")
    if not Path(path).exists():
        pytest.skip(f"io_format_writer not built at {path}")
    return str(Path(path).resolve())


def run_tool(*args):
    return subprocess.run([writer_tool(), *map(str, args)], capture_output=True, text=True, timeout=120)


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    out = tmp_path_factory.mktemp("formats")
    started = time.time()
    proc = run_tool(out)
    assert proc.returncode == 0, proc.stderr
    paths = dict(line.split(" ", 1) for line in proc.stdout.splitlines())
    return {"out": out, "checkpoint": Path(paths["checkpoint"]), "events": Path(paths["events"]),
            "started": started, "finished": time.time()}


def f32(values):
    return np.asarray(values, dtype=np.float64).astype(np.float32)


EXPECTED_TENSORS = {
    "dense/kernel": (np.arange(6, dtype=np.float32) * np.float32(0.5)).reshape(3, 2),
    "dense/bias": f32([-1.5, 0.25]),
    "dense/kernel/momentum": f32([0.1 * i for i in range(6)]).reshape(3, 2),
    "global_norm": np.array(np.float32(3.14159265)),
    "empty": np.zeros((0, 4), dtype=np.float32),
}


def test_checkpoint_tensors_read_by_safetensors(written):
    path = written["checkpoint"]
    assert path == written["out"] / "model" / "model.ckpt-300.safetensors"
    tensors = safetensors_numpy.load_file(str(path))
    assert sorted(tensors) == sorted(EXPECTED_TENSORS)
    for name, expected in EXPECTED_TENSORS.items():
        got = tensors[name]
        assert got.dtype == np.float32, name
        assert got.shape == expected.shape, name
        assert np.array_equal(got.view(np.uint32), expected.view(np.uint32)), name


def test_checkpoint_metadata_read_by_safetensors(written):
    with safe_open(str(written["checkpoint"]), framework="np") as f:
        assert f.metadata() == {"dtrain_version": "0.1.0", "input_position": "9600", "note": "h\u00e9llo",
                                "global_step": "300"}
        assert sorted(f.keys()) == sorted(EXPECTED_TENSORS)
        assert f.get_slice("dense/kernel").get_shape() == [3, 2]


def test_checkpoint_layout_and_index(written):
    data = written["checkpoint"].read_bytes()
    (n,) = struct.unpack("<Q", data[:8])
    assert n % 8 == 0 and data[8:9] == b"{"
    header = json.loads(data[8:8 + n])
    assert list(header)[0] == "__metadata__"
    assert header["dense/kernel"] == {"dtype": "F32", "shape": [3, 2], "data_offsets": [0, 24]}
    assert len(data) == 8 + n + 24 + 8 + 24 + 4
    index = json.loads((written["out"] / "model" / "checkpoint").read_text())
    times = index.pop("times")  # Unix time of each save
    assert len(times) == 1 and times[0] > 1.6e9
    assert index == {"latest": "model.ckpt-300.safetensors", "all": ["model.ckpt-300.safetensors"], "steps": [300],
                     "preserved": [], "keep_hours_since": times[0]}


def test_events_read_by_tensorboard(written):
    events_dir = written["events"].parent
    assert written["events"].name.startswith("events.out.tfevents.")
    ea = EventAccumulator(str(events_dir), size_guidance={"scalars": 0})
    ea.Reload()
    assert ea.file_version == 2.0
    assert sorted(ea.Tags()["scalars"]) == ["accuracy", "loss"]
    loss = ea.Scalars("loss")
    accuracy = ea.Scalars("accuracy")
    assert [e.step for e in loss] == [0, 10, 20]
    assert [e.step for e in accuracy] == [0, 10, 20]
    assert [e.value for e in loss] == [2.5, 1.25, 0.625]
    assert [e.value for e in accuracy] == [float(np.float32(v)) for v in (0.1, 0.55, 0.9)]
    for e in loss + accuracy:
        assert written["started"] - 1 <= e.wall_time <= written["finished"] + 1


def test_event_records_read_by_tensorboard_loader(written):
    # TensorBoard's record reader checks both masked CRCs of every record; the
    # legacy loader yields the events as written (no migration to tensors).
    events = list(LegacyEventFileLoader(str(written["events"])).Load())
    assert events[0].file_version == "brain.Event:2"
    summaries = [[(v.tag, v.simple_value) for v in e.summary.value] for e in events[1:]]
    assert [e.step for e in events[1:]] == [0, 0, 10, 10, 20]
    assert summaries == [[("loss", 2.5)], [("accuracy", float(np.float32(0.1)))], [("loss", 1.25)],
                         [("accuracy", float(np.float32(0.55)))],
                         [("loss", 0.625), ("accuracy", float(np.float32(0.9)))]]


def dump(path):
    proc = run_tool("--dump", path)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_python_written_checkpoint_read_by_dtrain(tmp_path):
    rng = np.random.default_rng(7)
    tensors = {
        "dense/kernel": rng.standard_normal((4, 3)).astype(np.float32),
        "dense/bias": f32([0.0, -0.0, 1e-45]),
        "scale": np.array(np.float32(np.inf)),
        "empty": np.zeros((2, 0), dtype=np.float32),
    }
    path = tmp_path / "model.ckpt-42.safetensors"
    safetensors_numpy.save_file(tensors, str(path), metadata={"global_step": "42", "origin": "python"})
    got = dump(path)
    assert got["global_step"] == 42
    assert got["metadata"] == {"global_step": "42", "origin": "python"}
    by_name = {t["name"]: t for t in got["tensors"]}
    assert sorted(by_name) == sorted(tensors)
    for name, expected in tensors.items():
        assert by_name[name]["shape"] == list(expected.shape), name
        assert by_name[name]["bits"] == expected.reshape(-1).view(np.uint32).tolist(), name


def test_python_f16_checkpoint_rejected_by_dtrain(tmp_path):
    path = tmp_path / "half.safetensors"
    safetensors_numpy.save_file({"h": np.ones(3, dtype=np.float16)}, str(path))
    proc = run_tool("--dump", path)
    assert proc.returncode == 3
    assert proc.stderr == f'{path}: tensor "h": dtype "F16" is not supported (dtrain checkpoints hold only F32)\n'
