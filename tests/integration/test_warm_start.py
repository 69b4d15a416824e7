"""run.warm_start through the real binary: a model fine-tuned from the
mnist_cnn sample's checkpoint with a new output layer starts at step 0 with
the copied variables bit-identical (its step-0 checkpoint is compared with the
source in Python), renames and regex selection copy what they name, every
strategy restores the warm-started state, and each mistake ends with a pinned
one-line error and exit 2."""
import numpy as np
import pytest
from safetensors.numpy import load_file

from conftest import SOURCE_ROOT, run_dtrain

SAMPLE = SOURCE_ROOT / "sample_configs/mnist_cnn.yaml"
DATA = SOURCE_ROOT / "sample_configs/data"

# mnist_cnn's model with a new output layer `head` (the sample's dense_1
# becomes a new variable name) and a fixed layout, so that the places in the
# pinned errors are known: run.warm_start is on line 26.
JOB = """model:
  input: {{shape: [28, 28, 1]}}
  layers:
    - {{type: conv2d, filters: 32, kernel: 3, padding: same, activation: relu}}
    - {{type: max_pool2d, size: 2}}
    - {{type: conv2d, filters: 64, kernel: 3, padding: same, activation: relu}}
    - {{type: max_pool2d, size: 2}}
    - {{type: flatten}}
    - {{type: dense, units: 128, activation: relu}}
    - {{type: dropout, rate: 0.3}}
    - {{{head}}}
  loss: sparse_softmax_cross_entropy
  metrics: [accuracy]
optimizer: {{type: adam, learning_rate: 0.001}}
strategy: {{type: {strategy}, devices: {devices}}}
data:
  train: {{format: idx, images: {data}/mnist-sample-train-images-idx3-ubyte.gz,
          labels: {data}/mnist-sample-train-labels-idx1-ubyte.gz, take: 2000, batch_size: 32,
          scale: 0.00392156862745098}}
run:
  model_dir: {model_dir}
  max_steps: {max_steps}
  save_checkpoints_steps: 100
  log_step_count_steps: 1
  seed: 3
  warm_start: {warm_start}
"""


@pytest.fixture(scope="module")
def source(tmp_path_factory):
    """The mnist_cnn sample trained 4 steps: its checkpoint (variables and Adam slots)."""
    model_dir = tmp_path_factory.mktemp("source") / "mnist_cnn"
    out = run_dtrain("train", SAMPLE, "--model-dir", model_dir, "--no-eval", "--set", "run.max_steps=4",
                     "--set", "run.save_checkpoints_steps=4")
    assert out.returncode == 0, out.stderr
    return model_dir


def write_job(tmp_path, warm_start, head="name: head, type: dense, units: 10", strategy="one_device",
              devices="[cpu:0]", max_steps=3):
    job = tmp_path / "fine_tune.yaml"
    job.write_text(JOB.format(head=head, strategy=strategy, devices=devices, data=DATA, model_dir=tmp_path / "run",
                              max_steps=max_steps, warm_start=warm_start))
    return job, tmp_path / "run"


