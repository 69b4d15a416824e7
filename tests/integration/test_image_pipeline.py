"""The image pipeline with the real binary: a small CNN trains on streamed
TFRecord shards of 24x24 JPEGs through random_resized_crop (to 16x16) +
random_flip + normalize, and evaluates through resize_center_crop. The
augmentation depends only on (seed, epoch, example): a run stopped at step 10
and resumed equals the uninterrupted run bit for bit, and the in-memory
pipeline gives the same weights for any num_parallel_calls."""
import numpy as np
from safetensors.numpy import load_file

from conftest import run_dtrain
from jpeg_shards import write_shards, write_sized_shards
from test_streaming import assert_same

JOB = """
model:
  input: {{shape: [16, 16, 3]}}
  layers:
    - {{type: conv2d, filters: 4, kernel: 3, strides: 2, activation: relu}}
    - {{type: global_avg_pool2d}}
    - {{type: dense, units: 10}}
  loss: sparse_softmax_cross_entropy
optimizer: {{type: sgd, learning_rate: 0.05, momentum: 0.9}}
data:
  train: {{format: tfrecord, files: "{files}", label_feature: label, batch_size: 8, shuffle: 50, {data},
           features: {{image: {{dtype: bytes, decode: jpeg, shape: [24, 24, 3]}}, label: {{dtype: int64}}}},
           map: [{{random_resized_crop: {{size: [16, 16], scale: [0.25, 1.0]}}}}, {{random_flip: horizontal}},
                 {{normalize: {{mean: [127.5], std: [64]}}}}]}}
  eval: {{format: tfrecord, files: "{files}", label_feature: label, batch_size: 8, take: 16,
          features: {{image: {{dtype: bytes, decode: jpeg, shape: [24, 24, 3]}}, label: {{dtype: int64}}}},
          map: [{{resize_center_crop: {{resize: 18, size: [16, 16]}}}}, {{normalize: {{mean: [127.5], std: [64]}}}}]}}
run: {{model_dir: {model_dir}, max_steps: {steps}, save_checkpoints_steps: 10, keep_checkpoint_max: 50,
      save_summary_steps: 1000, log_step_count_steps: 1000, seed: 3, deterministic: true}}
"""


def job(tmp_path, name, shards, steps, data):
    path = tmp_path / f"{name}.yaml"
    path.write_text(JOB.format(files=shards / "data-*.tfrecord", data=data, steps=steps, model_dir=tmp_path / name))
    return path, tmp_path / name


def test_streamed_jpegs_with_random_resized_crop_train_evaluate_and_resume_exactly(tmp_path):
    shards = tmp_path / "shards"
    shards.mkdir()
    write_shards(shards, 2, 40, 24, distinct=16)
    data = "stream: true, num_parallel_calls: 2"
    full, full_dir = job(tmp_path, "full", shards, 20, data)
    out = run_dtrain("train", full, "--log-format", "plain")
    assert out.returncode == 0, out.stderr[-3000:]
    assert "eval at step 20:  loss" in out.stderr  # evaluated through resize_center_crop
    short, short_dir = job(tmp_path, "resumed", shards, 10, data)
    assert run_dtrain("train", short, "--no-eval", "--log-format", "plain").returncode == 0
    resumed, _ = job(tmp_path, "resumed", shards, 20, data)
    out = run_dtrain("train", resumed, "--no-eval", "--log-format", "plain")
    assert out.returncode == 0, out.stderr[-3000:]
    assert "resuming from" in out.stderr
    assert_same(short_dir / "model.ckpt-20.safetensors", full_dir / "model.ckpt-20.safetensors")
    # The crops change the training: without them the weights differ.
    plain_path = tmp_path / "plain.yaml"
    plain_path.write_text(full.read_text().replace(
        "{random_resized_crop: {size: [16, 16], scale: [0.25, 1.0]}}", "{resize_center_crop: {resize: 16, size: [16, 16]}}")
        .replace(str(full_dir), str(tmp_path / "plain")))
    assert run_dtrain("train", plain_path, "--no-eval", "--log-format", "plain").returncode == 0
    a = load_file(str(tmp_path / "plain" / "model.ckpt-20.safetensors"))
    b = load_file(str(full_dir / "model.ckpt-20.safetensors"))
    assert any(not np.array_equal(a[k], b[k]) for k in a)


def test_in_memory_pipeline_crops_do_not_depend_on_num_parallel_calls(tmp_path):
    shards = tmp_path / "shards"
    shards.mkdir()
    write_shards(shards, 1, 48, 24, distinct=16)
    one, one_dir = job(tmp_path, "one", shards, 10, "stream: false, num_parallel_calls: 1")
    three, three_dir = job(tmp_path, "three", shards, 10, "stream: false, num_parallel_calls: 3")
    for path in (one, three):
        out = run_dtrain("train", path, "--no-eval", "--log-format", "plain")
        assert out.returncode == 0, out.stderr[-3000:]
    assert_same(one_dir / "model.ckpt-10.safetensors", three_dir / "model.ckpt-10.safetensors")


