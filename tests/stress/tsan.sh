#!/usr/bin/env bash
# ThreadSanitizer run of what touches threads (too slow for CI's budget: a
# TSan build of dtrain and the unit tests takes ~25 min on 2 cores; run it
# nightly or before a release): the unit tests of the replica pool,
# all-reduce, synchronised batch norm, coordination, Gloo, parameter service,
# input pipeline and stop signals, then a sample of the stop-signal stress
# test, with the TSan build of dtrain. One compute thread (OMP_NUM_THREADS=1):
# Debian's libgomp is not instrumented, so TSan cannot see its barriers;
# tests/stress/tsan.supp names the other uninstrumented libraries.
#   bash tests/stress/tsan.sh [STRESS_RUNS]     (default 40)
set -uo pipefail
cd "$(dirname "$0")/../.."
runs=${1:-40}
[ -f build-tsan/build.ninja ] || meson setup build-tsan -Dcuda=disabled --buildtype=debug -Db_sanitize=thread \
  -Db_lundef=false || exit 1
ninja -C build-tsan cli/dtrain tests/dtrain_unit_tests || exit 1
export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:suppressions=$PWD/tests/stress/tsan.supp"
export OMP_NUM_THREADS=1
failed=0
./build-tsan/tests/dtrain_unit_tests \
  -tc='*replica*,*all_reduce*,*all-reduce*,*sync*batch*,*coordination*,*gloo*,*parameter serv*,*ps *,*prefetch*,*pipeline*,*read_ahead*,*stream*,*stop*,*thread*' \
  || failed=1
python3 tests/stress/stop_signal_stress.py --runs "$runs" --dtrain build-tsan/cli/dtrain --out runs/stress-tsan \
  --limit 300 || failed=1
[ "$failed" -eq 0 ]
