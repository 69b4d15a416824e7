"""A bad value in the data is named where it is (issue 27, part 6), through the
real binary: an id out of the range of the embedding that reads it, and a
feature value that is not a whole number for an int32 input, stop training
with exit code 3 naming the file and line and column (csv), the array and
row (npz) or the file and record and feature (tfrecord), the value and what
was expected. And dense `units: auto` over format image_folder (part 3)
takes the class count from the class folders."""
import numpy as np
import pytest
from PIL import Image
from safetensors.numpy import load_file

from conftest import run_dtrain
from jpeg_shards import _field, _varint, frame

CSV_JOB = """
model:
  input: {{shape: [1], dtype: int32}}
  layers:
    - {{name: embed, type: embedding, input_dim: 50, output_dim: 4}}
    - {{type: flatten}}
    - {{type: dense, units: 2}}
  loss: sparse_softmax_cross_entropy
data:
  train: {{format: csv, path: {path}, columns: [city], label_column: label, batch_size: 32}}
run: {{model_dir: {model_dir}, max_steps: 3}}
"""


def write_csv(path, bad_row=None, bad_value=None, rows=40):
    """Columns day, size, city (the ids, field 3), label; the header is line 1,
    so row r is on line r + 2."""
    lines = ["day,size,city,label"]
    for r in range(rows):
        city = bad_value if r == bad_row else str(r % 50)
        lines.append(f"{r % 7},{r * 0.5},{city},{r % 2}")
    path.write_text("\n".join(lines) + "\n")


def csv_job(tmp_path, **csv):
    data = tmp_path / "train.csv"
    write_csv(data, **csv)
    job = tmp_path / "job.yaml"
    job.write_text(CSV_JOB.format(path=data, model_dir=tmp_path / "run"))
    return job, data


def last_line(out):
    return out.stderr.splitlines()[-1] if out.stderr else ""


def test_csv_ids_in_range_train(tmp_path):
    job, _ = csv_job(tmp_path)
    out = run_dtrain("train", job, "--no-eval")
    assert out.returncode == 0, out.stderr


def test_csv_id_out_of_the_embeddings_range_names_line_column_and_range(tmp_path):
    job, data = csv_job(tmp_path, bad_row=12, bad_value="57")
    out = run_dtrain("train", job, "--no-eval")
    assert out.returncode == 3, out.stderr
    # job.yaml:10:10 is data.train's mapping.
    assert last_line(out) == (
        f'dtrain: {job}:10:10: data.train: {data}:14:3 (column "city"): id 57 of model.input is out of range for '
        'layer "embed" (input_dim 50: ids 0..49)'), out.stderr
    # A negative id the same.
    job, data = csv_job(tmp_path, bad_row=35, bad_value="-1")
    out = run_dtrain("train", job, "--no-eval")
    assert out.returncode == 3, out.stderr
    assert last_line(out).endswith(
        f'data.train: {data}:37:3 (column "city"): id -1 of model.input is out of range for layer "embed" '
        '(input_dim 50: ids 0..49)'), out.stderr


@pytest.mark.parametrize("value, shown", [("2.5", "2.5"), ("3000000000", "3000000000")])
def test_csv_value_that_is_not_an_int32_id_names_line_and_column(tmp_path, value, shown):
    job, data = csv_job(tmp_path, bad_row=20, bad_value=value)
    out = run_dtrain("train", job, "--no-eval")
    assert out.returncode == 3, out.stderr
    assert last_line(out) == (
        f'dtrain: {job}:10:10: data.train: {data}:22:3 (column "city"): {shown} is not a token id (model.input.dtype '
        "is int32, so features must be whole numbers in int32's range)"), out.stderr


NPZ_JOB = """
model:
  inputs:
    ids: {{shape: [6], dtype: int32}}
    dense: {{shape: [4]}}
  layers:
    - {{name: embed, type: embedding, input_dim: 10, output_dim: 8, inputs: ids}}
    - {{name: pooled, type: global_avg_pool1d}}
    - {{name: hidden, type: dense, units: 8, activation: relu, inputs: dense}}
    - {{name: both, type: concatenate, inputs: [pooled, hidden]}}
    - {{name: logits, type: dense, units: 2}}
  loss: sparse_softmax_cross_entropy
data:
  train: {{format: npz, path: {path}, batch_size: 16}}
run: {{model_dir: {model_dir}, max_steps: 3}}
"""

NPZ_ONE_INPUT_JOB = """
model:
  input: {{shape: [6], dtype: int32}}
  layers:
    - {{name: embed, type: embedding, input_dim: 10, output_dim: 8}}
    - {{type: global_avg_pool1d}}
    - {{type: dense, units: 2}}
  loss: sparse_softmax_cross_entropy
data:
  train: {{format: npz, path: {path}, features_array: x, labels_array: y, batch_size: 16}}
run: {{model_dir: {model_dir}, max_steps: 3}}
"""


def npz_examples(n=40):
    rng = np.random.default_rng(5)
    return rng.integers(0, 10, size=(n, 6)), rng.standard_normal((n, 4)).astype(np.float32), rng.integers(0, 2, n)


