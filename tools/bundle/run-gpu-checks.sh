#!/usr/bin/env bash
# Runs every GPU check the bundle ships (dtrain devices, the CUDA unit tests
# (every op of the cuda backend against the CPU, one_device gpu:0 against
# cpu:0), mnist_mlp and mnist_cnn on gpu:0 against cpu:0, the GPU benchmark)
# and prints one summary of passed, failed and skipped checks; a check that
# cannot run here says why.
#   ./run-gpu-checks.sh [LOG_DIR]     # LOG_DIR keeps each check's full output,
#                                     # and LOG_DIR.tar.gz all of them in one file
# Every step runs under `timeout` (its own limit, and never past the script's
# budget: DTRAIN_GPU_CHECKS_SECONDS, 390 by default, so that the script ends
# inside a 7-minute device slot); a step that runs out is FAILED "timed out
# after N s", one never started is FAILED "not run". Exit status: 0 when
# nothing failed, 1 otherwise.
set -u
here="$(cd "$(dirname "$(readlink -f "$0")")" && pwd)"
# shellcheck source=cuda-env.sh
. "$here/cuda-env.sh"
dtrain_cuda_env

if [ $# -ge 1 ]; then
  logs="$1"; mkdir -p "$logs" || exit 1
else
  logs="$(mktemp -d)"; trap 'rm -rf "$logs"' EXIT
fi
passed=0 failed=0 skipped=0
report=""
budget="${DTRAIN_GPU_CHECKS_SECONDS:-390}"
SECONDS=0
limit=0
# timed LIMIT LOG COMMAND...: runs COMMAND, its output into LOG, for at most
# LIMIT seconds and never past the budget; sets $limit to the seconds it was
# given. Status 124 when it ran out of time, 125 when none was left to start it.
timed() {
  limit="$1"; local log="$2" left; shift 2
  left=$((budget - SECONDS))
  [ "$left" -lt "$limit" ] && limit="$left"
  if [ "$limit" -le 0 ]; then
    echo "not run: the script's ${budget} s were spent" >"$log"
    return 125
  fi
  timeout --kill-after=5 "$limit" "$@" >"$log" 2>&1
  local rc=$?
  [ "$rc" -eq 137 ] && rc=124
  return "$rc"
}
why_failed() {  # RC -> why a step failed, in words
  case "$1" in
    124) printf 'timed out after %s s' "$limit" ;;
    125) printf "not run: the script's %s s were spent" "$budget" ;;
    *) printf 'exit status %s' "$1" ;;
  esac
}
note() {  # STATUS NAME DETAIL
  report+="$(printf '  %-8s %-22s %s' "$1" "$2" "$3")"$'\n'
  echo "run-gpu-checks: $2: $1${3:+ ($3)}"
}

echo "run-gpu-checks: CUDA libraries: $DTRAIN_CUDA_LIBS_FROM"

# 1. dtrain devices: loads the CUDA module, lists the GPUs.
timed 60 "$logs/devices.log" "$here/bin/dtrain" devices
rc=$?
cat "$logs/devices.log"
gpus="$(grep -c '^gpu:' "$logs/devices.log")"
no_gpu="$(sed -n 's/^GPUs *none (\(.*\))$/\1/p' "$logs/devices.log")"
if [ "$rc" -ne 0 ]; then
  failed=$((failed + 1)); note FAILED "dtrain devices" "$(why_failed "$rc")"
  no_gpu="${no_gpu:-dtrain devices failed}"
elif ! grep -q '^CUDA module ' "$logs/devices.log"; then
  failed=$((failed + 1)); note FAILED "dtrain devices" "the CUDA module did not load: $no_gpu"
else
  passed=$((passed + 1)); note passed "dtrain devices" "$gpus GPU(s)"
fi
[ "$gpus" -gt 0 ] && no_gpu=""

# 2. The CUDA unit tests (doctest cases named "cuda*"). GPU cases end early
# with "no CUDA device: <why>" without a GPU: counted as skipped.
# The test binary links the CUDA libraries: without them it cannot start.
case "$DTRAIN_CUDA_LIBS_FROM" in
  "none found"*) echo "skipped: no CUDA libraries" >"$logs/cuda-unit-tests.log"; rc=0 ;;
  *) timed 150 "$logs/cuda-unit-tests.log" "$here/tests/dtrain_unit_tests" --test-case='cuda*' --no-colors=true
     rc=$? ;;
