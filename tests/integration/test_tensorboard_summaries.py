"""TensorBoard beyond scalars (issue 28, part 4) with the real binary: weight
and gradient histograms every run.histogram_steps, sample input images
(run.summary_images), the resolved job as text, and the HParams plugin's
experiment, session start and session end. TensorBoard's own EventAccumulator,
text plugin and HParams plugin (its metadata parsers and its session-group
backend over a data provider, as its HTTP handler runs it) read every one, and
the values are checked against the checkpoints, the data and the job."""
import gzip
import io
import json

import numpy as np
import pytest
from PIL import Image
from safetensors.numpy import load_file
from tensorboard import context
from tensorboard.backend.event_processing import data_provider as tb_data_provider
from tensorboard.backend.event_processing import plugin_event_multiplexer
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
from tensorboard.plugins import base_plugin
from tensorboard.plugins.hparams import api_pb2, backend_context, list_session_groups
from tensorboard.plugins.hparams import metadata as hparams_metadata
from tensorboard.plugins.text import text_plugin

from conftest import SAMPLE_IMAGES, SAMPLE_LABELS, run_dtrain

# A small CNN on the MNIST sample, unshuffled (the first batch is examples 0..15),
# plain SGD so that each step's applied gradient is (w_before - w_after) / lr.
JOB = """
model:
  input: {{shape: [28, 28, 1]}}
  layers:
{layers}
  loss: sparse_softmax_cross_entropy
  metrics: [accuracy]
optimizer: {{type: sgd, learning_rate: {lr}}}
data:
  train: {{format: idx, images: {images}, labels: {labels}, take: 512, batch_size: 16,
           scale: 0.00392156862745098}}
  eval: {{format: idx, images: {images}, labels: {labels}, skip: 9000, take: 200, batch_size: 100,
          scale: 0.00392156862745098}}
run:
  model_dir: {model_dir}
  max_steps: {steps}
  save_checkpoints_steps: 1
  keep_checkpoint_max: 20
  save_summary_steps: 3
  log_step_count_steps: 3
  seed: 3
{extra}eval: {{throttle_secs: 0}}
"""
CNN = """    - {type: conv2d, filters: 4, kernel: 3, padding: same, activation: relu}
    - {type: max_pool2d, size: 2}
    - {type: flatten}
    - {type: dense, units: 10}"""
MLP = """    - {type: flatten}
    - {type: dense, units: 16, activation: relu}
    - {type: dense, units: 10}"""
LR = 0.1
SIZES = {k: 0 for k in ("compressedHistograms", "images", "audio", "scalars", "histograms", "tensors")}


def write_job(tmp_path, name="run1", layers=CNN, steps=6, extra="  histogram_steps: 3\n  summary_images: 2\n",
              lr=LR):
    model_dir = tmp_path / "logs" / name
    job = tmp_path / f"{name}.yaml"
    job.write_text(JOB.format(layers=layers, lr=lr, images=SAMPLE_IMAGES, labels=SAMPLE_LABELS,
                              model_dir=model_dir, steps=steps, extra=extra))
    return job, model_dir


def train(job, *args):
    r = run_dtrain("train", job, "--log-format", "plain", *args)
    assert r.returncode == 0, r.stderr
    return r


def accumulator(path):
    ea = EventAccumulator(str(path), size_guidance=SIZES)
    ea.Reload()
    return ea


def checkpoint(model_dir, step):
    return load_file(str(model_dir / f"model.ckpt-{step}.safetensors"))


def sample_pixels(n):
    """The first n images of the MNIST sample, (n, 28, 28) uint8."""
    raw = gzip.decompress(SAMPLE_IMAGES.read_bytes())
    return np.frombuffer(raw[16:16 + n * 784], dtype=np.uint8).reshape(n, 28, 28)


def hparams_content(ea):
    return ea.PluginTagToContent(hparams_metadata.PLUGIN_NAME)


