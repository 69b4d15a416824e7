#!/usr/bin/env bash
# Runs the whole test suite: unit tests (doctest) and process-level tests
# (pytest starting the real dtrain binary) on the release build, then the
# unit tests, the malformed-job tests, the fuzz corpora and a sample of the
# stop-signal stress test again under AddressSanitizer and UBSan. Prints "N passed, N failed" at the end.
#   bash tests/run.sh
set -uo pipefail
cd "$(dirname "$0")/.."

# Python helpers for the tests (PyPI): TensorBoard's reader, safetensors, pytest,
# onnx (its checker) and onnxruntime (runs the exported models); Pillow (JPEG
# shards for the streaming tests); scikit-learn (the evaluation report's reference).
python3 -c "import pytest, numpy, safetensors, tensorboard, onnx, onnxruntime, PIL, sklearn" 2>/dev/null ||
  python3 -m pip install -q pytest numpy safetensors tensorboard onnx onnxruntime pillow scikit-learn

# Slurm and munge (Debian) for tests/integration/test_slurm.py, which starts a
# private single-node Slurm on 127.0.0.1 (it skips, saying why, if it cannot).
if ! command -v slurmctld >/dev/null || ! command -v munged >/dev/null; then
  as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo -n "$@"; fi; }
  { as_root apt-get update -qq && as_root env DEBIAN_FRONTEND=noninteractive \
      apt-get install -y -qq --no-install-recommends slurm-wlm munge; } >/dev/null 2>&1 ||
    echo "tests/run.sh: could not install slurm-wlm and munge; the Slurm test will skip"
fi

if [ -x /usr/local/cuda/bin/nvcc ]; then export PATH="/usr/local/cuda/bin:$PATH"; fi
[ -f build/build.ninja ] || meson setup build --buildtype=release || exit 1
ninja -C build || exit 1

passed=0 failed=0
run_suite() {  # name, command...
  local name=$1; shift
  echo "=== $name"
  local start=$SECONDS
  if "$@"; then passed=$((passed + 1)); echo "=== $name: ok ($((SECONDS - start)) s)"
  else failed=$((failed + 1)); echo "=== $name: FAILED ($((SECONDS - start)) s)"; fi
}

run_suite "unit tests" ./build/tests/dtrain_unit_tests
run_suite "process-level tests" env DTRAIN_BIN="$PWD/build/cli/dtrain" DTRAIN_SOURCE_ROOT="$PWD" \
  DTRAIN_FORMAT_WRITER="$PWD/build/tests/engine/io/io_format_writer" \
  python3 -m pytest -q -p no:cacheprovider --durations=15 tests/integration

# Every guarantee on a CPU without AVX-512 (engine/cpu_isa.hpp): the unit
# tests and the determinism, equivalence, resume, precision, accumulation and
# predict's batch invariance (test_image_folder) tests again with
# dtrain's kernels and oneDNN capped to AVX2, and the kernel and layer tests on
# the baseline x86-64 path.
run_suite "unit tests (AVX2 cap)" env DTRAIN_MAX_CPU_ISA=avx2 ONEDNN_MAX_CPU_ISA= ./build/tests/dtrain_unit_tests
run_suite "kernel and layer tests (baseline x86-64 cap)" env DTRAIN_MAX_CPU_ISA=baseline ONEDNN_MAX_CPU_ISA= \
  ./build/tests/dtrain_unit_tests -tc='kernels*,layer*,ops*,dense*,conv2d*,pool2d*,attention*,softmax*,cast*,gradient*,loss*,dropout*,embedding*'
run_suite "determinism, equivalence, resume and precision (AVX2 cap)" env DTRAIN_MAX_CPU_ISA=avx2 ONEDNN_MAX_CPU_ISA= \
  DTRAIN_BIN="$PWD/build/cli/dtrain" DTRAIN_SOURCE_ROOT="$PWD" \
  python3 -m pytest -q -p no:cacheprovider tests/integration/test_global_batch.py tests/integration/test_graph.py \
  tests/integration/test_resume.py tests/integration/test_precision.py tests/integration/test_strategies.py \
  tests/integration/test_syncbn_equivalence.py tests/integration/test_threads.py tests/integration/test_cpu_isa.py \
  tests/integration/test_accumulation.py tests/integration/test_image_folder.py

# Sanitizers: a CPU-only debug build (no CUDA: its runtime trips ASan).
[ -f build-asan/build.ninja ] || meson setup build-asan -Dcuda=disabled --buildtype=debug \
  -Db_sanitize=address,undefined -Db_lundef=false || exit 1
fuzz_harnesses=(job tf_config tfrecord arrays csv image text checkpoint)
asan_build_start=$SECONDS
ninja -C build-asan cli/dtrain tests/dtrain_unit_tests "${fuzz_harnesses[@]/#/tests/fuzz/fuzz_}" || exit 1
echo "=== ASan+UBSan build: $((SECONDS - asan_build_start)) s"
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
run_suite "unit tests (ASan+UBSan)" ./build-asan/tests/dtrain_unit_tests
run_suite "malformed jobs and data (ASan+UBSan)" env DTRAIN_BIN="$PWD/build-asan/cli/dtrain" DTRAIN_SOURCE_ROOT="$PWD" \
  python3 -m pytest -q -p no:cacheprovider tests/integration/test_bad_jobs.py tests/integration/test_data_errors.py
# The fuzz harnesses (tests/fuzz) once over their committed corpora: the seeds
# and every input that ever found a bug (tests/fuzz/fuzz.sh fuzzes with libFuzzer).
replay_fuzz_corpora() {
  local h ok=0
  for h in "${fuzz_harnesses[@]}"; do ./build-asan/tests/fuzz/fuzz_$h tests/fuzz/corpus/$h || ok=1; done
  return $ok
}
run_suite "fuzz corpora (ASan+UBSan)" replay_fuzz_corpora
# Stop signals at random moments (start-up, mid-step, checkpoint write,
# evaluation, all-reduce, ps push) in every strategy, a bounded sample of
# tests/stress/stop_signal_stress.py (run it with --runs 200 for the full test).
run_suite "stop-signal stress (ASan+UBSan, 15 runs)" python3 tests/stress/stop_signal_stress.py --runs 15 \
  --dtrain build-asan/cli/dtrain --out runs/stress-ci --limit 180

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
