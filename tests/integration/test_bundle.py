"""The portable bundle (`meson compile -C BUILDDIR bundle`, tools/bundle/): its
layout and size, that a copy unpacked elsewhere runs with a clean environment
(env -i) and loads nothing from outside itself but the C/C++ runtime and CUDA,
that its launcher finds CUDA in the nvidia-* wheels' layout, and that
run-gpu-checks.sh without a GPU says what it skipped and why.
The bundle is built once (when missing or older than what it packs); a build
without CUDA has no bundle and these tests skip."""
import os
import re
import shutil
import subprocess
import tarfile
from pathlib import Path

import pytest

from conftest import SOURCE_ROOT, dtrain_bin, run_dtrain

# What the bundle may take from the machine: the C/C++ runtime (glibc and its
# loader, libstdc++, libgcc_s) and the NVIDIA driver and CUDA libraries.
RUNTIME = re.compile(r"^(linux-vdso\.so\.1|ld-linux-x86-64\.so\.2|lib(c|m|mvec|pthread|dl|rt|resolv|util|anl|nsl)"
                     r"\.so\.\d+|libstdc\+\+\.so\.6|libgcc_s\.so\.1)$")
CUDA = re.compile(r"^lib(cuda|cudart|cublas|cublasLt|cudnn\w*|nccl)\.so\.\d+$")
MAX_TARBALL = 60 * 1024 * 1024


def build_dir():
    return Path(os.environ.get("DTRAIN_BUILD_DIR") or Path(dtrain_bin()).resolve().parents[1])


def packed_files(build):
    """What the bundle packs: if any is newer than the tarball, it is rebuilt."""
    files = [build / "cli/dtrain", build / "engine/cuda/libdtrain_cuda.so", build / "tests/dtrain_unit_tests",
             build / "bench/dtrain_bench_gpu", *sorted((SOURCE_ROOT / "tools/bundle").iterdir())]
    return [f for f in files if f.exists()]


@pytest.fixture(scope="module")
def bundle(tmp_path_factory):
    """The bundle's tarball unpacked into a fresh folder (not where it was built)."""
    if "CUDA          not built in" in run_dtrain("devices").stdout:
        pytest.skip("this dtrain was built without CUDA: the bundle is the CUDA build's")
    build = build_dir()
    tarball = build / "dtrain-bundle.tar.xz"
    if not tarball.exists() or any(f.stat().st_mtime > tarball.stat().st_mtime for f in packed_files(build)):
        out = subprocess.run(["ninja", "-C", build, "bundle"], capture_output=True, text=True, timeout=1800)
        assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    root = tmp_path_factory.mktemp("unpacked")
    with tarfile.open(tarball) as tar:
        tar.extractall(root)
    return root / "dtrain-bundle"


def elf_files(root):
    return sorted(p for p in root.rglob("*") if p.is_file() and p.read_bytes()[:4] == b"\x7fELF")


def test_layout_and_size(bundle):
    build = build_dir()
    for path in ("bin/dtrain", "lib/libdtrain_cuda.so", "tests/dtrain_unit_tests", "tests/dtrain_bench_gpu", "dtrain",
                 "run-gpu-checks.sh", "cuda-env.sh", "README.md", "share/sample_configs/mnist_cnn.yaml",
                 "share/sample_configs/data/mnist-sample-train-images-idx3-ubyte.gz"):
        assert (bundle / path).is_file(), path
    for exe in ("bin/dtrain", "tests/dtrain_unit_tests", "tests/dtrain_bench_gpu", "dtrain", "run-gpu-checks.sh"):
        assert os.access(bundle / exe, os.X_OK), exe
    bundled = sorted(p.name for p in (bundle / "lib").iterdir())
    assert "libyaml-cpp.so.0.7" in bundled and any(n.startswith("libgrpc++.so") for n in bundled), bundled
    assert not [n for n in bundled if RUNTIME.match(n) or CUDA.match(n)], bundled
    # The CUDA libraries the module links, libcudart first, and the parts
    # libcudnn loads itself (cuda-env.sh checks for them all).
    assert (bundle / "share/cuda-libraries.txt").read_text().split() == [
        "libcudart.so.13", "libcublas.so.13", "libcublasLt.so.13", "libcudnn.so.9", "libcudnn_cnn.so.9",
        "libcudnn_engines_precompiled.so.9", "libcudnn_engines_runtime_compiled.so.9", "libcudnn_graph.so.9",
        "libcudnn_heuristic.so.9", "libcudnn_ops.so.9", "libnccl.so.2"]
    assert (build / "dtrain-bundle.tar.xz").stat().st_size < MAX_TARBALL
    # The folder beside the tarball holds the same files.
    in_folder = sorted(str(p.relative_to(build / "dtrain-bundle")) for p in (build / "dtrain-bundle").rglob("*"))
    assert in_folder == sorted(str(p.relative_to(bundle)) for p in bundle.rglob("*"))


