"""The sequence layers through the real binary: a job using every one of them
validates with Keras defaults filled in; a reshape -> dense (rank 3) ->
layer_norm -> global_avg_pool1d -> dense model and an embedding model learn
(the loss falls); checkpoints hold Keras-named variables; a token id out of
range is a data error (exit 3) in train and in predict."""
import numpy as np
from safetensors import safe_open

from conftest import run_dtrain

EVERY_LAYER_JOB = """
model:
  input: {shape: [8], dtype: int32}
  layers:
    - {type: embedding, input_dim: 20, output_dim: 6}
    - {type: position_embedding, sequence_length: 8}
    - {type: dense, units: 12, activation: relu}
    - {type: layer_norm}
    - {type: global_avg_pool1d}
    - {type: reshape, target_shape: [2, 2, 3]}
    - {type: global_max_pool2d}
    - {type: dense, units: 12}
    - {type: reshape, target_shape: [2, 2, 3]}
    - {type: global_avg_pool2d}
    - {type: dense, units: 2}
"""

# Examples are 6 steps of 4 features, given flat; the class is the argmax of
# a linear map of their sum over steps, which pooling over steps keeps.
SEQUENCE_JOB = """
model:
  input: {{shape: [24]}}
  layers:
    - {{type: reshape, target_shape: [6, 4]}}
    - {{type: dense, units: 16, activation: relu}}
    - {{type: layer_norm}}
    - {{type: global_avg_pool1d}}
    - {{type: dense, units: 3}}
  loss: sparse_softmax_cross_entropy
optimizer: {{type: adam, learning_rate: 0.01}}
data:
  train: {{format: npy, images: {x}, labels: {y}, batch_size: 32, shuffle: 512}}
run: {{model_dir: {model_dir}, max_steps: 150, save_checkpoints_steps: 150, log_step_count_steps: 10, seed: 3}}
"""

EMBEDDING_JOB = """
model:
  input: {{shape: [8], dtype: int32}}
  layers:
    - {{type: embedding, input_dim: 20, output_dim: 8}}
    - {{type: position_embedding, sequence_length: 10}}
    - {{type: dense, units: 16, activation: relu}}
    - {{type: layer_norm}}
    - {{type: global_avg_pool1d}}
    - {{type: dense, units: 2}}
  loss: sparse_softmax_cross_entropy
  metrics: [accuracy]
optimizer: {{type: adam, learning_rate: 0.01}}
data:
  train: {{format: npy, images: {ids}, labels: {labels}, batch_size: 32, shuffle: 512}}
  eval: {{format: npy, images: {ids}, labels: {labels}, batch_size: 128}}
run: {{model_dir: {model_dir}, max_steps: 150, save_checkpoints_steps: 150, log_step_count_steps: 10, seed: 3}}
eval: {{throttle_secs: 0}}
"""


def losses(stderr):
    """{step: loss} from the plain log's step lines."""
    out = {}
    for line in stderr.splitlines():
        if line.startswith("step ") and " loss " in line:
            out[int(line.split("step ")[1].split("/")[0])] = float(line.split("loss ")[1].split()[0])
    return out


def train(job, *args):
    return run_dtrain("train", job, "--log-format", "plain", *args)


def write_token_data(folder, n=512, bad=None):
    """Ids in [0, 20), label 1 when more than half the tokens are below 10;
    with bad=(example, position), that id is 20, one past the table."""
    folder.mkdir(exist_ok=True)
    rng = np.random.default_rng(11)
    ids = rng.integers(0, 20, size=(n, 8)).astype(np.int32)
    labels = ((ids < 10).sum(axis=1) > 4).astype(np.int32)
    if bad is not None:
        ids[bad] = 20
    np.save(folder / "ids.npy", ids)
    np.save(folder / "labels.npy", labels)
    return folder / "ids.npy", folder / "labels.npy"


def test_every_sequence_layer_validates_with_keras_defaults(tmp_path):
    job = tmp_path / "every.yaml"
    job.write_text(EVERY_LAYER_JOB)
    out = run_dtrain("validate", job)
    assert out.returncode == 0, out.stderr
    resolved = out.stdout
    assert ("    - type: embedding\n      name: embedding\n      input_dim: 20\n      output_dim: 6\n"
            "      embeddings_initializer:\n        type: random_uniform\n        minval: -0.05\n"
            "        maxval: 0.05\n") in resolved
    assert "    - type: position_embedding\n      name: position_embedding\n      sequence_length: 8\n" in resolved
    assert ("    - type: layer_norm\n      name: layer_norm\n      epsilon: 0.001\n      center: true\n"
            "      scale: true\n") in resolved
    for pool in ("global_avg_pool1d", "global_max_pool2d", "global_avg_pool2d"):
        assert f"    - type: {pool}\n      name: {pool}\n" in resolved


