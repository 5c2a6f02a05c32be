#!/usr/bin/env bash
# Sets up and runs the whole test suite: the quick, slow and mpi tiers of the
# optimised build, then the quick tier again under AddressSanitizer and
# UndefinedBehaviorSanitizer, then short runs of the fuzz harnesses.
#   scripts/test.sh            everything
#   scripts/test.sh --quick    quick tier of the optimised build only
set -euo pipefail
cd "$(dirname "$0")/.."
JOBS=$(nproc)

bash scripts/setup.sh build
echo "== tests (quick tier)"
ctest --test-dir build -L quick -j "$JOBS" --output-on-failure
[ "${1:-}" = "--quick" ] && exit 0

echo "== tests (MPI transport under mpiexec)"
ctest --test-dir build -L mpi --output-on-failure

echo "== tests (slow tier)"
ctest --test-dir build -L slow -j "$JOBS" --output-on-failure

echo "== tests under ASan + UBSan (quick tier)"
bash scripts/setup.sh build-asan -DCOLLPLAN_SANITIZE=ON -DCOLLPLAN_BUILD_BENCH=OFF -DCMAKE_BUILD_TYPE=Debug
# The cases that only build emitted C++ for many kernel paths or targets and
# run it are left out here: that code is not built with the sanitizers, and
# the quick tier above ran them.
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir build-asan -L quick -j "$JOBS" --output-on-failure \
  -E "every kernel path|kernel hook routes|builds without the C"

echo "== fuzzing: the plan, spec and matrix readers (libFuzzer, ASan + UBSan; docs/fuzzing.md)"
# Builds the harnesses in build-fuzz/, replays the seed corpora, then fuzzes
# each harness for FUZZ_SECONDS (30) seconds; any finding fails the run.
bash scripts/fuzz.sh