def test_every_elf_finds_its_libraries_through_origin(bundle):
    for elf in elf_files(bundle):
        dynamic = subprocess.run(["readelf", "-d", elf], capture_output=True, text=True, check=True).stdout
        want = "$ORIGIN" if elf.parent.name == "lib" else "$ORIGIN/../lib"
        assert f"(RUNPATH)            Library runpath: [{want}]" in dynamic, (elf, dynamic)
        debug = subprocess.run(["readelf", "-S", elf], capture_output=True, text=True, check=True).stdout
        assert ".debug_info" not in debug, f"{elf} is not stripped"


def test_ldd_finds_nothing_outside_the_bundle_but_runtime_and_cuda(bundle):
    inside = 0
    for elf in elf_files(bundle):
        out = subprocess.run(["env", "-i", "ldd", elf], capture_output=True, text=True, check=True).stdout
        for line in out.splitlines():
            m = re.match(r"\s*(\S+) => (not found|(\S+) \(0x)", line)
            if not m:
                continue
            soname, path = m.group(1), m.group(3)
            if path and Path(path).resolve().is_relative_to(bundle):
                inside += 1
            else:
                assert RUNTIME.match(soname) or CUDA.match(soname), f"{elf.name}: {line.strip()}"
    assert inside > 50  # the check saw the bundled libraries


def loaded_libraries(folder):
    """The path of every library a run traced with LD_DEBUG=libs and
    LD_DEBUG_OUTPUT=folder/ld initialised (each one dtrain maps has an initialiser)."""
    traced = "".join(f.read_text(errors="replace") for f in folder.glob("ld.*"))
    assert "calling init:" in traced, "LD_DEBUG=libs reported nothing"
    return set(re.findall(r"calling init: (\S+)", traced))


