"""one_device on gpu:0 through the real binary. On any machine: the MLP and CNN
samples validate for gpu:0 (every layer, the loss and the optimizer have a GPU
kernel), and without a GPU training says why it cannot use gpu:0 (exit 2,
nothing written). With a GPU: 60 steps of the MLP on gpu:0 end within float32
tolerance of the same 60 steps on cpu:0, and the GPU checkpoint resumes on the
CPU; the CNN sample likewise, and a CPU checkpoint resumes on the GPU."""
import re

import numpy as np
import pytest
from safetensors.numpy import load_file

from conftest import SOURCE_ROOT, run_dtrain

GPU = "strategy.devices=[gpu:0]"


def gpu_absent_reason():
    """Why dtrain sees no GPU ("" when it sees one)."""
    text = run_dtrain("devices").stdout
    if re.search(r"^gpu:0 ", text, re.M):
        return ""
    m = re.search(r"^GPUs +none \((.+)\)$", text, re.M)
    return m.group(1) if m else "no GPU listed"


@pytest.mark.parametrize("sample", ["mnist_mlp", "mnist_cnn"])
def test_the_sample_validates_for_gpu0(sample):
    out = run_dtrain("validate", SOURCE_ROOT / f"sample_configs/{sample}.yaml", "--set", GPU)
    assert out.returncode == 0, out.stderr
    assert out.stderr == ""


def test_a_dilated_conv_on_gpu0_is_refused_when_the_job_loads(tmp_path):
    """cuDNN may offer no float32 FMA-math backward algorithm for a dilated
    convolution: the support table refuses it for GPUs, on any machine, naming
    the layer's line and what to do; the same job validates on the CPU."""
    text = (SOURCE_ROOT / "sample_configs/mnist_cnn.yaml").read_text()
    first = "    - {type: conv2d, filters: 32, kernel: 3, padding: same, activation: relu}\n"
    assert first in text
    job = tmp_path / "dilated.yaml"
    data = f"{SOURCE_ROOT / 'sample_configs/data'}/"
    job.write_text(text.replace(first, first.replace("kernel: 3,", "kernel: 3, dilation: 2,"))
                   .replace("images: data/", f"images: {data}").replace("labels: data/", f"labels: {data}"))
    line = text[:text.index(first)].count("\n") + 1
    assert run_dtrain("validate", job).returncode == 0
    out = run_dtrain("validate", job, "--set", GPU)
    assert out.returncode == 2, out.stderr
    assert re.fullmatch(rf"dtrain: {re.escape(str(job))}:{line}:7: model\.layers\[0\] \(conv2d\): conv2d cannot "
                        r"run on gpu:0 in float32: the cuda backend has no float32 conv2d_dilated \(cuDNN may offer no "
                        r"NHWC float32 backward algorithm .*; use dilation 1 or a cpu:N device\)\n", out.stderr), out.stderr


def test_without_a_gpu_training_on_gpu0_says_why(mlp_job):
    if not gpu_absent_reason():
        pytest.skip("this machine has a GPU")
    job, model_dir = mlp_job()
    out = run_dtrain("train", job, "--set", GPU)
    assert out.returncode == 2
    # The place is where the device was written: here the --set.
    assert re.fullmatch(rf"dtrain: --set {re.escape(GPU)}: strategy\.devices\[0\]: gpu:0 cannot be used: .+\n", out.stderr), \
        out.stderr
    assert not model_dir.exists()


def test_gpu0_trains_as_cpu0_and_its_checkpoint_resumes_on_the_cpu(mlp_job, tmp_path):
    why = gpu_absent_reason()
    if why:
        pytest.skip(f"no GPU: {why}")
    job, _ = mlp_job(max_steps=60, save_steps=30)
    runs = {}
    for name, sets in {"cpu": [], "gpu": ["--set", GPU]}.items():
        out = run_dtrain("train", job, "--model-dir", tmp_path / name, "--no-eval", *sets)
        assert out.returncode == 0, out.stderr
        runs[name] = load_file(str(tmp_path / name / "model.ckpt-60.safetensors"))
    assert runs["cpu"].keys() == runs["gpu"].keys()
    for k in runs["cpu"]:
        ref = runs["cpu"][k]
        diff = np.linalg.norm(runs["gpu"][k] - ref) / max(np.linalg.norm(ref), 1e-12)
        assert diff < 1e-3, f"{k}: gpu:0 differs from cpu:0 by {diff:.3g} (relative) after 60 steps"
    # 30 steps on gpu:0, resumed for 30 more on cpu:0: ends where the CPU run ends.
    out = run_dtrain("train", job, "--model-dir", tmp_path / "switch", "--no-eval", "--set", GPU,
                     "--set", "run.max_steps=30")
    assert out.returncode == 0, out.stderr
    out = run_dtrain("train", job, "--model-dir", tmp_path / "switch", "--no-eval")
    assert out.returncode == 0, out.stderr
    resumed = load_file(str(tmp_path / "switch" / "model.ckpt-60.safetensors"))
    for k in runs["cpu"]:
        ref = runs["cpu"][k]
        diff = np.linalg.norm(resumed[k] - ref) / max(np.linalg.norm(ref), 1e-12)
        assert diff < 1e-3, f"{k}: 30 steps on gpu:0 then 30 on cpu:0 differ from 60 on cpu:0 by {diff:.3g}"


def relative_diffs(a, b):
    """{name: |a - b| / |b|} over the variables of two checkpoints (same names)."""
    assert a.keys() == b.keys()
    return {k: np.linalg.norm(a[k] - b[k]) / max(np.linalg.norm(b[k]), 1e-12) for k in b}


def test_cnn_sample_on_gpu0_trains_as_on_cpu0_and_checkpoints_move_both_ways(tmp_path):
    """mnist_cnn (conv2d + relu and max_pool2d through cuDNN): 40 steps on gpu:0
    against cpu:0; 20 on one device resumed for 20 on the other, both ways. cuDNN
    and oneDNN sum convolutions in other orders and adam amplifies the drift of
    near-zero gradients, so the bound is 5e-3 relative per variable (a missed
    update or a wrong gradient is order 1)."""
    why = gpu_absent_reason()
    if why:
        pytest.skip(f"no GPU: {why}")
    job = SOURCE_ROOT / "sample_configs/mnist_cnn.yaml"

    def train(model_dir, steps, device):
        sets = ["--set", f"run.max_steps={steps}", "--set", "run.save_checkpoints_steps=20"]
        if device == "gpu":
            sets += ["--set", GPU]
        out = run_dtrain("train", job, "--model-dir", tmp_path / model_dir, "--no-eval", *sets)
        assert out.returncode == 0, out.stderr

    train("cpu", 40, "cpu")
    train("gpu", 40, "gpu")
    ref = load_file(str(tmp_path / "cpu" / "model.ckpt-40.safetensors"))
    for first, second in [("gpu", "cpu"), ("cpu", "gpu")]:
        train(f"{first}_{second}", 20, first)
        train(f"{first}_{second}", 40, second)
    for run in ["gpu", "gpu_cpu", "cpu_gpu"]:
        got = load_file(str(tmp_path / run / "model.ckpt-40.safetensors"))
        for k, diff in relative_diffs(got, ref).items():
            assert diff < 5e-3, f"{run}: {k} differs from 40 steps on cpu:0 by {diff:.3g} (relative)"