@pytest.fixture(scope="module")
def cnn_run(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("tb")
    job, model_dir = write_job(tmp_path)
    train(job)
    return tmp_path, model_dir, accumulator(model_dir)


def trainable(model_dir):
    """Variable name -> shape of the model's trainable variables (no slots: plain SGD has none)."""
    return {k: v.shape for k, v in checkpoint(model_dir, 6).items()}


def test_weight_and_gradient_histograms_at_every_histogram_step(cnn_run):
    _, model_dir, ea = cnn_run
    shapes = trainable(model_dir)
    assert set(shapes) == {"conv2d/kernel", "conv2d/bias", "dense/kernel", "dense/bias"}
    want_tags = {f"{kind}/{name}" for kind in ("weights", "gradients") for name in shapes}
    assert set(ea.Tags()["histograms"]) == want_tags
    for name, shape in shapes.items():
        numel = int(np.prod(shape))
        for step in (3, 6):
            w = checkpoint(model_dir, step)[name]
            before = checkpoint(model_dir, step - 1)[name]
            grad = (before.astype(np.float64) - w.astype(np.float64)) / LR  # what SGD applied
            events = {e.step: e.histogram_value for e in ea.Histograms(f"weights/{name}")}
            assert sorted(events) == [3, 6]
            h = events[step]
            assert h.num == numel
            assert sum(h.bucket) == numel
            assert h.min == pytest.approx(float(w.min()), abs=0)
            assert h.max == pytest.approx(float(w.max()), abs=0)
            assert h.sum == pytest.approx(float(w.astype(np.float64).sum()), rel=1e-9, abs=1e-9)
            # Each bucket's count equals TensorFlow's bucketing of the values.
            limits = np.array(h.bucket_limit)
            counts = np.bincount(np.searchsorted(limits, w.ravel().astype(np.float64), side="right"),
                                 minlength=len(limits))
            assert counts.tolist() == list(h.bucket)
            events = {e.step: e.histogram_value for e in ea.Histograms(f"gradients/{name}")}
            assert sorted(events) == [3, 6]
            g = events[step]
            assert g.num == numel
            assert sum(g.bucket) == numel
            scale = max(abs(float(grad.min())), abs(float(grad.max())), 1e-6)
            assert g.min == pytest.approx(float(grad.min()), abs=1e-4 * scale + 1e-7)
            assert g.max == pytest.approx(float(grad.max()), abs=1e-4 * scale + 1e-7)
            assert g.max > g.min  # a real gradient, not zeros
    # The Distributions tab's compressed form loads too.
    assert len(ea.CompressedHistograms("gradients/dense/kernel")) == 2


def test_sample_images_are_the_first_batch(cnn_run):
    _, _, ea = cnn_run
    assert sorted(ea.Tags()["images"]) == ["input/image/0", "input/image/1"]
    want = sample_pixels(2)
    for i in range(2):
        (im,) = ea.Images(f"input/image/{i}")
        assert (im.step, im.width, im.height) == (0, 28, 28)
        decoded = np.asarray(Image.open(io.BytesIO(im.encoded_image_string)))
        assert decoded.shape == (28, 28)
        # scale 1/255 is undone: the PNG holds the file's pixels.
        np.testing.assert_array_equal(decoded, want[i])


def test_job_text_is_the_resolved_job(cnn_run):
    _, model_dir, ea = cnn_run
    (ev,) = ea.Tensors("job")
    assert ev.step == 0
    assert ea.SummaryMetadata("job").plugin_data.plugin_name == "text"
    text = ev.tensor_proto.string_val[0].decode()
    resolved = (model_dir / "job.resolved.yaml").read_text()
    assert text == "```yaml\n" + resolved + "```\n"
    assert "type: sgd" in text
    # The text plugin renders it as a code block.
    html = text_plugin.text_array_to_html(np.array(text.encode()), enable_markdown=True)
    assert "<pre><code" in html and "histogram_steps: 3" in html


def test_hparams_session_start_end_and_experiment(cnn_run):
    _, model_dir, ea = cnn_run
    content = hparams_content(ea)
    assert set(content) == {"_hparams_/experiment", "_hparams_/session_start_info", "_hparams_/session_end_info"}
    start = hparams_metadata.parse_session_start_info_plugin_data(content["_hparams_/session_start_info"])
    got = {k: v.WhichOneof("kind") and getattr(v, v.WhichOneof("kind")) for k, v in start.hparams.items()}
    params = sum(int(np.prod(s)) for s in trainable(model_dir).values())
    assert params == 3 * 3 * 1 * 4 + 4 + 14 * 14 * 4 * 10 + 10
    assert got == {
        "optimizer.type": "sgd",
        "optimizer.learning_rate": LR,
        "optimizer.schedule.type": "constant",
        "data.train.batch_size": 16,
        "strategy.type": "one_device",
        "precision.compute": "float32",
        "run.max_steps": 6,
        "run.seed": 3,
        "run.accumulation_steps": 1,
        "model.layers": 4,
        "model.parameters": params,
        "model.loss": "sparse_softmax_cross_entropy",
    }
    assert start.model_uri == str(model_dir)
    end = hparams_metadata.parse_session_end_info_plugin_data(content["_hparams_/session_end_info"])
    assert end.status == api_pb2.STATUS_SUCCESS
    assert end.end_time_secs >= start.start_time_secs > 0
    experiment = hparams_metadata.parse_experiment_plugin_data(content["_hparams_/experiment"])
    assert sorted(i.name for i in experiment.hparam_infos) == sorted(got)
    types = {i.name: i.type for i in experiment.hparam_infos}
    assert types["optimizer.type"] == api_pb2.DATA_TYPE_STRING
    assert types["optimizer.learning_rate"] == api_pb2.DATA_TYPE_FLOAT64
    assert sorted((m.name.group, m.name.tag, m.dataset_type) for m in experiment.metric_infos) == [
        ("", "accuracy", api_pb2.DATASET_TRAINING), ("", "loss", api_pb2.DATASET_TRAINING),
        ("eval", "accuracy", api_pb2.DATASET_VALIDATION), ("eval", "loss", api_pb2.DATASET_VALIDATION)]
    # Every metric the experiment names is a scalar that exists.
    assert {"loss", "accuracy"} <= set(ea.Tags()["scalars"])
    assert {"loss", "accuracy"} <= set(accumulator(model_dir / "eval").Tags()["scalars"])


def list_sessions(logdir):
    """The HParams plugin's ListSessionGroups over `logdir`, through its own backend."""
    multiplexer = plugin_event_multiplexer.EventMultiplexer()
    multiplexer.AddRunsFromDirectory(str(logdir))
    multiplexer.Reload()
    provider = tb_data_provider.MultiplexerDataProvider(multiplexer, str(logdir))
    ctx = backend_context.Context(base_plugin.TBContext(logdir=str(logdir), multiplexer=multiplexer,
                                                        data_provider=provider))
    request = api_pb2.ListSessionGroupsRequest(
        allowed_statuses=[api_pb2.STATUS_UNKNOWN, api_pb2.STATUS_SUCCESS, api_pb2.STATUS_FAILURE,
                          api_pb2.STATUS_RUNNING],
        start_index=0, slice_size=100)
    experiment = ctx.experiment_from_metadata(context.RequestContext(), "", True,
                                              ctx.hparams_metadata(context.RequestContext(), ""), [])
    response = list_session_groups.Handler(context.RequestContext(), ctx, "", request).run()
    return experiment, {g.name: g for g in response.session_groups}


def test_hparams_plugin_backend_lists_the_session_with_its_final_metrics(cnn_run):
    tmp_path, model_dir, _ = cnn_run
    experiment, groups = list_sessions(tmp_path / "logs")
    assert len(experiment.hparam_infos) == 12
    assert set(groups) == {"run1"}
    (session,) = groups["run1"].sessions
    assert session.status == api_pb2.STATUS_SUCCESS
    assert groups["run1"].hparams["optimizer.type"].string_value == "sgd"
    metrics = {(m.name.group, m.name.tag): (m.value, m.training_step) for m in session.metric_values}
    saved = json.loads((model_dir / "eval" / "metrics.json").read_text())
    assert saved["global_step"] == 6
    assert metrics[("eval", "accuracy")] == (pytest.approx(saved["metrics"]["accuracy"], rel=1e-6), 6)
    assert metrics[("eval", "loss")] == (pytest.approx(saved["metrics"]["loss"], rel=1e-6), 6)
    train_loss = {e.step: e.value for e in accumulator(model_dir).Scalars("loss")}
    assert metrics[("", "loss")] == (pytest.approx(train_loss[6]), 6)


def test_defaults_write_no_histograms(tmp_path):
    job, model_dir = write_job(tmp_path, steps=3, extra="")
    train(job, "--no-eval")
    ea = accumulator(model_dir)
    assert ea.Tags()["histograms"] == []
    assert ea.Tags()["distributions"] == []
    # summary_images defaults to 3; the text and hparams are written whenever summaries are.
    assert sorted(ea.Tags()["images"]) == ["input/image/0", "input/image/1", "input/image/2"]
    assert "job" in ea.Tags()["tensors"]
    assert set(hparams_content(ea)) == {"_hparams_/experiment", "_hparams_/session_start_info",
                                        "_hparams_/session_end_info"}
    r = run_dtrain("validate", job)
    assert r.returncode == 0, r.stderr
    assert "  save_summary_steps: 3\n  histogram_steps: 0\n  summary_images: 3\n" in r.stdout


FLAT_JOB = """
model:
  input: {{shape: [12]}}
  layers:
    - {{type: dense, units: 16, activation: relu}}
    - {{type: dense, units: 3}}
  loss: sparse_softmax_cross_entropy
optimizer: {{type: adam, learning_rate: 0.01}}
data:
  train: {{format: npy, images: {d}/x.npy, labels: {d}/y.npy, batch_size: 32}}
run: {{model_dir: {d}/logs/flat, max_steps: 4, save_summary_steps: 0, histogram_steps: 2}}
"""


def test_flat_input_has_no_images_and_histograms_alone_open_the_writer(tmp_path):
    rng = np.random.default_rng(0)
    np.save(tmp_path / "x.npy", rng.normal(size=(256, 12)).astype(np.float32))
    np.save(tmp_path / "y.npy", rng.integers(0, 3, size=256))
    job = tmp_path / "flat.yaml"
    job.write_text(FLAT_JOB.format(d=tmp_path))
    train(job, "--no-eval")
    ea = accumulator(tmp_path / "logs" / "flat")
    assert ea.Tags()["images"] == []  # a flat input is no image
    assert ea.Tags()["scalars"] == []  # save_summary_steps: 0
    assert sorted(e.step for e in ea.Histograms("weights/dense/kernel")) == [2, 4]
    assert sorted(e.step for e in ea.Histograms("gradients/dense_1/bias")) == [2, 4]
    assert ea.Histograms("weights/dense/kernel")[0].histogram_value.num == 12 * 16
    assert "job" in ea.Tags()["tensors"]
    start = hparams_metadata.parse_session_start_info_plugin_data(
        hparams_content(ea)["_hparams_/session_start_info"])
    assert start.hparams["optimizer.type"].string_value == "adam"
    assert start.hparams["model.parameters"].number_value == 12 * 16 + 16 + 16 * 3 + 3
    # No metric is listed for data that the job does not have (no data.eval).
    experiment = hparams_metadata.parse_experiment_plugin_data(hparams_content(ea)["_hparams_/experiment"])
    assert [(m.name.group, m.name.tag) for m in experiment.metric_infos] == [("", "loss")]


def test_failed_run_ends_its_session_with_failure(tmp_path):
    job, model_dir = write_job(tmp_path, steps=20, extra="", lr=1e30)
    r = run_dtrain("train", job, "--no-eval", "--log-format", "plain")
    assert r.returncode != 0
    assert "loss is" in r.stderr
    content = hparams_content(accumulator(model_dir))
    end = hparams_metadata.parse_session_end_info_plugin_data(content["_hparams_/session_end_info"])
    assert end.status == api_pb2.STATUS_FAILURE


@pytest.mark.parametrize("field,value,message", [
    ("histogram_steps", "-1", "run.histogram_steps: -1 is below the minimum 0"),
    ("summary_images", "-2", "run.summary_images: -2 is below the minimum 0"),
    ("summary_images", "many", 'run.summary_images: expected an integer >= 0, got "many"'),
])
def test_bad_values_are_config_errors(tmp_path, field, value, message):
    job, _ = write_job(tmp_path, extra=f"  {field}: {value}\n")
    r = run_dtrain("validate", job)
    assert r.returncode == 2
    line = job.read_text().splitlines().index(f"  {field}: {value}") + 1
    assert r.stderr == f"dtrain: {job}:{line}:{len(field) + 5}: {message}\n"


def grad_extremes(model_dir):
    ea = accumulator(model_dir)
    return {tag: [(e.step, e.histogram_value.num, e.histogram_value.min, e.histogram_value.max)
                  for e in ea.Histograms(tag)]
            for tag in ea.Tags()["histograms"] if tag.startswith("gradients/")}


@pytest.mark.parametrize("strategy", ["towers", "mirrored", "collective"])
def test_gradient_histograms_of_every_strategy_equal_one_device(tmp_path, strategy):
    """Replicated strategies apply the same summed gradients as one_device
    (within float32 summation order): their histograms agree."""
    extra = "  histogram_steps: 2\n"
    job, ref_dir = write_job(tmp_path, name="one", steps=4, extra=extra)
    train(job, "--no-eval")
    job, dir_ = write_job(tmp_path, name=strategy, steps=4, extra=extra)
    job.write_text(job.read_text().replace("optimizer:", f"strategy: {{type: {strategy}, devices: [cpu:0, cpu:1]}}\n"
                                           "optimizer:"))
    train(job, "--no-eval")
    want, got = grad_extremes(ref_dir), grad_extremes(dir_)
    assert sorted(got) == sorted(want) and len(got) == 4
    for tag, events in want.items():
        assert [(s, n) for s, n, _, _ in got[tag]] == [(s, n) for s, n, _, _ in events]
        assert [s for s, _, _, _ in events] == [2, 4]
        for (_, _, lo, hi), (_, _, lo_want, hi_want) in zip(got[tag], events):
            scale = max(abs(lo_want), abs(hi_want))
            assert lo == pytest.approx(lo_want, abs=1e-4 * scale)
            assert hi == pytest.approx(hi_want, abs=1e-4 * scale)


def test_parameter_server_writes_weights_only_and_says_so(tmp_path):
    from test_cluster import clean_env
    job, model_dir = write_job(tmp_path, name="ps", steps=4, extra="  histogram_steps: 2\n")
    job.write_text(job.read_text().replace("optimizer:", "strategy: {type: parameter_server, mode: sync}\noptimizer:"))
    r = run_dtrain("launch", "--workers", 1, "--ps", 1, job, "--no-eval", "--log-format", "plain", env=clean_env(),
                   timeout=300)
    assert r.returncode == 0, r.stderr[-4000:]
    assert ("run.histogram_steps: strategy parameter_server does not hold the applied gradients on the chief "
            "(the ps tasks apply them): weight histograms only") in r.stderr
    ea = accumulator(model_dir)
    assert sorted(ea.Tags()["histograms"]) == ["weights/conv2d/bias", "weights/conv2d/kernel", "weights/dense/bias",
                                               "weights/dense/kernel"]
    w = checkpoint(model_dir, 4)["dense/kernel"]
    h = {e.step: e.histogram_value for e in ea.Histograms("weights/dense/kernel")}
    assert sorted(h) == [2, 4]
    assert (h[4].num, h[4].min, h[4].max) == (w.size, float(w.min()), float(w.max()))
