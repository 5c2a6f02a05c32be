#!/usr/bin/env bash
# `collplan tune` under mpiexec (runtime/pmpi/tune.cpp):
#   - a small set (K = 2 and 4, allreduce and allgather, with alternatives
#     from plan-set --candidates) tuned at K = 4 on a short ladder: the index
#     parses, says K = 4 is tuned, every row that names a plan measured that
#     plan's median below MPI's, and pmpi_check passes with it preloaded;
#   - tuned again at K = 2: both sizes' rows are there (tuning accumulates);
#   - bad arguments: no such set, an unknown operation, no mpirun, a K the
#     set has no plans for, a collplan without collplan-tune beside it: one
#     clear message, a failing status.
#   tune_test.sh COLLPLAN LIBPMPI PMPI_CHECK MPIEXEC
set -uo pipefail
CP=$(realpath "$1"); LIB=$(realpath "$2"); CHECK="$3"; MPIEXEC="$4"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAILED: $*"; exit 1; }
run() {  # run NP PROGRAM ARGS: prints stdout+stderr, returns the status
  local np=$1; shift
  timeout 600 "$MPIEXEC" -n "$np" "$@" 2>&1
}

set_dir="$dir/set"
"$CP" plan-set --K 2,4 --ops allreduce,allgather --max-bytes 65536 --max-blocks 8 --candidates 2 --quiet \
  -o "$set_dir" || fail "plan-set"
# --candidates wrote plans that no row names (the alternatives tune times).
python3 - "$set_dir/index.json" <<'PY' || fail "plan-set --candidates wrote no alternatives"
import json, sys
ix = json.load(open(sys.argv[1]))
named = {r["plan"] for r in ix["table"]}
extra = [p for p in ix["plans"] if p not in named]
assert extra, "no alternatives"
print(f"plan-set --candidates 2: {len(ix['plans'])} plans, {len(extra)} in no row")
PY

out=$(run 4 "$CP" tune --plans "$set_dir" --ops allreduce,allgather --max-bytes 4096 --reps 5) || fail "tune np 4: $out"
grep -q "^tune: wrote .*index.json (K = 4 tuned" <<<"$out" || fail "tune np 4 did not write: $out"
echo "$out" | grep "^tune: "

check_index() {  # check_index K... : tuned for each K, plan rows measured below MPI
  python3 - "$set_dir/index.json" "$@" <<'PY'
import json, sys
ix = json.load(open(sys.argv[1]))
Ks = [int(k) for k in sys.argv[2:]]
tuned = {(t["op"], t["K"]) for t in ix["tuned"]}
for K in Ks:
    for op in ("allreduce", "allgather"):
        assert (op, K) in tuned, f"{op} K={K} is not marked tuned: {ix['tuned']}"
        rows = [r for r in ix["table"] if r["op"] == op and r["K"] == K]
        assert rows, f"no rows for {op} K={K}"
        assert all(r["bytes"][1] <= 4096 for r in rows), f"a row beyond the ladder: {rows}"
        for r in rows:
            assert r["measured"], f"row without measurements: {r}"
            for m in r["measured"]:
                assert r["bytes"][0] <= m["bytes"] <= r["bytes"][1], r
                if r["plan"] != "mpi":
                    assert m["plan_us"] < m["mpi_us"], f"plan row not faster than MPI: {r}"
        print(f"{op} K={K}: {len(rows)} rows, plan rows {sum(r['plan'] != 'mpi' for r in rows)}")
PY
}
check_index 4 || fail "the tuned index"

# The library reads the tuned set (a bad index would be one message and no
# call served) and still computes right.
out=$(COLLPLAN_PLANS="$set_dir" COLLPLAN_REPORT=1 LD_PRELOAD="$LIB" \
  run 4 -x COLLPLAN_PLANS -x COLLPLAN_REPORT -x LD_PRELOAD "$CHECK" ops) || fail "pmpi_check with the tuned set: $out"
grep -q "pmpi_check: OK" <<<"$out" || fail "pmpi_check with the tuned set: $out"
grep -q "^collplan: rank" <<<"$out" && fail "the library refused the tuned set: $out"
echo "pmpi_check with the tuned set: $(grep "^collplan: served" <<<"$out")"

# K = 2 after K = 4: both tuned.
out=$(run 2 "$CP" tune --plans "$set_dir" --max-bytes 4096 --reps 3 --quiet) || fail "tune np 2: $out"
check_index 2 4 || fail "tuning K = 2 after K = 4"

# Bad arguments.
expect() {  # expect NAME EXPECTED-MESSAGE COMMAND...: fails, with the message once
  local name=$1 msg=$2; shift 2
  local out
  out=$("$@" 2>&1) && fail "$name: succeeded: $out"
  local n
  n=$(grep -c -- "$msg" <<<"$out")
  [ "$n" = 1 ] || fail "$name: expected one message matching '$msg', got $n: $out"
  echo "$name: $(grep -- "$msg" <<<"$out")"
}
expect "no such set" "collplan tune: error: .*none/index.json: cannot read the plan set index" \
  run 2 "$CP" tune --plans "$dir/none"
expect "unknown op" "unknown operation \"gather\" (valid: broadcast" run 2 "$CP" tune --plans "$set_dir" --ops gather
expect "no mpirun" "must run under mpirun" "$CP" tune --plans "$set_dir"
expect "K not in the set" "has no plans for K = 3 (the number of ranks; its plans are for K = 2, 4)" \
  run 3 "$CP" tune --plans "$set_dir"
expect "op not in the set" "has no reduce plans for K = 2" run 2 "$CP" tune --plans "$set_dir" --ops reduce
expect "bad margin" "--margin \"2\" is not a fraction" run 2 "$CP" tune --plans "$set_dir" --margin 2
expect "bad batch" "--batch-us \"200000\" is not an integer in 0..100000" run 2 "$CP" tune --plans "$set_dir" \
  --batch-us 200000
# A collplan with no collplan-tune beside it (built without MPI) says so.
mkdir -p "$dir/alone" && cp "$CP" "$dir/alone/collplan"
expect "built without MPI" "collplan tune needs MPI: this collplan was built without it" \
  "$dir/alone/collplan" tune --plans "$set_dir"
"$CP" tune --help | grep -q "^usage: mpirun -np K collplan tune --plans DIR" || fail "tune --help"
"$CP" --help | grep -q "tune" || fail "collplan --help does not list tune"
echo "tune_test: OK"
