#!/usr/bin/env bash
# `collplan run --transport mpi --trace` with 16 ranks: rank 0 gathers every
# rank's events and writes one Chrome trace with 16 tracks
# (tests/viz/check_trace.py checks its shape).
#   trace_mpi.sh COLLPLAN MPIEXEC
set -uo pipefail
CP="$1"
MPIEXEC="$2"
HERE="$(cd "$(dirname "$0")" && pwd)"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAILED: $*"; exit 1; }

"$CP" compile -q --op encode --K 16 --p 2 -o "$dir/enc.cplan" >/dev/null || fail "compile"
out=$("$MPIEXEC" --oversubscribe -n 16 "$CP" run "$dir/enc.cplan" --transport mpi --len 256 --reps 2 \
      --trace "$dir/trace.json" 2>&1) || fail "traced replay: $out"
grep -q "every byte on every rank equals the direct computation" <<<"$out" || fail "traced replay: $out"
grep -q "trace: wrote $dir/trace.json" <<<"$out" || fail "no trace written: $out"
python3 "$HERE/../viz/check_trace.py" "$dir/trace.json" 16 || fail "trace schema"
grep -q '"transport":"mpi"' "$dir/trace.json" || fail "otherData does not name the transport"
echo "trace mpi: ok"