esac
counts="$(sed -n 's/^\[doctest\] test cases: *\([0-9]*\) | *\([0-9]*\) passed | *\([0-9]*\) failed | *\([0-9]*\) skipped.*/\1 \2 \3 \4/p' \
  "$logs/cuda-unit-tests.log")"
if [ "$(cat "$logs/cuda-unit-tests.log")" = "skipped: no CUDA libraries" ]; then
  skipped=$((skipped + 1)); note skipped "CUDA unit tests" "no CUDA libraries: $DTRAIN_CUDA_LIBS_FROM"
  no_gpu="${no_gpu:-no CUDA libraries}"
elif [ -z "$counts" ]; then
  failed=$((failed + 1)); note FAILED "CUDA unit tests" "$(why_failed "$rc") and no doctest summary (see the log)"
  tail -20 "$logs/cuda-unit-tests.log"
else
  # doctest's own "skipped" counts the cases the filter left out: not ours.
  read -r _ ok bad _ <<<"$counts"
  no_device="$(grep -c 'MESSAGE: no CUDA device' "$logs/cuda-unit-tests.log")"
  total=$((ok + bad)); ok=$((ok - no_device)); skip=$no_device
  passed=$((passed + ok)); failed=$((failed + bad)); skipped=$((skipped + skip))
  detail="$total cases: $ok passed, $bad failed, $skip skipped"
  [ "$no_device" -gt 0 ] && detail+=" (no GPU)"
  if [ "$bad" -gt 0 ] || [ "$rc" -ne 0 ]; then
    note FAILED "CUDA unit tests" "$detail"
    grep -B2 -A8 'ERROR:' "$logs/cuda-unit-tests.log" | head -60
  else
    note passed "CUDA unit tests" "$detail"
  fi
fi