def test_copy_runs_with_a_clean_environment(bundle, tmp_path):
    dtrain = bundle / "bin/dtrain"
    version = subprocess.run(["env", "-i", dtrain, "--version"], capture_output=True, text=True, timeout=60)
    assert version.returncode == 0 and re.fullmatch(r"\d+\.\d+\.\d+\n", version.stdout), version
    job = bundle / "share/sample_configs/mnist_cnn.yaml"
    valid = subprocess.run(["env", "-i", dtrain, "validate", job], capture_output=True, text=True, timeout=60)
    assert valid.returncode == 0, valid.stderr
    assert "conv2d" in valid.stdout
    trace = tmp_path / "ld"
    train = subprocess.run(["env", "-i", "LD_DEBUG=libs", f"LD_DEBUG_OUTPUT={trace}", dtrain, "train",
                            bundle / "share/sample_configs/mnist_mlp.yaml", "--model-dir", tmp_path / "run",
                            "--set", "run.max_steps=20", "--log-format", "plain"],
                           cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert train.returncode == 0, train.stderr
    assert (tmp_path / "run/model.ckpt-20.safetensors").exists()
    loaded = loaded_libraries(tmp_path)
    outside = sorted(p for p in loaded if not Path(p).resolve().is_relative_to(bundle)
                     and not RUNTIME.match(Path(p).name))
    assert outside == [], outside
    assert any(Path(p).resolve().is_relative_to(bundle / "lib") for p in loaded), sorted(loaded)


def wheel_layout(site):
    """The nvidia-* wheels' folders (nvidia/cu13/lib, nvidia/cudnn/lib, nvidia/nccl/lib)
    holding links to this machine's real CUDA libraries."""
    cache = subprocess.run(["ldconfig", "-p"], capture_output=True, text=True, check=True).stdout
    found = dict(re.findall(r"^\s+(lib\S+\.so\.\d+) \(libc6,x86-64\) => (\S+)$", cache, re.M))
    folders = {"cu13": ["libcudart.so.13", "libcublas.so.13", "libcublasLt.so.13"],
               "cudnn": [n for n in found if n.startswith("libcudnn")], "nccl": ["libnccl.so.2"]}
    for folder, names in folders.items():
        (site / "nvidia" / folder / "lib").mkdir(parents=True)
        for name in names:
            if name not in found:
                pytest.skip(f"{name} is not known to ldconfig here")
            (site / "nvidia" / folder / "lib" / name).symlink_to(found[name])


@pytest.mark.parametrize("found_by", ["python", "DTRAIN_CUDA_LIBS"])
def test_launcher_takes_cuda_from_the_nvidia_wheels(bundle, tmp_path, found_by):
    wheel_layout(tmp_path / "site")
    trace = tmp_path / "ld"
    if found_by == "python":  # python3 imports the wheels' `nvidia` package
        where = [f"PYTHONPATH={tmp_path / 'site'}"]
    else:
        folders = [str(tmp_path / "site/nvidia" / d / "lib") for d in ("cu13", "cudnn", "nccl")]
        where = ["DTRAIN_CUDA_LIBS=" + ":".join(folders)]
    out = subprocess.run(["env", "-i", *where, "PATH=/usr/bin:/bin", "LD_DEBUG=libs", f"LD_DEBUG_OUTPUT={trace}",
                          bundle / "dtrain", "devices"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert f"CUDA module   {bundle / 'lib/libdtrain_cuda.so'}\n" in out.stdout, out.stdout
    assert re.search(r"^CUDA runtime  13\.\d+$", out.stdout, re.M), out.stdout
    found_from = subprocess.run(["env", "-i", *where, "PATH=/usr/bin:/bin", "bash", "-c",
                                 '. "$1/cuda-env.sh" && dtrain_cuda_env && printf %s "$DTRAIN_CUDA_LIBS_FROM"', "-",
                                 bundle], capture_output=True, text=True, check=True).stdout
    assert found_from == ("DTRAIN_CUDA_LIBS" if found_by == "DTRAIN_CUDA_LIBS" else
                          f"the nvidia-* Python wheels of {shutil.which('python3', path='/usr/bin:/bin')}")
    loaded = loaded_libraries(tmp_path)
    for lib in ("cu13/lib/libcudart.so.13", "cu13/lib/libcublasLt.so.13", "cudnn/lib/libcudnn.so.9",
                "nccl/lib/libnccl.so.2"):
        assert str(tmp_path / "site/nvidia" / lib) in loaded, (lib, sorted(loaded))


def test_cuda_folders_without_a_library_say_which(bundle, tmp_path):
    wheel_layout(tmp_path / "site")
    out = subprocess.run(["env", "-i", f"DTRAIN_CUDA_LIBS={tmp_path / 'site/nvidia/cu13/lib'}", "PATH=/usr/bin:/bin",
                          "bash", "-c", '. "$1/cuda-env.sh" && dtrain_cuda_env && '
                          'printf "%s\\n%s" "$DTRAIN_CUDA_LIBS_FROM" "$LD_LIBRARY_PATH"', "-", bundle],
                         capture_output=True, text=True, check=True)
    listed = (bundle / "share/cuda-libraries.txt").read_text().split()
    # libcudnn's parts, which it loads itself, are looked for too.
    assert {"libcudnn.so.9", "libcudnn_cnn.so.9", "libcudnn_ops.so.9", "libcudnn_graph.so.9",
            "libcudnn_heuristic.so.9", "libnccl.so.2"} <= set(listed), listed
    missing = [n for n in listed if n.startswith(("libcudnn", "libnccl"))]
    assert out.stdout.splitlines() == [f"DTRAIN_CUDA_LIBS (without {' '.join(missing)})",
                                       str(tmp_path / "site/nvidia/cu13/lib")]


def fake_ldconfig(folder, sonames):
    """An ldconfig whose -p lists `sonames` (as the real one prints them)."""
    folder.mkdir()
    lines = "".join(f"\\t{n} (libc6,x86-64) => /opt/cuda/lib/{n}\\n" for n in sonames)
    (folder / "ldconfig").write_text(f"#!/bin/sh\nprintf '{len(sonames)} libs found in cache\\n{lines}'\n")
    (folder / "ldconfig").chmod(0o755)


@pytest.mark.parametrize("known", ["all", "only libcudart", "all but one cuDNN part", "none"])
def test_the_system_loader_counts_only_when_it_knows_every_cuda_library(bundle, tmp_path, known):
    listed = (bundle / "share/cuda-libraries.txt").read_text().split()
    assert listed[0] == "libcudart.so.13", listed
    given = {"all": listed, "only libcudart": listed[:1], "none": [],
             "all but one cuDNN part": [n for n in listed if n != "libcudnn_cnn.so.9"]}[known]
    fake_ldconfig(tmp_path / "bin", given)
    out = subprocess.run(["env", "-i", f"PATH={tmp_path / 'bin'}:/usr/bin:/bin", "DTRAIN_PYTHON=/bin/false", "bash",
                          "-c", '. "$1/cuda-env.sh" && dtrain_cuda_env && printf %s "$DTRAIN_CUDA_LIBS_FROM"', "-",
                          bundle], capture_output=True, text=True, check=True)
    lacking = " ".join(n for n in listed if n not in given)
    assert out.stdout == {
        "all": "the system's libraries (ldconfig)",
        "only libcudart": f"none found (no DTRAIN_CUDA_LIBS, no nvidia-* Python wheels; ldconfig knows libcudart.so.13 "
                          f"but not {lacking})",
        "all but one cuDNN part": "none found (no DTRAIN_CUDA_LIBS, no nvidia-* Python wheels; ldconfig knows "
                                  "libcudart.so.13 but not libcudnn_cnn.so.9)",
        "none": "none found (no DTRAIN_CUDA_LIBS, no nvidia-* Python wheels, no libcudart.so.13 known to ldconfig)",
    }[known]


def test_run_gpu_checks_without_a_gpu_says_what_it_skipped(bundle, tmp_path):
    devices = run_dtrain("devices").stdout
    if re.search(r"^gpu:0 ", devices, re.M):
        pytest.skip("this machine has a GPU: run-gpu-checks.sh runs the GPU checks")
    why = re.search(r"^GPUs +none \((.+)\)$", devices, re.M).group(1)
    out = subprocess.run(["env", "-i", bundle / "run-gpu-checks.sh", tmp_path / "logs"], capture_output=True,
                         text=True, timeout=600)
    assert out.returncode == 0, out.stdout + out.stderr
    lines = out.stdout.splitlines()
    summary = lines[lines.index("run-gpu-checks summary:") + 1:]
    assert summary[0] == "  passed   dtrain devices         0 GPU(s)"
    unit = re.fullmatch(r"  passed   CUDA unit tests        (\d+) cases: (\d+) passed, 0 failed, (\d+) skipped "
                        r"\(no GPU\)", summary[1])
    assert unit and int(unit[2]) > 0 and int(unit[3]) > 0 and int(unit[1]) == int(unit[2]) + int(unit[3]), summary[1]
    assert summary[2] == "  skipped  mnist_mlp on gpu:0     no GPU"
    assert summary[3] == "  skipped  mnist_cnn on gpu:0     no GPU"
    assert summary[4] == "  skipped  GPU benchmark          no GPU"
    assert summary[5] == (f"run-gpu-checks: {int(unit[2]) + 1} passed, 0 failed, {int(unit[3]) + 3} skipped; "
                          f"the GPU checks were skipped ({why})")
    assert re.fullmatch(r"run-gpu-checks: \d+ s of the 390 s budget", summary[6]), summary[6]
    assert summary[7] == f"run-gpu-checks: logs in {tmp_path / 'logs'}.tar.gz"
    assert len(summary) == 8
    assert "MESSAGE: no CUDA device" in (tmp_path / "logs/cuda-unit-tests.log").read_text()
    assert (tmp_path / "logs/summary.txt").read_text().splitlines() == ["run-gpu-checks summary:", *summary[:6]]
    with tarfile.open(tmp_path / "logs.tar.gz") as tar:
        names = set(tar.getnames())
    assert {"logs/devices.log", "logs/cuda-unit-tests.log", "logs/mnist_cnn-gpu.log", "logs/summary.txt"} <= names, names
    assert not any(n.startswith("logs/models") for n in names), names


def test_run_gpu_checks_reports_a_step_past_its_time_as_timed_out(bundle, tmp_path):
    """The scripts beside the bundle's own bin/, lib/ and share/, with a unit test
    binary that hangs and a 4-second budget: the unit tests are cut off and
    FAILED saying so, the later steps FAILED as not run, and the script ends
    within the budget (plus timeout's kill grace)."""
    if re.search(r"^gpu:0 ", run_dtrain("devices").stdout, re.M):
        pytest.skip("this machine has a GPU: the hanging stand-in would hide its real unit tests")
    root = tmp_path / "bundle"
    (root / "tests").mkdir(parents=True)
    for name in ("run-gpu-checks.sh", "cuda-env.sh"):
        shutil.copy2(bundle / name, root / name)
    for name in ("bin", "lib", "share"):
        (root / name).symlink_to(bundle / name)
    (root / "tests/dtrain_unit_tests").write_text("#!/bin/sh\nexec sleep 120\n")
    (root / "tests/dtrain_unit_tests").chmod(0o755)
    out = subprocess.run(["env", "-i", "DTRAIN_GPU_CHECKS_SECONDS=4", root / "run-gpu-checks.sh", tmp_path / "logs"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 1, out.stdout + out.stderr
    lines = out.stdout.splitlines()
    summary = lines[lines.index("run-gpu-checks summary:") + 1:]
    assert re.fullmatch(r"  FAILED   CUDA unit tests        timed out after [1-4] s and no doctest summary \(see the log\)",
                        summary[1]), summary
    for i, name in ((2, "mnist_mlp on gpu:0"), (3, "mnist_cnn on gpu:0")):
        assert summary[i] == f"  FAILED   {name:<22} not run: the script's 4 s were spent", summary
    assert re.fullmatch(r"run-gpu-checks: [4-9] s of the 4 s budget", summary[6]), summary
