#!/usr/bin/env bash
# ThreadSanitizer run of what touches threads (too slow for CI's budget: a
# TSan build of dtrain and the unit tests takes ~25 min on 2 cores; run it
# nightly or before a release): the unit tests of the replica pool,
# all-reduce, synchronised batch norm, coordination, Gloo, parameter service,
# input pipeline and stop signals, then a sample of the stop-signal stress
# test, with the TSan build of dtrain.
# Built with clang, whose OpenMP runtime (LLVM's libomp) tells TSan about its
# barriers and tasks through Archer (OMP_TOOL_LIBRARIES): with GCC's libgomp,
# which Debian ships uninstrumented, every parallel loop whose results the
# calling thread reads afterwards was reported. oneDNN keeps Debian's libgomp,
# so its kernels run one thread (OMP_NUM_THREADS=1). ignore_noninstrumented_modules
# and tests/stress/tsan.supp keep TSan out of the other uninstrumented
# libraries (gRPC, abseil, Gloo, protobuf); dtrain's own code is never suppressed.
#   bash tests/stress/tsan.sh [STRESS_RUNS]     (default 40)
#   needs: apt-get install clang libclang-rt-dev libomp-dev
set -uo pipefail
cd "$(dirname "$0")/../.."
runs=${1:-40}
archer=$(ls /usr/lib/llvm-*/lib/libarcher.so 2>/dev/null | tail -1)
if ! command -v clang++ >/dev/null || [ -z "$archer" ]; then
  echo "tests/stress/tsan.sh: needs clang and LLVM's OpenMP with Archer: apt-get install clang libclang-rt-dev libomp-dev" >&2
  exit 2
fi
[ -f build-tsan/build.ninja ] || CC=clang CXX=clang++ meson setup build-tsan -Dcuda=disabled --buildtype=debugoptimized \
  -Db_sanitize=thread -Db_lundef=false || exit 1
ninja -C build-tsan cli/dtrain tests/dtrain_unit_tests || exit 1
export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:ignore_noninstrumented_modules=1:suppressions=$PWD/tests/stress/tsan.supp"
export OMP_TOOL_LIBRARIES=$archer
export OMP_NUM_THREADS=1
failed=0
./build-tsan/tests/dtrain_unit_tests \
  -tc='*replica*,*all_reduce*,*all-reduce*,*sync*batch*,*coordination*,*gloo*,*parameter serv*,*ps *,*prefetch*,*pipeline*,*read_ahead*,*stream*,*stop*,*thread*' \
  || failed=1
python3 tests/stress/stop_signal_stress.py --runs "$runs" --dtrain build-tsan/cli/dtrain --out runs/stress-tsan \
  --limit 300 || failed=1
[ "$failed" -eq 0 ]
