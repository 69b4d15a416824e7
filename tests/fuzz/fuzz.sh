#!/usr/bin/env bash
# Coverage-guided fuzzing of the parsers with libFuzzer (clang's
# -fsanitize=fuzzer, with ASan and UBSan): runs each harness named (default:
# all) for SECONDS (default 60) over its committed corpus, writing what it
# finds under runs/fuzz/<harness>/ (new inputs in corpus/, a crashing input as
# crash-*, the log beside). A crash's input belongs in tests/fuzz/corpus/
# <harness>/ once the bug is fixed: CI replays that corpus (tests/run.sh).
# An input that runs over 60 s is reported as a hang (timeout-*): on a loaded
# 2-core machine a niced harness's normal 0.5 s input once took over 20 s.
#   bash tests/fuzz/fuzz.sh [SECONDS] [HARNESS...]
#   FUZZ_BUILD=dir (default build-fuzz)   FUZZ_JOBS=n parallel harnesses (default 1)
set -uo pipefail
cd "$(dirname "$0")/../.."
secs=${1:-60}
shift || true
harnesses=("$@")
[ ${#harnesses[@]} -gt 0 ] || harnesses=(job tf_config tfrecord arrays csv image text checkpoint)
build=${FUZZ_BUILD:-build-fuzz}
jobs=${FUZZ_JOBS:-1}

if ! command -v clang++ >/dev/null || ! ls /usr/lib/llvm-*/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a >/dev/null 2>&1; then
  echo "tests/fuzz/fuzz.sh: needs clang with libFuzzer and LLVM's OpenMP: apt-get install clang libclang-rt-dev libomp-dev" >&2
  exit 2
fi
if [ ! -f "$build/build.ninja" ]; then
  CC=clang CXX=clang++ meson setup "$build" -Dcuda=disabled -Dfuzz=true --buildtype=debugoptimized \
    -Db_sanitize=address,undefined -Db_lundef=false -Dcpp_args=-fsanitize=fuzzer-no-link || exit 1
fi
ninja -C "$build" "${harnesses[@]/#/tests/fuzz/fuzz_}" || exit 1

export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
failed=0
run_one() {
  local h=$1 out=runs/fuzz/$1
  mkdir -p "$out/corpus"
  "$build/tests/fuzz/fuzz_$h" -max_total_time="$secs" -timeout=60 -rss_limit_mb=2560 -max_len=65536 \
    -print_final_stats=1 -artifact_prefix="$out/" "$out/corpus" "tests/fuzz/corpus/$h" > "$out.log" 2>&1
  local rc=$?
  local stats
  stats=$(grep -E "^stat::(number_of_executed_units|peak_rss_mb)" "$out.log" | tr '\n' ' ')
  local cov
  cov=$(grep -oE "cov: [0-9]+ ft: [0-9]+ corp: [0-9]+/[0-9]+[a-zA-Z]*" "$out.log" | tail -1)
  if [ $rc -eq 0 ]; then echo "fuzz_$h: ok, $secs s: $cov $stats"; else echo "fuzz_$h: FAILED (rc $rc), see $out.log and $out/crash-*: $cov"; fi
  return $rc
}
running=0
for h in "${harnesses[@]}"; do
  run_one "$h" &
  running=$((running + 1))
  if [ "$running" -ge "$jobs" ]; then wait -n || failed=$((failed + 1)); running=$((running - 1)); fi
done
while [ "$running" -gt 0 ]; do wait -n || failed=$((failed + 1)); running=$((running - 1)); done
[ "$failed" -eq 0 ]
