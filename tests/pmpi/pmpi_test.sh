#!/usr/bin/env bash
# libcollplan_pmpi under mpiexec, preloaded into programs that know nothing
# of collplan (tests/pmpi/pmpi_check.cpp):
#   - every predefined operation x datatype, Bcast/Allgather(v), MPI_IN_PLACE,
#     split communicators and user operators against PMPI_ (np 4, 5, 8), with
#     calls served (COLLPLAN_REPORT);
#   - the same linked instead of preloaded;
#   - MPI_Allreduce of random doubles: identical bits on every rank and in
#     20 runs (K = 4, 8, 16);
#   - the non-blocking calls (np 4, 5), and COLLPLAN_NONBLOCKING=0;
#   - bad configurations (no set, a corrupt index, a missing plan, a plan of
#     another size, a damaged plan file): one clear message, every call
#     falls back, results still right, no hang.
#   pmpi_test.sh COLLPLAN LIBPMPI PMPI_CHECK PMPI_CHECK_LINKED MPIEXEC
set -uo pipefail
CP=$(realpath "$1"); LIB=$(realpath "$2"); CHECK="$3"; LINKED="$4"; MPIEXEC="$5"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAILED: $*"; exit 1; }
run() {  # run NP ENV... -- PROGRAM ARGS: prints stdout+stderr, returns the status
  local np=$1; shift
  local envs=()
  while [ "$1" != "--" ]; do envs+=(-x "$1"); shift; done
  shift
  timeout 600 "$MPIEXEC" -n "$np" "${envs[@]}" "$@" 2>&1
}

set_dir="$dir/set"
"$CP" plan-set --K 2-5,8,16 --max-bytes 1048576 --max-blocks 16 --quiet -o "$set_dir" || fail "plan-set"
[ -f "$set_dir/index.json" ] || fail "no index.json"

export COLLPLAN_REPORT=1
for np in 4 5 8; do
  out=$(COLLPLAN_PLANS="$set_dir" LD_PRELOAD="$LIB" run $np COLLPLAN_PLANS LD_PRELOAD COLLPLAN_REPORT -- "$CHECK" ops) \
    || fail "ops np $np: $out"
  grep -q "pmpi_check: OK" <<<"$out" || fail "ops np $np: $out"
  served=$(sed -n 's/^collplan: served \([0-9]*\) of \([0-9]*\) collective calls$/\1/p' <<<"$out")
  [ -n "$served" ] && [ "$served" -gt 0 ] || fail "ops np $np: no call served: $out"
  for op in allreduce reduce broadcast allgather allgatherv reduce-scatter scan exscan; do
    grep -q "^collplan:   $op: served [1-9]" <<<"$out" || fail "ops np $np: no $op call served: $out"
  done
  echo "ops np $np: $(grep "^collplan: served" <<<"$out")"
done

out=$(COLLPLAN_PLANS="$set_dir" run 4 COLLPLAN_PLANS COLLPLAN_REPORT -- "$LINKED" ops) || fail "linked: $out"
grep -q "pmpi_check: OK" <<<"$out" || fail "linked: $out"
grep -q "^collplan: served [1-9]" <<<"$out" || fail "linked: nothing served: $out"

for np in 4 8 16; do
  out=$(COLLPLAN_PLANS="$set_dir" LD_PRELOAD="$LIB" run $np COLLPLAN_PLANS LD_PRELOAD COLLPLAN_REPORT -- "$CHECK" repro 20) \
    || fail "repro np $np: $out"
  # 20 runs x 2 comparisons (with run 0, with rank 0) on every rank.
  grep -q "pmpi_check: OK ($((40 * np)) checks)" <<<"$out" || fail "repro np $np: $out"
  grep -q "^collplan:   allreduce: served 20," <<<"$out" || fail "repro np $np: the 20 allreduces were not served: $out"
done

