#!/usr/bin/env bash
# Sets up and runs the test suite: the quick and MPI tiers and the CMake
# package tests of the optimised build, a short fault campaign, then the
# quick tier again under AddressSanitizer and UndefinedBehaviorSanitizer,
# then short runs of the fuzz harnesses.
#   scripts/test.sh            all of that (what CI runs)
#   scripts/test.sh --quick    quick tier of the optimised build only
#   scripts/test.sh --full     also the slow tier (the exhaustive grids, about
#                              an hour on two cores) and the whole fault
#                              campaign (300 TCP and 50 MPI jobs,
#                              docs/reliability.md)
set -euo pipefail
cd "$(dirname "$0")/.."
JOBS=$(nproc)
MODE="${1:-}"
case "$MODE" in
  ""|--quick|--full) ;;
  *) echo "scripts/test.sh: unknown option '$MODE' (valid: --quick, --full)" >&2; exit 2 ;;
esac

bash scripts/setup.sh build
echo "== tests (quick tier)"
ctest --test-dir build -L quick -j "$JOBS" --output-on-failure
[ "$MODE" = "--quick" ] && exit 0

echo "== tests (MPI transport under mpiexec)"
ctest --test-dir build -L mpi --output-on-failure

if [ "$MODE" = "--full" ]; then
  echo "== tests (slow tier, with the CMake package tests)"
  ctest --test-dir build -L slow -j "$JOBS" --output-on-failure
  echo "== fault campaign (docs/reliability.md)"
  python3 scripts/faults.py --collplan build/compiler/collplan
else
  echo "== tests (CMake package tests)"
  ctest --test-dir build -L package -LE mpi -j "$JOBS" --output-on-failure
  echo "== fault campaign, short (docs/reliability.md)"
  python3 scripts/faults.py --collplan build/compiler/collplan --tcp-jobs 34 --mpi-jobs 4 --max-k 8
fi

echo "== tests under ASan + UBSan (quick tier)"
bash scripts/setup.sh build-asan -DCOLLPLAN_SANITIZE=ON -DCOLLPLAN_BUILD_BENCH=OFF -DCMAKE_BUILD_TYPE=Debug
# Left out here: the cases labelled heavy (exhaustive grids and the
# emitted-program comparisons, run by the optimised quick tier above) and the
# cases that only build emitted C++ for many kernel paths or targets and run
# it (that code is not built with the sanitizers).
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir build-asan -L quick -LE heavy -j "$JOBS" --output-on-failure \
  -E "every kernel path|kernel hook routes|builds without the C"

echo "== fuzzing: the plan, spec and matrix readers (libFuzzer, ASan + UBSan; docs/fuzzing.md)"
# Builds the harnesses in build-fuzz/, replays the seed corpora, then fuzzes
# each harness for FUZZ_SECONDS seconds (30 by default, 10 in CI); any
# finding fails the run.
bash scripts/fuzz.sh
