#!/usr/bin/env bash
# `collplan run --transport mpi` under mpiexec: a correct replay of an encode
# and a broadcast plan, and a communicator of the wrong size refused with one
# clear error (rank 0's) and exit status 2 on every rank.
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
# --stats: rank 0 prints every rank's copy figures, one line each.
out=$("$MPIEXEC" -n 5 "$CP" run "$dir/bc.cplan" --transport mpi --len 33 --reps 1 --stats 2>&1) || fail "broadcast --stats: $out"
n=$(grep -c "^rank [0-4]: engine copies: [0-9]* bytes staged, [0-9]* bytes delivered" <<<"$out")
[ "$n" = 5 ] || fail "--stats printed $n rank lines, not 5: $out"

out=$("$MPIEXEC" -n 3 "$CP" run "$dir/enc.cplan" --transport mpi --len 10 2>&1) && fail "wrong size accepted: $out"
# Every rank fails alike: the error is printed once (by rank 0), every rank exits 2.
n=$(grep -c "collplan: error: the communicator has 3 ranks but the plan has 4 (start it with mpirun -np 4)" <<<"$out")
[ "$n" = 1 ] || fail "the wrong communicator size was reported $n times, not once: $out"
out=$("$MPIEXEC" -n 3 "$CP" run "$dir/enc.cplan" --transport mpi --len 10 --format json 2>/dev/null)
grep -q '"kind": "input"' <<<"$out" || fail "no JSON verdict for the wrong communicator size: $out"
echo "cli mpi: ok"