def test_streamed_fused_decode_equals_the_in_memory_pipeline(tmp_path):
    """One shard read in order: the streamed path (the crop decoded straight from the JPEG, flip on uint8,
    normalize in the conversion) sees the same examples with the same draws as the in-memory pipeline
    (decode whole, then the map on floats); with fast_jpeg: false the weights are equal bit for bit."""
    shards = tmp_path / "shards"
    shards.mkdir()
    write_shards(shards, 1, 40, 48, distinct=16)
    exact = "{random_resized_crop: {size: [16, 16], scale: [0.25, 1.0], fast_jpeg: false}}"
    dirs = {}
    for name, data, crop in (("memory", "stream: false, num_parallel_calls: 1", exact),
                             ("stream", "num_parallel_calls: 2", exact),
                             ("dct", "stream: true, num_parallel_calls: 2", None)):
        path, dirs[name] = job(tmp_path, name, shards, 10, data)
        text = path.read_text().replace("shuffle: 50", "shuffle: 0").replace("[24, 24, 3]", "[48, 48, 3]")
        if crop:
            text = text.replace("{random_resized_crop: {size: [16, 16], scale: [0.25, 1.0]}}", crop)
        path.write_text(text)
        out = run_dtrain("train", path, "--no-eval", "--log-format", "plain")
        assert out.returncode == 0, out.stderr[-3000:]
    assert_same(dirs["stream"] / "model.ckpt-10.safetensors", dirs["memory"] / "model.ckpt-10.safetensors")
    # DCT scaling (the default) decodes the windows of 32x32 or more at 4/8: other pixels, other weights.
    a = load_file(str(dirs["dct"] / "model.ckpt-10.safetensors"))
    b = load_file(str(dirs["memory"] / "model.ckpt-10.safetensors"))
    assert any(not np.array_equal(a[k], b[k]) for k in a)


VARIED = """
model:
  input: {{shape: [16, 16, 3]}}
  layers:
    - {{type: conv2d, filters: 4, kernel: 3, strides: 2, activation: relu}}
    - {{type: global_avg_pool2d}}
    - {{type: dense, units: 10}}
  loss: sparse_softmax_cross_entropy
optimizer: {{type: sgd, learning_rate: 0.05}}
data:
  train: {{format: tfrecord, files: "{files}", label_feature: label, batch_size: 8, shuffle: 20, stream: {stream},
           features: {{image: {{dtype: bytes, decode: jpeg, shape: [null, null, 3]}}, label: {{dtype: int64}}}},
           map: {map}}}
  eval: {{format: tfrecord, files: "{files}", label_feature: label, batch_size: 8, stream: true,
          features: {{image: {{dtype: bytes, decode: jpeg, shape: [null, null, 3]}}, label: {{dtype: int64}}}},
          map: [{{resize_center_crop: {{resize: 18, size: [16, 16]}}}}, {{normalize: {{mean: [127.5], std: [64]}}}}]}}
run: {{model_dir: {model_dir}, max_steps: 12, save_checkpoints_steps: 12, seed: 3}}
"""
TRAIN_MAP = ("[{random_resized_crop: {size: [16, 16], scale: [0.25, 1.0]}}, {random_flip: horizontal},"
             " {normalize: {mean: [127.5], std: [64]}}]")


def varied_job(tmp_path, shards, stream="true", map_=TRAIN_MAP):
    path = tmp_path / "varied.yaml"
    path.write_text(VARIED.format(files=shards / "data-*.tfrecord", stream=stream, map=map_,
                                  model_dir=tmp_path / "varied"))
    return path


def test_jpegs_of_varying_size_stream_through_the_crops(tmp_path):
    shards = tmp_path / "shards"
    shards.mkdir()
    sizes = [(30 + 7 * (i % 5), 26 + 11 * (i % 4)) for i in range(40)]  # 30..58 x 26..59, landscape and portrait
    write_sized_shards(shards, 2, sizes)
    path = varied_job(tmp_path, shards)
    out = run_dtrain("train", path, "--log-format", "plain")
    assert out.returncode == 0, out.stderr[-3000:]
    assert "eval at step 12:  loss" in out.stderr
    assert (tmp_path / "varied" / "model.ckpt-12.safetensors").exists()
    resolved = run_dtrain("validate", path)  # prints the resolved job
    assert resolved.returncode == 0, resolved.stderr
    assert '"shape": [null, null, 3]' in resolved.stdout.replace("\n", "").replace("  ", "") or \
        "shape: [null, null, 3]" in resolved.stdout, resolved.stdout[:2000]


def test_jpegs_of_varying_size_need_stream_and_a_leading_resize(tmp_path):
    shards = tmp_path / "shards"
    shards.mkdir()
    write_sized_shards(shards, 1, [(30, 40), (41, 33)])
    out = run_dtrain("validate", varied_job(tmp_path, shards, stream="false"))
    assert out.returncode == 2
    assert out.stderr.strip().endswith(
        "data.train: features.image: images of varying size (null height and width) are read streamed only (a source "
        "read whole holds every image at one size), and this source is read whole (stream: false); give the images' "
        "one size"), out.stderr
    out = run_dtrain("validate", varied_job(tmp_path, shards, map_="[{random_flip: horizontal}]"))
    assert out.returncode == 2
    assert out.stderr.strip().endswith(
        "data.train.map[0]: the images' height and width vary (shape [null, null, 3]), so the map must start with "
        "random_resized_crop or resize_center_crop (which give every image one size); got random_flip"), out.stderr
    out = run_dtrain("validate", varied_job(tmp_path, shards, map_="[]"))
    assert out.returncode == 2
    assert out.stderr.strip().endswith(
        "data.train: the images' height and width vary (shape [null, null, 3]), so it needs a map that starts with "
        "random_resized_crop or resize_center_crop (which give every image one size)"), out.stderr