def test_new_output_layer_starts_at_step_0_with_the_copied_variables_bit_identical(source, tmp_path):
    job, model_dir = write_job(tmp_path, f"{{from: {source}}}")
    out = run_dtrain("train", job, "--log-format", "plain")
    assert out.returncode == 0, out.stderr
    src_path = source / "model.ckpt-4.safetensors"
    assert (f"warm start from {src_path}: copied 6 of 8 variables (optimizer slots start fresh): conv2d/kernel, "
            "conv2d/bias, conv2d_1/kernel, conv2d_1/bias, dense/kernel, dense/bias") in out.stderr
    assert ("warm start: 2 variables not filled, initialised by their initializers: head/kernel [128, 10] (not in "
            "the checkpoint), head/bias [10] (not in the checkpoint)") in out.stderr
    src = load_file(src_path)
    step0 = load_file(model_dir / "model.ckpt-0.safetensors")
    for name in ["conv2d/kernel", "conv2d/bias", "conv2d_1/kernel", "conv2d_1/bias", "dense/kernel", "dense/bias"]:
        assert step0[name].tobytes() == src[name].tobytes(), name
        # slots: false: Adam's moments start at zero, not the source's.
        assert not np.any(step0[name + "/m"]) and np.any(src[name + "/m"]), name
    assert not np.array_equal(step0["head/kernel"], src["dense_1/kernel"])
    # Training starts at step 0 and goes to max_steps; the step-0 state moved.
    final = load_file(model_dir / "model.ckpt-3.safetensors")
    assert not np.array_equal(final["conv2d/kernel"], step0["conv2d/kernel"])
    assert "step 1/3  loss" in out.stderr and "training finished at step 3" in out.stderr
    # A restart resumes from its own checkpoint and copies nothing.
    again = run_dtrain("train", job, "--log-format", "plain", "--set", "run.max_steps=5")
    assert again.returncode == 0, again.stderr
    assert f"resuming from {model_dir / 'model.ckpt-3.safetensors'} at step 3" in again.stderr
    assert "warm start" not in again.stderr


def test_regex_and_rename_select_and_map_variables_with_their_slots(source, tmp_path):
    job, model_dir = write_job(tmp_path, "{from: %s, vars: 'conv2d_1/.*|head/.*', slots: true, "
                                         "rename: {head/kernel: dense_1/kernel, head/bias: dense_1/bias}}" % source)
    out = run_dtrain("train", job, "--log-format", "plain")
    assert out.returncode == 0, out.stderr
    assert ("copied 4 of 8 variables with their optimizer slots: conv2d_1/kernel, conv2d_1/bias, "
            "head/kernel <- dense_1/kernel, head/bias <- dense_1/bias") in out.stderr
    assert ("warm start: 4 variables not filled, initialised by their initializers: conv2d/kernel [3, 3, 1, 32] "
            "(not selected by vars), conv2d/bias [32] (not selected by vars), dense/kernel [3136, 128] (not selected "
            "by vars), dense/bias [128] (not selected by vars)") in out.stderr
    src = load_file(source / "model.ckpt-4.safetensors")
    step0 = load_file(model_dir / "model.ckpt-0.safetensors")
    pairs = {"conv2d_1/kernel": "conv2d_1/kernel", "conv2d_1/bias": "conv2d_1/bias",
             "head/kernel": "dense_1/kernel", "head/bias": "dense_1/bias"}
    for new, old in pairs.items():
        for suffix in ["", "/m", "/v"]:
            assert step0[new + suffix].tobytes() == src[old + suffix].tobytes(), new + suffix
    for name in ["conv2d/kernel", "dense/kernel"]:
        assert not np.array_equal(step0[name], src[name]), name
        assert not np.any(step0[name + "/m"]), name


@pytest.mark.parametrize("strategy,devices", [("mirrored", "[cpu:0, cpu:1]"), ("towers", "[cpu:0, cpu:1]")])
def test_every_strategy_starts_from_the_warm_started_state(source, tmp_path, strategy, devices):
    job, model_dir = write_job(tmp_path, f"{{from: {source}, vars: 'conv2d.*'}}", strategy=strategy,
                               devices=devices, max_steps=1)
    out = run_dtrain("train", job, "--log-format", "plain")
    assert out.returncode == 0, out.stderr
    src = load_file(source / "model.ckpt-4.safetensors")
    step0 = load_file(model_dir / "model.ckpt-0.safetensors")
    assert step0["conv2d_1/kernel"].tobytes() == src["conv2d_1/kernel"].tobytes()
    # The step-0 checkpoint is what the replicas computed with: one step later
    # the copied variables moved by one Adam step (at most ~lr each).
    final = load_file(model_dir / "model.ckpt-1.safetensors")
    delta = np.abs(final["conv2d_1/kernel"] - src["conv2d_1/kernel"])
    assert 0 < delta.max() <= 1.01e-3


