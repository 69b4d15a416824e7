#!/usr/bin/env python3
"""Writes the portable bundle BUILDDIR/dtrain-bundle/ and BUILDDIR/dtrain-bundle.tar.xz
(`meson compile -C BUILDDIR bundle`): the executables, every non-system, non-CUDA
library they need (found through $ORIGIN), the GPU checks and a sample job."""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

MAX_TARBALL_BYTES = 60 * 1024 * 1024

# The C/C++ runtime every Linux machine with a C++ program has: glibc's
# libraries, the dynamic loader, libstdc++ and libgcc_s. Never bundled: a
# copy of glibc's parts cannot be mixed with the machine's loader.
RUNTIME = re.compile(r"^(ld-linux[-\w.]*|linux-vdso|libc|libm|libmvec|libpthread|libdl|librt|libresolv|libutil|"
                     r"libanl|libnsl|libBrokenLocale|libnss_\w+|libstdc\+\+|libgcc_s)\.so(\.\d+)*$")
# The NVIDIA driver and the CUDA libraries: taken from the machine (the
# driver's libcuda, the CUDA runtime of the nvidia-* Python wheels or a
# toolkit), found at run time by cuda-env.sh.
CUDA = re.compile(r"^lib(cuda|cudart|cublas|cublasLt|cudnn\w*|nccl|nvrtc\w*|nvJitLink|nvidia-\w+|cufft\w*|"
                  r"curand|cusparse\w*|cusolver\w*|nvToolsExt)\.so(\.\d+)*$")


# What cuDNN 9's libcudnn.so.9 (a shim) dlopens for the legacy convolution,
# pooling and softmax calls the CUDA module makes: its graph and ops parts, the
# convolution part, the engines and the heuristics. libcudnn_adv (RNNs,
# attention) is not used.
CUDNN_PARTS = ("graph", "ops", "cnn", "engines_precompiled", "engines_runtime_compiled", "heuristic")


def fail(message):
    print(f"make_bundle: {message}", file=sys.stderr)
    sys.exit(1)


def run(cmd, **kw):
    out = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, **kw)
    if out.returncode != 0:
        fail(f"{' '.join(map(str, cmd))} failed ({out.returncode}): {out.stderr.strip()}")
    return out.stdout


def ldd_resolved(elf):
    """{soname: path or None} of every library `elf` needs, transitively, as the
    loader of this machine resolves them."""
    found = {}
    for line in run(["ldd", elf]).splitlines():
        m = re.match(r"\s*(\S+) => (not found|(\S+) \(0x[0-9a-f]+\))", line)
        if m:
            found[m.group(1)] = m.group(3)
    return found


def needed_versions(elf):
    """The highest GLIBC_ and GLIBCXX_ symbol versions `elf` needs, as tuples."""
    text = run(["readelf", "-V", "--wide", elf])
    best = {}
    for name, ver in re.findall(r"Name: (GLIBC|GLIBCXX)_([\d.]+)", text):
        v = tuple(int(x) for x in ver.split("."))
        best[name] = max(best.get(name, ()), v)
    return best


def copy_stripped(src, dst):
    shutil.copy2(src, dst)
    os.chmod(dst, 0o755)
    run(["strip", "--strip-unneeded", dst])


def place_elf_files(args, root):
    """Copies the executables, our libraries and every library they need (but
    the runtime and CUDA) into root, stripped, each with its RUNPATH. Returns
    (paths placed, sonames bundled, CUDA sonames needed)."""
    placed = []  # (path in the bundle, runpath)
    for folder, runpath, files in (("bin", "$ORIGIN/../lib", args.bin), ("tests", "$ORIGIN/../lib", args.test),
                                   ("lib", "$ORIGIN", args.lib)):
        for f in files:
            copy_stripped(f, root / folder / f.name)
            placed.append((root / folder / f.name, runpath))
    # Every library the originals need, transitively, as this machine resolves them.
    bundled, cuda_needed = {}, set()
    for elf in args.bin + args.test + args.lib:
        for soname, path in ldd_resolved(elf).items():
            if RUNTIME.match(soname):
                continue
            if CUDA.match(soname):
                cuda_needed.add(soname)
            elif path is None:
                fail(f"{elf.name} needs {soname}, which the loader cannot find here")
            else:
                bundled[soname] = Path(path).resolve()
    for soname, path in sorted(bundled.items()):
        copy_stripped(path, root / "lib" / soname)
        placed.append((root / "lib" / soname, "$ORIGIN"))
    for elf, runpath in placed:
        run(["patchelf", "--set-rpath", runpath, elf])
    return [p for p, _ in placed], sorted(bundled), cuda_needed