def test_npz_id_out_of_range_names_the_array_row_and_position(tmp_path):
    ids, dense, labels = npz_examples()
    data = tmp_path / "train.npz"
    job = tmp_path / "job.yaml"
    job.write_text(NPZ_JOB.format(path=data, model_dir=tmp_path / "run"))
    np.savez(data, ids=ids, dense=dense, labels=labels)
    assert run_dtrain("train", job, "--no-eval").returncode == 0
    ids[21, 3] = 10
    np.savez(data, ids=ids, dense=dense, labels=labels)
    out = run_dtrain("train", job, "--no-eval", "--model-dir", tmp_path / "run2")
    assert out.returncode == 3, out.stderr
    assert last_line(out).endswith(
        f'data.train: {data}: array "ids", row 21, position 3: id 10 of model.inputs.ids is out of range for layer '
        '"embed" (input_dim 10: ids 0..9)'), out.stderr

    # One input: the features array by its name; a value that is not whole the same.
    one = tmp_path / "one.yaml"
    one.write_text(NPZ_ONE_INPUT_JOB.format(path=data, model_dir=tmp_path / "run3"))
    np.savez(data, x=ids, y=labels)
    out = run_dtrain("train", one, "--no-eval")
    assert out.returncode == 3, out.stderr
    assert last_line(out).endswith(
        f'data.train: {data}: array "x", row 21, position 3: id 10 of model.input is out of range for layer "embed" '
        '(input_dim 10: ids 0..9)'), out.stderr
    x = ids.astype(np.float32)
    x[21, 3] = 3
    x[30, 5] = 0.5
    np.savez(data, x=x, y=labels)
    out = run_dtrain("train", one, "--no-eval")
    assert out.returncode == 3, out.stderr
    assert last_line(out).endswith(
        f'data.train: {data}: array "x", row 30, position 5: 0.5 is not a token id (model.input.dtype is int32, so '
        "features must be whole numbers in int32's range)"), out.stderr


TFRECORD_JOB = """
model:
  input: {{shape: [4], dtype: int32}}
  layers:
    - {{name: embed, type: embedding, input_dim: 10, output_dim: 4}}
    - {{type: flatten}}
    - {{type: dense, units: 2}}
  loss: sparse_softmax_cross_entropy
data:
  train: {{format: tfrecord, files: "{d}/part-*.tfrecord", features: {{ids: {{dtype: int64, shape: [4]}},
          label: {{dtype: int64, shape: []}}}}, label_feature: label, batch_size: 8}}
run: {{model_dir: {model_dir}, max_steps: 10}}
"""


def id_example(ids, label):
    """A serialized tf.Example {"ids": int64_list, "label": int64_list [label]}."""
    def int64s(values):  # Feature.int64_list (3), its values packed
        return _field(3, _field(1, b"".join(_varint(v) for v in values)))
    entries = (_field(1, _field(1, b"ids") + _field(2, int64s(ids))) +
               _field(1, _field(1, b"label") + _field(2, int64s([label]))))
    return _field(1, entries)


def test_tfrecord_id_out_of_range_names_file_record_and_feature(tmp_path):
    d = tmp_path / "data"
    d.mkdir()
    for shard in range(2):
        with open(d / f"part-{shard}.tfrecord", "wb") as f:
            for i in range(20):
                ids = [(i + k) % 10 for k in range(4)]
                if (shard, i) == (1, 13):
                    ids[2] = 57
                f.write(frame(id_example(ids, i % 2)))
    job = tmp_path / "job.yaml"
    job.write_text(TFRECORD_JOB.format(d=d, model_dir=tmp_path / "run"))
    out = run_dtrain("train", job, "--no-eval")
    assert out.returncode == 3, out.stderr
    assert last_line(out).endswith(
        f'data.train: {d / "part-1.tfrecord"}: record 13 (feature "ids", position 2): id 57 of model.input is out of '
        'range for layer "embed" (input_dim 10: ids 0..9)'), out.stderr


IMAGE_JOB = """
model:
  input: {{shape: [8, 8, 3]}}
  layers:
    - {{type: flatten}}
    - {{name: logits, type: dense, units: auto}}
  loss: sparse_softmax_cross_entropy
data:
  train: {{format: image_folder, dir: {d}, image_size: [8, 8], batch_size: 8{classes}}}
run: {{model_dir: {model_dir}, max_steps: 4}}
"""


def make_images(d, classes=("ants", "bees", "wasps"), per_class=6):
    rng = np.random.default_rng(0)
    for k, name in enumerate(classes):
        (d / name).mkdir(parents=True)
        for i in range(per_class):
            Image.fromarray(rng.integers(0, 256, size=(8, 8, 3), dtype=np.uint8)).save(d / name / f"{i}.png")


@pytest.mark.parametrize("classes, count", [("", 3), (", classes: [wasps, ants]", 2)])
def test_image_folder_dense_units_auto_is_the_class_count(tmp_path, classes, count):
    d = tmp_path / "images"
    make_images(d)
    job = tmp_path / "job.yaml"
    model_dir = tmp_path / "run"
    job.write_text(IMAGE_JOB.format(d=d, classes=classes, model_dir=model_dir))
    out = run_dtrain("train", job, "--no-eval", "--log-format", "plain")
    assert out.returncode == 0, out.stderr
    assert f"model: logits units: auto = {count} (the class folders of data.train)" in out.stderr, out.stderr
    kernel = load_file(str(model_dir / "model.ckpt-4.safetensors"))["logits/kernel"]
    assert kernel.shape == (8 * 8 * 3, count)
    out = run_dtrain("validate", job)
    assert out.returncode == 0, out.stderr
    assert out.stderr == f"model: logits units: auto = {count} (the class folders of data.train)\n"


def test_image_folder_units_auto_with_one_class_folder_is_a_data_error(tmp_path):
    d = tmp_path / "images"
    make_images(d, classes=("ants",))
    job = tmp_path / "job.yaml"
    job.write_text(IMAGE_JOB.format(d=d, classes="", model_dir=tmp_path / "run"))
    out = run_dtrain("train", job, "--no-eval")
    assert out.returncode == 3, out.stderr
    assert last_line(out).endswith(
        f"data.train: dir {d}: 1 class folder(s); expected one sub-folder of images per class, at least two (e.g. "
        f"{d}/cat/*.jpg and {d}/dog/*.png)"), out.stderr
