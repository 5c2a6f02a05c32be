#!/usr/bin/env bash
# Plans over MPI against MPI's own collectives (bench/bench_mpi.cpp), and the
# GF kernels against ISA-L and XOR (bench_gf), in whole runs under mpirun.
#   scripts/bench_mpi.sh [K list] [whole runs] [repetitions] [lengths]
# Defaults: K = "4 8 16 32", 3 whole runs, 21 repetitions, 1 KiB,64 KiB,1 MiB.
# Ranks beyond the core count are oversubscribed (--oversubscribe, so Open MPI
# yields instead of busy-polling): such timings measure memory copies and CPU
# work on a shared machine, not a network. Prints, per figure, the median of
# the runs' medians with the spread (min..max over runs), and the load average.
set -euo pipefail
cd "$(dirname "$0")/.."
KS=${1:-"4 8 16 32"}
RUNS=${2:-3}
REPS=${3:-21}
LENS=${4:-1024,65536,1048576}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
[ -x build/bench/bench_mpi ] || cmake --build build --target bench_mpi bench_gf
out=$(mktemp)
trap 'rm -f "$out"' EXIT
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg); $(nproc) cores"
for K in $KS; do
  for r in $(seq "$RUNS"); do
    echo "== K=$K run $r/$RUNS"
    mpirun -np "$K" build/bench/bench_mpi "$REPS" "$LENS" | tee -a "$out" | grep -v '^RESULT'
  done
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "== summary: median over $RUNS whole runs of each run's median (spread: min..max over runs)"
grep '^RESULT' "$out" | awk '
  { key = $2 " K=" $3 " len=" $4 " " $5; v[key] = v[key] " " $6; if (!(key in seen)) { seen[key] = 1; order[n++] = key } }
  END {
    for (i = 0; i < n; ++i) {
      k = order[i]; m = split(substr(v[k], 2), a, " ");
      for (x = 1; x <= m; ++x) for (y = x + 1; y <= m; ++y) if (a[y] < a[x]) { t = a[x]; a[x] = a[y]; a[y] = t }
      med = (m % 2) ? a[(m + 1) / 2] : (a[m / 2] + a[m / 2 + 1]) / 2;
      unit = (k ~ /^ratio/) ? "" : " s";
      printf "%-58s %12.6g%s  (%.6g..%.6g)\n", k, med, unit, a[1], a[m]
    }
  }'
echo
echo "== GF kernels (bench_gf)"
build/bench/bench_gf
