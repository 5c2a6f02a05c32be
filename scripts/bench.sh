#!/usr/bin/env bash
# Builds and runs every benchmark in bench/, printing figures and ratios
# against baselines measured in the same run. Not part of the tests.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh build
for b in build/bench/bench_*; do
  [ -x "$b" ] || continue
  [ "$(basename "$b")" = bench_mpi ] && continue  # needs mpirun: scripts/bench_mpi.sh
  echo "== $(basename "$b")"
  "$b"
done
