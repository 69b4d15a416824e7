"""The CUDA module (libdtrain_cuda.so): the dtrain executable links no CUDA
library, a CPU training run never loads one, `dtrain devices` loads the module
or says which file failed and why, and DTRAIN_CUDA_MODULE picks the file.
Module-specific tests skip in a CPU-only build (`devices` says "not built in")."""
import os
import re
import shutil
import subprocess

import pytest

from conftest import SOURCE_ROOT, dtrain_bin, peak_rss_command, read_peak_rss_kib, run_dtrain

CUDA_LIBRARY = re.compile(r"\blib(cudart|cublas|cublasLt|cudnn[a-z_]*|nccl|cuda)\.so")


def devices_text(env=None):
    out = run_dtrain("devices", env=env)
    assert out.returncode == 0, out.stderr
    return out.stdout


@pytest.fixture(scope="module")
def cuda_build():
    if "CUDA          not built in" in devices_text():
        pytest.skip("this dtrain was built without CUDA (no module)")


def run_tracing_loads(args, tmp_path, env=None):
    """Runs dtrain with the dynamic loader reporting every library it maps
    (LD_DEBUG=files, dlopen included); returns (returncode, stderr, libraries, peak RSS in KiB)."""
    trace = tmp_path / "ld-trace"
    full_env = dict(os.environ, **(env or {}))
    report = tmp_path / "peak-rss"
    cmd = peak_rss_command([dtrain_bin(), *args], report,
                           child_env={"LD_DEBUG": "files", "LD_DEBUG_OUTPUT": str(trace)})
    p = subprocess.Popen(cmd, cwd=SOURCE_ROOT, env=full_env,
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    stderr = p.stderr.read()
    p.wait()
    traced = "".join(f.read_text(errors="replace") for f in tmp_path.glob("ld-trace.*"))
    assert "file=" in traced, "LD_DEBUG=files reported nothing: cannot tell which libraries were loaded"
    libraries = set(re.findall(r"file=(\S+)\s+\[", traced))
    return p.returncode, stderr, libraries, read_peak_rss_kib(report)


def test_executable_links_no_cuda_library():
    ldd = shutil.which("ldd")
    if ldd is None:
        pytest.skip("no ldd")
    out = subprocess.run([ldd, dtrain_bin()], capture_output=True, text=True, check=True).stdout
    assert not CUDA_LIBRARY.search(out), out


def test_cpu_training_loads_no_cuda_library(tmp_path):
    rc, stderr, libraries, max_rss_kib = run_tracing_loads(
        ["train", "sample_configs/mnist_mlp.yaml", "--model-dir", tmp_path / "run", "--set", "run.max_steps=30",
         "--log-format", "plain"], tmp_path)
    assert rc == 0, stderr
    assert (tmp_path / "run/model.ckpt-30.safetensors").exists()
    assert sorted(lib for lib in libraries if CUDA_LIBRARY.search(lib) or "dtrain_cuda" in lib) == []
    # Without CUDA it peaks near 45 MiB; with the CUDA libraries mapped, about 230 MiB.
    assert max_rss_kib < 150 * 1024, f"peak RSS {max_rss_kib} KiB"


def test_devices_loads_the_cuda_libraries_through_the_module(cuda_build, tmp_path):
    rc, stderr, libraries, _ = run_tracing_loads(["devices"], tmp_path)
    assert rc == 0, stderr
    if not any("libdtrain_cuda.so" in lib for lib in libraries):
        pytest.skip("the CUDA module did not load here (see test_devices_reports_the_module_or_why)")
    assert any("libcudart.so" in lib for lib in libraries), sorted(libraries)


def test_devices_reports_the_module_or_why(cuda_build):
    text = devices_text()
    loaded = re.search(r"^CUDA module   (\S+libdtrain_cuda\.so)$", text, re.M)
    if loaded:
        assert re.search(r"^CUDA runtime  \d+\.\d+$", text, re.M), text
        for name in ("CUDA driver", "cuBLAS", "cuDNN", "NCCL"):
            assert re.search(rf"^{name} +\S", text, re.M), text
        assert re.search(r"^(gpu:0 |GPUs +none \(.+\))", text, re.M), text
    else:
        assert re.search(r"^GPUs          none \(CUDA module not loaded: (cannot load \S+ \(.+\): .+|"
                         r"no libdtrain_cuda\.so found \(looked for .+\); set DTRAIN_CUDA_MODULE to its path)\)$",
                         text, re.M), text


def test_cpu_only_build_says_not_built_in():
    text = devices_text()
    if "CUDA          not built in" not in text:
        pytest.skip("this dtrain was built with CUDA")
    assert "GPUs          none (this dtrain was built without CUDA" in text


def test_missing_module_file_is_named(cuda_build, tmp_path):
    missing = tmp_path / "libdtrain_cuda.so"
    text = devices_text(env={"DTRAIN_CUDA_MODULE": str(missing)})
    assert text.startswith("cpu:0..cpu:")
    assert "CUDA runtime" not in text
    assert text.splitlines()[-1] == (
        f"GPUs          none (CUDA module not loaded: cannot load {missing} (DTRAIN_CUDA_MODULE): "
        f"{missing}: cannot open shared object file: No such file or directory)")


def test_bundle_layout_finds_the_module_in_lib_beside_bin(cuda_build, tmp_path):
    loaded = re.search(r"^CUDA module   (\S+)$", devices_text(), re.M)
    if not loaded:
        pytest.skip("the CUDA module did not load here (see test_devices_reports_the_module_or_why)")
    (tmp_path / "bin").mkdir()
    (tmp_path / "lib").mkdir()
    shutil.copy2(dtrain_bin(), tmp_path / "bin/dtrain")
    shutil.copy2(loaded.group(1), tmp_path / "lib/libdtrain_cuda.so")
    out = subprocess.run([tmp_path / "bin/dtrain", "devices"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert f"CUDA module   {tmp_path / 'lib/libdtrain_cuda.so'}\n" in out.stdout, out.stdout


def compile_fake_module(tmp_path, name, source, libs=()):
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler to build a stand-in module")
    (tmp_path / f"{name}.c").write_text(source)
    subprocess.run([cc, "-shared", "-fPIC", "-o", tmp_path / f"lib{name}.so", tmp_path / f"{name}.c",
                    f"-L{tmp_path}", *libs], check=True)
    return tmp_path / f"lib{name}.so"


def test_module_whose_library_is_missing_is_named(cuda_build, tmp_path):
    # A stand-in for a module whose CUDA library cannot be found: it needs a
    # library that is deleted once the module is linked.
    compile_fake_module(tmp_path, "gone_cudnn", "int gone(void) { return 0; }\n")
    module = compile_fake_module(tmp_path, "stand_in", "int gone(void);\nint dtrain_cuda_module(void) { return gone(); }\n",
                                 libs=["-lgone_cudnn"])
    (tmp_path / "libgone_cudnn.so").unlink()
    text = devices_text(env={"DTRAIN_CUDA_MODULE": str(module)})
    assert text.splitlines()[-1] == (
        f"GPUs          none (CUDA module not loaded: cannot load {module} (DTRAIN_CUDA_MODULE): "
        "libgone_cudnn.so: cannot open shared object file: No such file or directory)")


def abi_version():
    """kDtrainCudaModuleAbi as engine/cuda_module.hpp declares it (bumped whenever the table grows)."""
    text = (SOURCE_ROOT / "engine" / "cuda_module.hpp").read_text() if hasattr(SOURCE_ROOT, "joinpath") else \
        open(os.path.join(SOURCE_ROOT, "engine", "cuda_module.hpp")).read()
    return int(re.search(r"kDtrainCudaModuleAbi = (\d+);", text).group(1))


def test_module_of_another_abi_version_is_refused(cuda_build, tmp_path):
    module = compile_fake_module(tmp_path, "old_abi",
                                 "struct T { unsigned abi, size; void* discover; };\n"
                                 "static const struct T table = {999, sizeof(struct T), 0};\n"
                                 "const struct T* dtrain_cuda_module(void) { return &table; }\n")
    text = devices_text(env={"DTRAIN_CUDA_MODULE": str(module)})
    assert text.splitlines()[-1] == (
        f"GPUs          none (CUDA module not loaded: {module} (DTRAIN_CUDA_MODULE) has CUDA module ABI version "
        f"999, this dtrain needs {abi_version()}: the module is from another build)")