def write_the_rest(args, root, placed, cuda_needed):
    """The scripts, the samples, share/cuda-libraries.txt and the README with this build's facts."""
    here = Path(__file__).resolve().parent
    for name in ("run-gpu-checks.sh", "cuda-env.sh", "dtrain"):
        shutil.copy2(here / name, root / name)
        os.chmod(root / name, 0o755)
    samples = args.source_root / "sample_configs"
    for name in ("mnist_cnn.yaml", "mnist_mlp.yaml"):
        shutil.copy2(samples / name, root / "share/sample_configs" / name)
    for f in sorted((samples / "data").glob("mnist-sample-*")):
        shutil.copy2(f, root / "share/sample_configs/data" / f.name)
    # cuda-env.sh checks the CUDA folders it finds for these (libcudart first),
    # and for the parts libcudnn loads at run time from its own folder.
    listed = set(cuda_needed)
    for soname in cuda_needed:
        m = re.fullmatch(r"libcudnn\.so\.(\d+)", soname)
        if m:
            listed.update(f"libcudnn_{part}.so.{m[1]}" for part in CUDNN_PARTS)
    (root / "share/cuda-libraries.txt").write_text(
        "".join(f"{n}\n" for n in sorted(listed, key=lambda n: (not n.startswith("libcudart"), n))))
    glibc = {}
    for elf in placed:
        for name, v in needed_versions(elf).items():
            glibc[name] = max(glibc.get(name, ()), v)
    version = lambda v: ".".join(map(str, v))  # noqa: E731
    (root / "README.md").write_text(
        (here / "README.md").read_text() +
        f"\n## This build\n\n"
        f"- Needs glibc >= {version(glibc.get('GLIBC', (0,)))} and libstdc++ with GLIBCXX_"
        f"{version(glibc.get('GLIBCXX', (0,)))} (GCC 12 or later), taken from the machine.\n"
        f"- CUDA libraries taken from the machine: {', '.join(sorted(cuda_needed))}.\n"
        f"- Bundled in lib/: {', '.join(p.name for p in placed if p.parent.name == 'lib')}.\n")


def pack(stage):
    """stage/dtrain-bundle -> stage/dtrain-bundle.tar.xz; returns its size in bytes."""
    tarball = stage / "dtrain-bundle.tar.xz"
    with open(tarball, "wb") as out:
        tar = subprocess.Popen(["tar", "-C", stage, "--owner=0", "--group=0", "-cf", "-", "dtrain-bundle"],
                               stdout=subprocess.PIPE)
        # -3: 25 MiB in half the time of -6's 23 MiB (the suite builds it too).
        xz = subprocess.run(["xz", "-3", "-T2", "-c"], stdin=tar.stdout, stdout=out)
        tar.stdout.close()
        if tar.wait() != 0 or xz.returncode != 0:
            fail("tar | xz failed")
    size = tarball.stat().st_size
    if size > MAX_TARBALL_BYTES:
        fail(f"dtrain-bundle.tar.xz is {size / 2**20:.1f} MiB, over the 60 MiB limit")
    return size


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--build-root", required=True, type=Path)
    ap.add_argument("--source-root", required=True, type=Path)
    ap.add_argument("--bin", action="append", default=[], type=Path, help="executable for bin/")
    ap.add_argument("--lib", action="append", default=[], type=Path, help="our own library for lib/ (the CUDA and SentencePiece modules)")
    ap.add_argument("--test", action="append", default=[], type=Path, help="test or benchmark executable for tests/")
    ap.add_argument("--refuse", help="print this and fail (a build that cannot make the bundle)")
    args = ap.parse_args()
    if args.refuse:
        fail(args.refuse)
    for tool in ("ldd", "readelf", "strip", "patchelf", "tar", "xz"):
        if shutil.which(tool) is None:
            fail(f"needs `{tool}` on PATH (patchelf: Debian package patchelf; the others: binutils, libc-bin, "
                 "tar, xz-utils)")

    # Assembled beside the build's files and moved in place only when complete:
    # a failed run leaves the previous bundle as it was.
    final = args.build_root / "dtrain-bundle"
    stage = Path(tempfile.mkdtemp(prefix=".dtrain-bundle.", dir=args.build_root))
    try:
        root = stage / "dtrain-bundle"
        for d in ("bin", "lib", "tests", "share/sample_configs/data"):
            (root / d).mkdir(parents=True)
        placed, bundled, cuda_needed = place_elf_files(args, root)
        write_the_rest(args, root, placed, cuda_needed)
        size = pack(stage)
        shutil.rmtree(final, ignore_errors=True)
        root.rename(final)
        (stage / "dtrain-bundle.tar.xz").replace(args.build_root / "dtrain-bundle.tar.xz")
    finally:
        shutil.rmtree(stage, ignore_errors=True)
    print(f"make_bundle: {final}/ and {final}.tar.xz ({size / 2**20:.1f} MiB): "
          f"{len(placed)} ELF files, {len(bundled)} bundled libraries; CUDA from the machine: "
          f"{' '.join(sorted(cuda_needed))}")


if __name__ == "__main__":
    main()