@pytest.mark.parametrize("strategy,launch", [
    ("collective", ["--workers", 2]),
    ("parameter_server", ["--chief", "--workers", 1, "--ps", 1, "--set", "strategy.mode=sync"]),
])
def test_multi_worker_strategies_start_from_the_warm_started_state(source, tmp_path, strategy, launch):
    job, model_dir = write_job(tmp_path, f"{{from: {source}, vars: 'conv2d.*'}}", strategy=strategy,
                               devices="[cpu:0]", max_steps=1)
    out = run_dtrain("launch", job, *launch, "--no-eval", "--log-format", "plain", timeout=300)
    assert out.returncode == 0, out.stderr
    assert "copied 4 of 8 variables" in out.stderr
    src = load_file(source / "model.ckpt-4.safetensors")
    step0 = load_file(model_dir / "model.ckpt-0.safetensors")
    final = load_file(model_dir / "model.ckpt-1.safetensors")
    for name in ["conv2d/kernel", "conv2d_1/kernel"]:
        assert step0[name].tobytes() == src[name].tobytes(), name
        delta = np.abs(final[name] - src[name])
        assert 0 < delta.max() <= 1.01e-3, name


def error_cases(src):
    ckpt = src / "model.ckpt-4.safetensors"
    return [
        ("missing_checkpoint", f"{{from: {src}/nothing_here}}", None,
         f"@JOB@:26:22: run.warm_start.from: {src}/nothing_here does not exist; expected a checkpoint file "
         "(model.ckpt-N.safetensors) or a model_dir with checkpoints"),
        ("shape_mismatch", f"{{from: {src}}}", "type: dense, units: 5",
         f"@JOB@:26:15: run.warm_start: the model's dense_1/kernel has shape [128, 5] but the checkpoint's "
         f"dense_1/kernel has shape [128, 10] ({ckpt}); leave it out of run.warm_start.vars, or rename it"),
        ("rename_source_missing", f"{{from: {src}, rename: {{head/kernel: dense_2/kernel}}}}", None,
         f"@JOB@:26:{len(str(src)) + 46}: run.warm_start.rename.head/kernel: \"dense_2/kernel\" is not in the "
         f"checkpoint {ckpt} (did you mean \"dense_1/kernel\"?)"),
        ("rename_unknown_variable", f"{{from: {src}, rename: {{head/kernell: dense_1/kernel}}}}", None,
         f"@JOB@:26:{len(str(src)) + 33}: run.warm_start.rename: \"head/kernell\" is not a variable of the model "
         "(did you mean \"head/kernel\"?)"),
        ("invalid_regex", f"{{from: {src}, vars: 'conv2d['}}", None,
         f"@JOB@:26:{len(str(src)) + 30}: run.warm_start.vars: \"conv2d[\" is not a valid ECMAScript regular "
         "expression: it has an unmatched ["),
        ("selects_nothing", f"{{from: {src}, vars: conv2d}}", None,
         f"@JOB@:26:{len(str(src)) + 30}: run.warm_start.vars: \"conv2d\" selects none of the model's variables "
         "(conv2d/kernel, conv2d/bias, conv2d_1/kernel, conv2d_1/bias, dense/kernel, dense/bias, ... (8 in all)); "
         "it must match a whole name"),
    ]


@pytest.mark.parametrize("case", ["missing_checkpoint", "shape_mismatch", "rename_source_missing",
                                  "rename_unknown_variable", "invalid_regex", "selects_nothing"])
def test_mistakes_are_pinned_config_errors(source, tmp_path, case):
    name, warm, head, want = next(c for c in error_cases(source) if c[0] == case)
    job, model_dir = write_job(tmp_path, warm, **({"head": head} if head else {}))
    out = run_dtrain("train", job)
    assert out.returncode == 2, out.stderr
    assert out.stderr == "dtrain: " + want.replace("@JOB@", str(job)) + "\n"
    assert not list(model_dir.glob("model.ckpt-*"))