# 3. A sample (one_device) trained 200 steps on gpu:0 and on cpu:0 from the
# same seed, under run.deterministic (the log names the cuDNN algorithm of
# each convolution): the GPU's eval accuracy is at most BELOW below the CPU's
# and at most ABOVE above it, and the GPU's checkpoint evaluates on the CPU to
# the GPU's own accuracy (within RESUME_TOL). Fractions (0.01 = 1 point); the
# difference is reported either way.
eval_accuracy() {  # LOG -> the last "eval at step N: ... accuracy A" value
  sed -n 's/^eval at step [0-9]*:.* accuracy \([0-9.]*\).*/\1/p' "$1" | tail -1
}
sample_on_gpu() {  # NAME BELOW ABOVE RESUME_TOL
  local name="$1" below="$2" above="$3" resume_tol="$4" cfg="$here/share/sample_configs/$1.yaml" log="$logs/$1"
  local models="$logs/models/$1" rc
  mkdir -p "$logs/models"
  timed 90 "$log-gpu.log" "$here/bin/dtrain" train "$cfg" --set 'strategy.devices=[gpu:0]' --set run.max_steps=200 \
    --set run.deterministic=true --model-dir "$models-gpu" --log-format plain
  rc=$?
  if [ "$rc" -eq 0 ] && [ -e "$models-gpu/model.ckpt-200.safetensors" ]; then
    grep -F 'cuDNN conv2d ' "$log-gpu.log"
    local cpu_rc eval_rc
    timed 120 "$log-cpu.log" "$here/bin/dtrain" train "$cfg" --set run.max_steps=200 --set run.deterministic=true \
      --model-dir "$models-cpu" --log-format plain
    cpu_rc=$?
    timed 60 "$log-gpu-ckpt-on-cpu.log" "$here/bin/dtrain" evaluate "$cfg" --model-dir "$models-gpu" --log-format plain
    eval_rc=$?
    local gpu_acc cpu_acc resumed_acc detail
    gpu_acc="$(eval_accuracy "$log-gpu.log")"
    cpu_acc="$(eval_accuracy "$log-cpu.log")"
    resumed_acc="$(sed -n 's/^accuracy: \([0-9.]*\)$/\1/p' "$log-gpu-ckpt-on-cpu.log" | tail -1)"
    detail="accuracy gpu:0 ${gpu_acc:-?}, cpu:0 ${cpu_acc:-?}"
    if [ -n "$gpu_acc" ] && [ -n "$cpu_acc" ]; then
      detail+=" (gpu - cpu $(awk -v g="$gpu_acc" -v c="$cpu_acc" 'BEGIN { printf "%+.4f", g - c }'))"
    fi
    detail+=", gpu:0 checkpoint on cpu:0 ${resumed_acc:-?}"
    [ "$cpu_rc" -ne 0 ] && detail+="; cpu:0 run: $(why_failed "$cpu_rc")"
    [ "$eval_rc" -ne 0 ] && detail+="; evaluation on cpu:0: $(why_failed "$eval_rc")"
    if [ -n "$gpu_acc" ] && [ -n "$cpu_acc" ] && [ -n "$resumed_acc" ] && awk -v g="$gpu_acc" -v c="$cpu_acc" \
         -v r="$resumed_acc" -v lo="$below" -v hi="$above" -v rt="$resume_tol" \
         'BEGIN { d = g - c; e = g - r; exit !(d <= hi && d >= -lo && e <= rt && e >= -rt) }'; then
      passed=$((passed + 1)); note passed "$name on gpu:0" "$detail"
    else
      failed=$((failed + 1))
      note FAILED "$name on gpu:0" "$detail (allowed: gpu:0 from $below below to $above above cpu:0, $resume_tol on resume)"
      tail -5 "$log-gpu.log" "$log-cpu.log" "$log-gpu-ckpt-on-cpu.log"
    fi
  elif [ -n "$no_gpu" ] && [ "$rc" -eq 2 ] && grep -qE 'strategy\.devices(\[0\])?: gpu:0 cannot be used' "$log-gpu.log"; then
    skipped=$((skipped + 1)); note skipped "$name on gpu:0" "no GPU"
  else
    local why; why="$(why_failed "$rc")"
    [ "$rc" -ne 125 ] && why+=": $(tail -1 "$log-gpu.log")"
    failed=$((failed + 1)); note FAILED "$name on gpu:0" "$why"
  fi
}
# The tolerances: float32 summed in another order alone moves these samples'
# 200-step accuracy. Measured on the CPU (mnist_cnn, 200 steps, seed 42, the
# 1,000 eval digits): 1 and 2 threads, each native (AVX-512), under
# DTRAIN_MAX_CPU_ISA=avx2 and =sse4.2, gave 0.948 to 0.952 (loss 0.1636 to
# 0.1658): 0.4 points apart with the same math in other orders. cuDNN's
# algorithms reorder far more (other tilings, Winograd, FFT), so each side is
# allowed 1 point (10 digits), 2.5x that spread; a wrong gradient or a missed
# update costs tens of points at 200 steps. Doing better is no failure for
# the CNN. The checkpoint moves between devices exactly (within 0.2 points:
# the same variables, evaluated by other kernels).
sample_on_gpu mnist_mlp 0.01 0.01 0.002
sample_on_gpu mnist_cnn 0.01 1 0.002

# 4. The GPU benchmark (verifies each result before timing it).
if [ ! -x "$here/tests/dtrain_bench_gpu" ]; then
  skipped=$((skipped + 1)); note skipped "GPU benchmark" "not in this bundle"
elif [ -n "$no_gpu" ]; then
  skipped=$((skipped + 1)); note skipped "GPU benchmark" "no GPU"
else
  timed 60 "$logs/bench-gpu.log" "$here/tests/dtrain_bench_gpu"
  rc=$?
  cat "$logs/bench-gpu.log"
  if [ "$rc" -eq 0 ]; then
    passed=$((passed + 1)); note passed "GPU benchmark" "see above"
  else
    failed=$((failed + 1)); note FAILED "GPU benchmark" "$(why_failed "$rc")"
  fi
fi

echo "run-gpu-checks summary:"
printf '%s' "$report"
line="$passed passed, $failed failed, $skipped skipped"
if [ -n "$no_gpu" ]; then
  line+="; the GPU checks were skipped ($no_gpu)"
fi
echo "run-gpu-checks: $line"
echo "run-gpu-checks: $SECONDS s of the $budget s budget"
printf 'run-gpu-checks summary:\n%s%s\n' "$report" "run-gpu-checks: $line" >"$logs/summary.txt"
if [ $# -ge 1 ]; then
  # One file with every log (the checkpoints left out), for a caller that
  # can take few files back.
  (cd "$(dirname "$logs")" && tar czf "$(basename "$logs").tar.gz" --exclude="$(basename "$logs")/models" \
     "$(basename "$logs")") && echo "run-gpu-checks: logs in $logs.tar.gz"
fi
[ "$failed" -eq 0 ]
