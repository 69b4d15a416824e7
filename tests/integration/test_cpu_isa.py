"""The instruction-set cap (engine/cpu_isa.*): DTRAIN_MAX_CPU_ISA lowers the
ISA of dtrain's own kernels and oneDNN's, ONEDNN_MAX_CPU_ISA alone lowers
both, `dtrain devices` and start-up say which is in use, and a name that is
not a level is a usage error."""
import re

import pytest

from conftest import SOURCE_ROOT, run_dtrain

LEVELS = ["baseline", "sse4.2", "avx2", "avx512", "avx512_bf16"]
ONEDNN_FOR = {"baseline": "sse41", "sse4.2": "avx", "avx2": "avx2", "avx512": "avx512_core"}


def devices(**env):
    out = run_dtrain("devices", env={"DTRAIN_MAX_CPU_ISA": "", "ONEDNN_MAX_CPU_ISA": "", **env})
    assert out.returncode == 0, out.stderr
    kernels = re.search(r"^CPU kernels +ISA (\S+)(.*)$", out.stdout, re.M)
    onednn = re.search(r"^oneDNN +[\d.]+, ISA (\S+)$", out.stdout, re.M)
    assert kernels and onednn, out.stdout
    return kernels.group(1), kernels.group(2), onednn.group(1)


def detected():
    return devices()[0]


@pytest.mark.parametrize("cap", ["baseline", "avx2", "avx512"])
def test_dtrain_max_cpu_isa_caps_our_kernels_and_onednn(cap):
    cpu = detected()
    if LEVELS.index(cpu) < LEVELS.index(cap):
        pytest.skip(f"this CPU has {cpu}, below the cap {cap}: nothing to lower")
    kernels, note, onednn = devices(DTRAIN_MAX_CPU_ISA=cap)
    assert kernels == cap
    if cap != cpu:
        assert note == f" (capped by DTRAIN_MAX_CPU_ISA={cap}; the CPU has {cpu})"
    assert onednn == ONEDNN_FOR[cap]


def test_onednn_max_cpu_isa_alone_caps_both():
    cpu = detected()
    if LEVELS.index(cpu) < LEVELS.index("avx2"):
        pytest.skip(f"this CPU has {cpu}, below AVX2")
    kernels, _, onednn = devices(ONEDNN_MAX_CPU_ISA="AVX2")
    assert (kernels, onednn) == ("avx2", "avx2")


def test_an_unknown_level_is_a_usage_error():
    out = run_dtrain("devices", env={"DTRAIN_MAX_CPU_ISA": "avx3"})
    assert out.returncode == 2
    assert out.stderr == ('dtrain: DTRAIN_MAX_CPU_ISA: "avx3" is not one of baseline, sse4.2, avx2, avx512, '
                          'avx512_bf16 (unset it to use everything this CPU has)\n')


def test_training_says_which_isa_its_kernels_use(tmp_path):
    out = run_dtrain("train", SOURCE_ROOT / "sample_configs/mnist_mlp.yaml", "--model-dir", tmp_path / "m",
                     "--no-eval", "--log-format", "plain", "--set", "run.max_steps=2",
                     env={"DTRAIN_MAX_CPU_ISA": "baseline", "ONEDNN_MAX_CPU_ISA": ""})
    assert out.returncode == 0, out.stderr
    line = next(l for l in out.stderr.splitlines() if l.startswith("cpu: "))
    assert line.startswith("cpu: kernels use baseline") and line.endswith("; oneDNN sse41"), line
