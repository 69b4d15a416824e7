"""precision.compute through the real dtrain binary: bfloat16 trains like
float32 (the loss curves agree closely but not exactly), its checkpoints are
float32 and resume under float32 and the other way round, and float16 on a
CPU device is a config error that says why."""
import numpy as np
import pytest
from safetensors import safe_open
from safetensors.numpy import load_file

from conftest import SOURCE_ROOT, run_dtrain
from test_cluster import clean_env
from test_collective import mlp_collective_job


def losses(stderr):
    """{step: loss} from the plain log's step lines."""
    out = {}
    for line in stderr.splitlines():
        if " loss " in line and "step " in line:
            step = int(line.split("step ")[1].split("/")[0])
            out[step] = float(line.split("loss ")[1].split()[0])
    return out


def train(job, model_dir, *sets):
    args = []
    for s in sets:
        args += ["--set", s]
    return run_dtrain("train", job, "--model-dir", model_dir, "--no-eval", "--log-format", "plain", *args,
                      env=clean_env())


def test_bfloat16_tracks_float32_and_writes_float32_checkpoints(tmp_path):
    job = mlp_collective_job(tmp_path, 32, max_steps=20)
    f32 = train(job, tmp_path / "f32", "strategy.type=one_device")
    bf16 = train(job, tmp_path / "bf16", "strategy.type=one_device", "precision.compute=bfloat16")
    assert f32.returncode == 0, f32.stderr
    assert bf16.returncode == 0, bf16.stderr
    a, b = losses(f32.stderr), losses(bf16.stderr)
    assert a.keys() == b.keys() and 20 in a
    assert b[20] < b[5]  # it trains
    for step in a:
        assert abs(a[step] - b[step]) <= 0.02 * abs(a[step]), (step, a[step], b[step])
    # Not float32 under another name: bfloat16 rounding shows in the variables.
    va = load_file(str(tmp_path / "f32" / "model.ckpt-20.safetensors"))
    vb = load_file(str(tmp_path / "bf16" / "model.ckpt-20.safetensors"))
    assert all(vb[k].dtype == np.float32 for k in vb)
    assert max(np.abs(va[k] - vb[k]).max() for k in va) > 1e-6
    with safe_open(str(tmp_path / "bf16" / "model.ckpt-20.safetensors"), "np") as f:
        meta = f.metadata()
    assert meta["precision_compute"] == "bfloat16"
    assert meta["loss_scale"] == "1"


def test_checkpoints_resume_across_precisions(tmp_path):
    job = mlp_collective_job(tmp_path, 32, max_steps=10, save_steps=10)
    for first, second in [("bfloat16", "float32"), ("float32", "bfloat16")]:
        d = tmp_path / f"{first}-then-{second}"
        a = train(job, d, "strategy.type=one_device", f"precision.compute={first}")
        assert a.returncode == 0, a.stderr
        b = train(job, d, "strategy.type=one_device", f"precision.compute={second}", "run.max_steps=20")
        assert b.returncode == 0, b.stderr
        assert "at step 10" in b.stderr
        after = losses(b.stderr)
        assert 20 in after and np.isfinite(after[20])
        with safe_open(str(d / "model.ckpt-20.safetensors"), "np") as f:
            assert f.metadata()["precision_compute"] == second


def test_float16_on_a_cpu_device_is_a_config_error(tmp_path):
    job = mlp_collective_job(tmp_path, 32)
    text = job.read_text().replace("run:\n", "precision: {compute: float16}\nrun:\n")
    job.write_text(text)
    line = text.splitlines().index("precision: {compute: float16}") + 1
    out = train(job, tmp_path / "m", "strategy.type=one_device")
    assert out.returncode == 2
    assert out.stderr.strip().endswith(
        f"{job}:{line}:22: precision.compute: float16 needs GPU devices, and strategy.devices has cpu:0: oneDNN has "
        "no float16 matmul or convolution on the CPU; use bfloat16 on the CPU"), out.stderr
    assert not (tmp_path / "m").exists() or not list((tmp_path / "m").glob("*.safetensors"))


# The AVX2 cap as dtrain sets it for oneDNN, and as oneDNN reads it itself.
AVX2_CAPS = {"DTRAIN_MAX_CPU_ISA": {"DTRAIN_MAX_CPU_ISA": "avx2", "ONEDNN_MAX_CPU_ISA": ""},
             "ONEDNN_MAX_CPU_ISA": {"DTRAIN_MAX_CPU_ISA": "", "ONEDNN_MAX_CPU_ISA": "AVX2"}}


@pytest.mark.parametrize("cap", sorted(AVX2_CAPS))
def test_bfloat16_on_a_cpu_without_native_bf16_is_emulated_and_says_so(cap, tmp_path):
    """Under the AVX2 cap oneDNN has no bf16 matmul or convolution: the CNN
    still trains in bfloat16 (operands rounded to bf16, math in float32), the
    start-up names the path, and the loss stays within what bf16 rounding
    gives on the native path (checked against float32 as above)."""
    job = SOURCE_ROOT / "sample_configs/mnist_cnn.yaml"
    common = ["train", job, "--no-eval", "--log-format", "plain", "--set", "run.max_steps=30",
              "--set", "run.log_step_count_steps=10"]
    capped = clean_env(**AVX2_CAPS[cap])
    bf16 = run_dtrain(*common, "--model-dir", tmp_path / "bf16", "--set", "precision.compute=bfloat16", env=capped)
    assert bf16.returncode == 0, bf16.stderr
    assert ("bfloat16: emulated on avx2 (no native bf16 on this CPU): operands rounded to bf16, math in float32"
            in bf16.stderr.splitlines())
    assert "terminate called" not in bf16.stderr
    f32 = run_dtrain(*common, "--model-dir", tmp_path / "f32", env=capped)
    assert f32.returncode == 0, f32.stderr
    assert "bfloat16:" not in f32.stderr
    a, b = losses(f32.stderr), losses(bf16.stderr)
    assert a.keys() == b.keys() and 30 in a
    assert b[30] < b[10]  # it trains
    for step in a:
        assert abs(a[step] - b[step]) <= 0.02 * abs(a[step]), (step, a[step], b[step])