def test_rank3_dense_layer_norm_and_pooling_learn(tmp_path):
    rng = np.random.default_rng(5)
    x = rng.standard_normal((512, 6, 4)).astype(np.float32)
    y = (x.sum(axis=1) @ rng.standard_normal((4, 3))).argmax(axis=1).astype(np.int32)
    np.save(tmp_path / "x.npy", x.reshape(512, 24))
    np.save(tmp_path / "y.npy", y)
    job = tmp_path / "seq.yaml"
    job.write_text(SEQUENCE_JOB.format(x=tmp_path / "x.npy", y=tmp_path / "y.npy", model_dir=tmp_path / "run"))
    out = train(job)
    assert out.returncode == 0, out.stderr
    curve = losses(out.stderr)
    assert 10 in curve and 150 in curve
    assert all(np.isfinite(v) for v in curve.values())
    assert curve[150] < 0.7 * curve[10], curve
    with safe_open(str(tmp_path / "run/model.ckpt-150.safetensors"), framework="numpy") as f:
        assert f.get_tensor("dense/kernel").shape == (4, 16)
        assert f.get_tensor("layer_norm/gamma").shape == (16,)
        assert f.get_tensor("layer_norm/beta").shape == (16,)
        assert f.get_tensor("dense_1/kernel").shape == (16, 3)


def test_embedding_model_learns_and_predicts(tmp_path):
    ids, labels = write_token_data(tmp_path / "data")
    job = tmp_path / "emb.yaml"
    job.write_text(EMBEDDING_JOB.format(ids=ids, labels=labels, model_dir=tmp_path / "run"))
    out = train(job)
    assert out.returncode == 0, out.stderr
    curve = losses(out.stderr)
    assert curve[150] < 0.7 * curve[10], curve
    with safe_open(str(tmp_path / "run/model.ckpt-150.safetensors"), framework="numpy") as f:
        table = f.get_tensor("embedding/embeddings")
        assert table.shape == (20, 8)
        assert f.get_tensor("position_embedding/embeddings").shape == (10, 8)
    pred = tmp_path / "pred.npy"
    out = run_dtrain("predict", job, "--input", ids, "--output", pred)
    assert out.returncode == 0, out.stderr
    p = np.load(pred)
    assert p.shape == (512, 2)
    want = ((np.load(ids) < 10).sum(axis=1) > 4).astype(int)
    assert (p.argmax(axis=1) == want).mean() > 0.8


def test_embedding_id_out_of_range_is_a_data_error(tmp_path):
    ids, labels = write_token_data(tmp_path / "bad", n=64, bad=(37, 5))
    job = tmp_path / "emb.yaml"
    job.write_text(EMBEDDING_JOB.format(ids=ids, labels=labels, model_dir=tmp_path / "run").replace(
        "batch_size: 32, shuffle: 512", "batch_size: 32"))
    out = train(job)
    assert out.returncode == 3, out.stderr
    assert out.stderr.splitlines()[-1] == (
        f"dtrain: {job}:15:10: data.train: {ids}: row 37, position 5: id 20 of model.input is out of range for layer "
        "\"embedding\" (input_dim 20: ids 0..19)")

    # predict reads its own file: the same check, naming that file.
    good_ids, _ = write_token_data(tmp_path / "good", n=64)
    fixed = tmp_path / "fixed.yaml"
    fixed.write_text(job.read_text().replace(str(ids), str(good_ids)))
    assert train(fixed, "--set", "run.max_steps=2", "--no-eval").returncode == 0
    bad = tmp_path / "bad_ids.npy"
    arr = np.load(good_ids)
    arr[3, 0] = -1
    np.save(bad, arr)
    out = run_dtrain("predict", fixed, "--input", bad, "--output", tmp_path / "p.npy")
    assert out.returncode == 3, out.stderr
    assert out.stderr == (f"dtrain: {bad}: row 3, position 0: id -1 of model.input is out of range for layer "
                          "\"embedding\" (input_dim 20: ids 0..19)\n")


def test_ids_that_are_not_whole_numbers_are_a_data_error(tmp_path):
    """npy features read by an int32 input are converted to ids batch by batch;
    a value that is not a whole number stops training (exit 3) naming the
    file, row and position, and predict says the same of its own file."""
    ids, labels = write_token_data(tmp_path / "data", n=64)
    arr = np.load(ids).astype(np.float32)
    arr[40, 2] = 2.5
    np.save(tmp_path / "frac.npy", arr)
    job = tmp_path / "emb.yaml"
    job.write_text(EMBEDDING_JOB.format(ids=tmp_path / "frac.npy", labels=labels, model_dir=tmp_path / "run").replace(
        "batch_size: 32, shuffle: 512", "batch_size: 32"))
    out = train(job)
    assert out.returncode == 3, out.stderr
    assert out.stderr.splitlines()[-1] == (
        f"dtrain: {job}:15:10: data.train: {tmp_path / 'frac.npy'}: row 40, position 2: 2.5 is not a token id "
        "(model.input.dtype is int32, so features must be whole numbers in int32's range)")
    fixed = tmp_path / "fixed.yaml"
    fixed.write_text(job.read_text().replace(str(tmp_path / "frac.npy"), str(ids)))
    assert train(fixed, "--set", "run.max_steps=2", "--no-eval").returncode == 0
    out = run_dtrain("predict", fixed, "--input", tmp_path / "frac.npy", "--output", tmp_path / "p.npy")
    assert out.returncode == 3, out.stderr
    assert out.stderr == (f"dtrain: {tmp_path / 'frac.npy'}: row 40, position 2: 2.5 is not a token id "
                          "(model.input.dtype is int32, so features must be whole numbers in int32's range)\n")
