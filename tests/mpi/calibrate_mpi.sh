#!/usr/bin/env bash
# `collplan calibrate --transport mpi` under mpiexec with 2, 3 and 4 ranks:
# rank 0 writes one cost file whose alpha_s and beta_s_per_byte are positive
# and finite, which `compile --cost-file` reads; a bad option or one rank
# alone is refused with one error and exit status 2.
#   calibrate_mpi.sh COLLPLAN MPIEXEC
set -uo pipefail
CP="$1"
MPIEXEC="$2"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAILED: $*"; exit 1; }

# A number from the cost file: "key": value on its own line (the file is
# written with one key per line).
field() { sed -n "s/^  \"$2\": \\([^,]*\\),\\{0,1\\}\$/\\1/p" "$1"; }

for np in 2 3 4; do
  f="$dir/cost$np.json"
  out=$("$MPIEXEC" -n $np "$CP" calibrate --transport mpi --reps 16 --passes 2 --max-bytes 262144 -o "$f" 2>&1) ||
    fail "np=$np: $out"
  grep -q "calibrate: transport mpi, $np ranks" <<<"$out" || fail "np=$np: no header: $out"
  n=$(grep -c "^fit (least squares of the relative error): alpha = " <<<"$out")
  [ "$n" = 1 ] || fail "np=$np: the fit was printed $n times, not once (rank 0 alone): $out"
  [ -f "$f" ] || fail "np=$np: no cost file written"
  grep -q '"transport": "mpi"' "$f" || fail "np=$np: transport: $(cat "$f")"
  grep -q "\"ranks\": $np" "$f" || fail "np=$np: ranks: $(cat "$f")"
  alpha=$(field "$f" alpha_s)
  beta=$(field "$f" beta_s_per_byte)
  # Positive and finite: awk reads "inf" and "nan" as 0 or as words, never as a number in (0, 1).
  awk -v a="$alpha" -v b="$beta" 'BEGIN { exit !(a + 0 > 0 && a + 0 < 1 && b + 0 > 0 && b + 0 < 1) }' ||
    fail "np=$np: alpha_s=$alpha beta_s_per_byte=$beta are not positive finite seconds"
  # The ring of pairs: np pairs for np > 2, one for 2.
  pairs=$(grep -o "([0-9],[0-9])" <<<"$(grep '^calibrate:' <<<"$out")" | wc -l)
  want=$([ $np = 2 ] && echo 1 || echo $np)
  [ "$pairs" = "$want" ] || fail "np=$np: $pairs pairs measured, not $want: $out"
  # compile parses it and takes beta = alpha_s.
  c=$("$CP" compile --op allreduce --K 8 -q --cost-file "$f" --format json) || fail "np=$np: compile: $c"
  grep -q "\"cost_file\": \"$f\"" <<<"$c" || fail "np=$np: compile did not use the file: $c"
done

# --pairs first: only (0,1).
out=$("$MPIEXEC" -n 3 "$CP" calibrate --transport mpi --reps 8 --passes 2 --max-bytes 262144 --pairs first 2>&1) ||
  fail "--pairs first: $out"
grep -q "pairs (0,1), one at a time" <<<"$out" || fail "--pairs first: $out"

# Refused alike on every rank, printed once.
out=$("$MPIEXEC" -n 2 "$CP" calibrate --transport mpi --ranks 4 2>&1) && fail "--ranks accepted under MPI: $out"
n=$(grep -c "collplan: error: --ranks is for --transport threads" <<<"$out")
[ "$n" = 1 ] || fail "the --ranks error was printed $n times, not once: $out"
out=$("$MPIEXEC" -n 1 "$CP" calibrate --transport mpi 2>&1) && fail "one rank accepted: $out"
grep -q "needs at least 2 ranks" <<<"$out" || fail "one rank: $out"
echo "calibrate mpi: ok"
