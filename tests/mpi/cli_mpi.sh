#!/usr/bin/env bash
# `collplan run --transport mpi` under mpiexec: a correct replay of an encode
# and a broadcast plan, and a communicator of the wrong size refused with a
# clear error on every rank.
#   cli_mpi.sh COLLPLAN MPIEXEC
set -uo pipefail
CP="$1"
MPIEXEC="$2"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAILED: $*"; exit 1; }

"$CP" compile --op encode --K 4 --p 2 --field gf65536 -o "$dir/enc.cplan" >/dev/null || fail "compile encode"
"$CP" compile --op broadcast --K 5 --lambda 2 --blocks 3 --root 2 -o "$dir/bc.cplan" >/dev/null || fail "compile broadcast"

out=$("$MPIEXEC" -n 4 "$CP" run "$dir/enc.cplan" --transport mpi --len 1000 --reps 2 2>&1) || fail "encode replay: $out"
grep -q "on 4 MPI ranks" <<<"$out" || fail "encode replay: $out"
grep -q "every byte on every rank equals the direct computation" <<<"$out" || fail "encode replay: $out"

out=$("$MPIEXEC" -n 5 "$CP" run "$dir/bc.cplan" --transport mpi --len 33 --reps 1 2>&1) || fail "broadcast replay: $out"
grep -q "every byte on every rank equals the direct computation" <<<"$out" || fail "broadcast replay: $out"

out=$("$MPIEXEC" -n 3 "$CP" run "$dir/enc.cplan" --transport mpi --len 10 2>&1) && fail "wrong size accepted: $out"
for r in 0 1 2; do
  grep -q "MPI rank $r: the communicator has 3 ranks but the plan has 4 (start it with mpirun -np 4)" <<<"$out" ||
    fail "rank $r did not report the wrong communicator size: $out"
done
echo "cli mpi: ok"