# Non-blocking calls: served, against PMPI_'s blocking results, many pending,
# mixed with blocking calls; and sent to MPI with COLLPLAN_NONBLOCKING=0.
for np in 4 5; do
  out=$(COLLPLAN_PLANS="$set_dir" LD_PRELOAD="$LIB" run $np COLLPLAN_PLANS LD_PRELOAD COLLPLAN_REPORT -- "$CHECK" nbc) \
    || fail "nbc np $np: $out"
  grep -q "pmpi_check: OK" <<<"$out" || fail "nbc np $np: $out"
  for op in iallreduce ireduce ibroadcast iallgather iallgatherv ireduce-scatter iscan iexscan; do
    grep -q "^collplan:   $op: served [1-9]" <<<"$out" || fail "nbc np $np: no $op call served: $out"
  done
  echo "nbc np $np: $(grep "^collplan: served" <<<"$out")"
done
out=$(COLLPLAN_PLANS="$set_dir" COLLPLAN_NONBLOCKING=0 LD_PRELOAD="$LIB" \
      run 4 COLLPLAN_PLANS COLLPLAN_NONBLOCKING LD_PRELOAD COLLPLAN_REPORT -- "$CHECK" nbc) || fail "nbc off: $out"
grep -q "pmpi_check: OK" <<<"$out" || fail "nbc off: $out"
grep -q "^collplan:   iallreduce: served 0, fell back [1-9][0-9]*; [0-9]* x non-blocking calls go to MPI" <<<"$out" \
  || fail "nbc off: non-blocking calls were served: $out"

# A table with many "mpi" ranges for one (operation, K): the short way to
# MPI must send exactly the calls in those ranges there, whether it holds the
# ranges itself (N = 2: 3 ranges with the one above the table's end) or
# reads them from the table (N = 6: 7 ranges, more than it holds).
ranges() {  # ranges N: N mpi ranges [16i+1, 16i+8] between plan rows
  local d="$dir/ranges$1"
  cp -r "$set_dir" "$d"
  python3 - "$d" "$1" <<'PY' || fail "could not edit the index"
import json, sys, os
d, n = sys.argv[1], int(sys.argv[2])
ix = json.load(open(os.path.join(d, "index.json")))
plan = [r for r in ix["table"] if r["op"] == "allreduce" and r["K"] == 4][0]["plan"]
rows = [r for r in ix["table"] if not (r["op"] == "allreduce" and r["K"] == 4)]
for i in range(n):
    rows.append({"op": "allreduce", "K": 4, "bytes": [16 * i + 1, 16 * i + 8], "plan": "mpi"})
    rows.append({"op": "allreduce", "K": 4, "bytes": [16 * i + 9, 16 * i + 16], "plan": plan})
rows.append({"op": "allreduce", "K": 4, "bytes": [16 * n + 1, 1048576], "plan": plan})
ix["table"] = rows
json.dump(ix, open(os.path.join(d, "index.json"), "w"))
PY
  local sizes=() i
  for ((i = 0; i <= $1; ++i)); do sizes+=($((16 * i + 1)) $((16 * i + 8)) $((16 * i + 9)) $((16 * i + 16))); done
  local out
  out=$(COLLPLAN_PLANS="$d" LD_PRELOAD="$LIB" run 4 COLLPLAN_PLANS LD_PRELOAD COLLPLAN_REPORT -- "$CHECK" sizes "${sizes[@]}") \
    || fail "ranges $1: $out"
  grep -q "pmpi_check: OK ($((4 * ${#sizes[@]})) checks)" <<<"$out" || fail "ranges $1: $out"
  # Sizes 16i+1 and 16i+8 for i < N go to MPI by the table; the rest are served.
  grep -q "^collplan:   allreduce: served $((${#sizes[@]} - 2 * $1)), fell back $((2 * $1)); $((2 * $1)) x table row says mpi\$" \
    <<<"$out" || fail "ranges $1: not the calls the table sends to MPI: $out"
  echo "ranges $1: $(grep "^collplan:   allreduce" <<<"$out")"
}
ranges 2
ranges 6

