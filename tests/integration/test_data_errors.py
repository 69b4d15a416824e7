"""Bad data met while running: exit 3 with the file named, and nothing already
written (checkpoints, summaries) is lost."""
import gzip

import numpy as np
import pytest

from conftest import SAMPLE_IMAGES, run_dtrain
from jpeg_shards import _field, _varint, frame

CSV_JOB = """
model:
  input: {{shape: [2]}}
  layers:
    - {{type: dense, units: 3}}
  loss: sparse_softmax_cross_entropy
data:
  train: {{format: csv, path: {path}, batch_size: 2}}
run: {{model_dir: {model_dir}, max_steps: 5}}
"""


def test_truncated_idx_file_is_a_data_error(mlp_job, tmp_path):
    job, model_dir = mlp_job(max_steps=10, save_steps=10)
    assert run_dtrain("train", job, "--no-eval").returncode == 0
    before = (model_dir / "model.ckpt-10.safetensors").read_bytes()
    broken = tmp_path / "broken-images.gz"
    with gzip.open(SAMPLE_IMAGES) as f:
        raw = f.read()
    with gzip.open(broken, "wb") as f:
        f.write(raw[:5000])
    out = run_dtrain("train", job, "--no-eval", "--set", f"data.train.images={broken}", "--set", "run.max_steps=20")
    assert out.returncode == 3, out.stderr
    assert str(broken) in out.stderr and "truncated" in out.stderr
    assert (model_dir / "model.ckpt-10.safetensors").read_bytes() == before


def test_label_out_of_range_is_a_data_error(tmp_path):
    csv = tmp_path / "d.csv"
    csv.write_text("a,b,label\n0.1,0.2,0\n0.3,0.4,1\n0.5,0.6,7\n0.7,0.8,2\n")
    job = tmp_path / "job.yaml"
    job.write_text(CSV_JOB.format(path=csv, model_dir=tmp_path / "run"))
    out = run_dtrain("train", job)
    assert out.returncode == 3, out.stderr
    # Named where the user can open it: file, line and field of the label.
    assert (f'data.train: label 7 at {csv}:4:3 (column "label") is out of range for 3 classes (class ids are 0..2)'
            in out.stderr), out.stderr


def test_malformed_csv_value_names_line_and_column(tmp_path):
    csv = tmp_path / "d.csv"
    csv.write_text("a,b,label\n0.1,0.2,0\n0.3,oops,1\n")
    job = tmp_path / "job.yaml"
    job.write_text(CSV_JOB.format(path=csv, model_dir=tmp_path / "run"))
    out = run_dtrain("train", job)
    assert out.returncode == 3, out.stderr
    assert f"{csv}:3:2" in out.stderr and "oops" in out.stderr


def test_evaluate_without_checkpoint(mlp_job):
    job, model_dir = mlp_job()
    out = run_dtrain("evaluate", job)
    assert out.returncode == 2
    assert out.stderr == f"dtrain: no checkpoint in model_dir {model_dir}: train first, or pass --checkpoint PATH\n"


def test_corrupt_checkpoint_is_a_data_error(mlp_job):
    job, model_dir = mlp_job(max_steps=10, save_steps=10)
    assert run_dtrain("train", job, "--no-eval").returncode == 0
    ckpt = model_dir / "model.ckpt-10.safetensors"
    ckpt.write_bytes(ckpt.read_bytes()[:100])
    out = run_dtrain("evaluate", job)
    assert out.returncode == 3, out.stderr
    assert str(ckpt) in out.stderr
    assert run_dtrain("inspect", ckpt).returncode == 3


TFRECORD_JOB = """
model:
  input: {{shape: [2]}}
  layers:
    - {{type: dense, units: 10}}
  loss: sparse_softmax_cross_entropy
data:
  train: {{format: tfrecord, files: "{d}/part-*.tfrecord", features: {{x: {{dtype: float, shape: [2]}},
          label: {{dtype: int64, shape: []}}}}, label_feature: label, batch_size: 8{extra}}}
run: {{model_dir: {model_dir}, max_steps: 20}}
"""


def tf_example(x, label):
    """A serialized tf.Example {"x": float_list (2 values), "label": int64_list [label]}."""
    floats = _field(2, _field(1, np.asarray(x, "<f4").tobytes()))  # Feature.float_list(2), packed
    lab = _field(3, _field(1, _varint(label)))
    entries = _field(1, _field(1, b"x") + _field(2, floats)) + _field(1, _field(1, b"label") + _field(2, lab))
    return _field(1, entries)


@pytest.mark.parametrize("stream", ["", ", stream: false"])
def test_tfrecord_label_out_of_range_names_file_and_record(tmp_path, stream):
    d = tmp_path / "data"
    d.mkdir()
    for shard in range(2):
        with open(d / f"part-{shard}.tfrecord", "wb") as f:
            for i in range(20):
                label = 12 if (shard, i) == (1, 13) else i % 10
                f.write(frame(tf_example([i, shard], label)))
    job = tmp_path / "job.yaml"
    job.write_text(TFRECORD_JOB.format(d=d, model_dir=tmp_path / "run", extra=stream))
    out = run_dtrain("train", job)
    assert out.returncode == 3, out.stderr
    assert (f'data.train: label 12 at {d / "part-1.tfrecord"}: record 13 (feature "label") is out of range for 10 '
            "classes (class ids are 0..9)") in out.stderr, out.stderr