# The first test on MPI_COMM_WORLD goes by size class (2^c to 2^(c+1) − 1
# bytes): classes inside an "mpi" range or outside every row go to MPI at
# once, classes a range's end cuts take the walk over the ranges. Ranges
# whose ends cut some classes and not others: mpi [1, 1000], the plan
# (1000, 4096], no row above.
d="$dir/classes"
cp -r "$set_dir" "$d"
python3 - "$d" <<'PY' || fail "could not edit the index"
import json, sys, os
d = sys.argv[1]
ix = json.load(open(os.path.join(d, "index.json")))
plan = [r for r in ix["table"] if r["op"] == "allreduce" and r["K"] == 4][0]["plan"]
rows = [r for r in ix["table"] if not (r["op"] == "allreduce" and r["K"] == 4)]
rows.append({"op": "allreduce", "K": 4, "bytes": [1, 1000], "plan": "mpi"})
rows.append({"op": "allreduce", "K": 4, "bytes": [1001, 4096], "plan": plan})
ix["table"] = rows
json.dump(ix, open(os.path.join(d, "index.json"), "w"))
PY
# To MPI by the table: 6 (1 .. 511 whole classes, 512 and 1000 in the cut
# one); served: 1001, 1024, 2048, 4096; no row: 4097, 8191 (cut class),
# 8192, 65536 (whole classes).
out=$(COLLPLAN_PLANS="$d" LD_PRELOAD="$LIB" run 4 COLLPLAN_PLANS LD_PRELOAD COLLPLAN_REPORT -- "$CHECK" sizes \
      1 255 256 511 512 1000 1001 1024 2048 4096 4097 8191 8192 65536) || fail "classes: $out"
grep -q "pmpi_check: OK (56 checks)" <<<"$out" || fail "classes: $out"
grep -q "^collplan:   allreduce: served 4, fell back 10; 4 x no table row for this communicator size and message size; 6 x table row says mpi\$" \
  <<<"$out" || fail "classes: not the calls the table sends to MPI: $out"
echo "classes: $(grep "^collplan:   allreduce" <<<"$out")"

# Bad configurations: one message (the first failing rank's), all calls to MPI.
bad() {  # bad NAME DIR EXPECTED-MESSAGE
  local out
  out=$(COLLPLAN_PLANS="$2" LD_PRELOAD="$LIB" run 4 COLLPLAN_PLANS LD_PRELOAD COLLPLAN_REPORT -- "$CHECK" repro 2) \
    || fail "$1: the program failed: $out"
  grep -q "pmpi_check: OK" <<<"$out" || fail "$1: $out"
  local n
  n=$(grep -c "^collplan: rank [0-9]*: .*$3" <<<"$out")
  [ "$n" = 1 ] || fail "$1: expected one message matching '$3', got $n: $out"
  grep -q "^collplan: served 0 of" <<<"$out" || fail "$1: calls were served: $out"
}
bad "no set" "$dir/none" "index.json: cannot read the plan set index"
mkdir -p "$dir/corrupt" && echo '{"format": "collplan-plan-set", "version": 1, "plans": {}, "table": [' > "$dir/corrupt/index.json"
bad "corrupt index" "$dir/corrupt" "corrupt/index.json: not JSON"
cp -r "$set_dir" "$dir/missing"
rm -f "$dir"/missing/allreduce-K4-*.cplan
bad "missing plan" "$dir/missing" "cannot be used: .*allreduce-K4-"
# A K = 8 plan put where the index wants K = 4: its digest is not the one named.
cp -r "$set_dir" "$dir/swapped"
python3 - "$dir/swapped" <<'PY' || fail "could not edit the index"
import json, sys, os, shutil
d = sys.argv[1]
ix = json.load(open(os.path.join(d, "index.json")))
k8 = [p for p in ix["plans"].values() if p["op"] == "allreduce" and p["K"] == 8][0]
for p in ix["plans"].values():
    if p["op"] == "allreduce" and p["K"] == 4:
        shutil.copy(os.path.join(d, k8["file"]), os.path.join(d, p["file"]))
PY
bad "plan of another size" "$dir/swapped" "the file's digest is .* the index names"
cp -r "$set_dir" "$dir/damaged"
for f in "$dir"/damaged/allreduce-K4-*.cplan; do printf '\x55' | dd of="$f" bs=1 seek=200 conv=notrunc status=none; done
bad "damaged plan" "$dir/damaged" "cannot be used: "
echo "pmpi_test: OK"
