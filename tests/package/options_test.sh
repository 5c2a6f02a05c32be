#!/usr/bin/env bash
# collplan_add_plan reaches every compile option, and a plan does not depend
# on the build folder: a consumer of the installed package (options/) is
# configured and built in two folders; every plan is byte for byte the same
# in both and the same as `collplan compile` with the matching flags
# (BLOCKS auto, BETA/TAU/COST_LEN, lists as CMake lists, ALGORITHM, PASSES,
# RADIX, PHI, GENERATOR/SYSTEMATIC, COUNTS/EXCLUSIVE, MATRIX_FILE by a
# relative path). Malformed calls fail configuration naming the keyword and
# the value; an option the operation does not use fails the build naming it.
#   options_test.sh PREFIX WORKDIR CXX
set -euo pipefail
prefix=$1 work=$2 cxx=$3
src=$(cd "$(dirname "$0")/options" && pwd)
cp_=$prefix/bin/collplan
rm -rf "$work"
mkdir -p "$work"
fail() { echo "FAIL: $*"; exit 1; }

# Two checkouts of the project in different folders, each built in its own
# build folder (the matrix file's absolute path differs between them).
for b in one two; do
  cp -r "$src" "$work/src-$b"
  cmake -S "$work/src-$b" -B "$work/$b" -G Ninja -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_CXX_COMPILER="$cxx" >/dev/null
  cmake --build "$work/$b" >/dev/null
done
grep -q "src-one/A.csv" "$work/one/collplan/filed/filed.spec.json" || fail "the spec file does not name the matrix file"
d1=$("$work/one/app") d2=$("$work/two/app")
[ "$d1" = "$d2" ] || fail "the same collplan_add_plan call gave digest $d1 in one build folder, $d2 in another"
echo "digest in both build folders: $d1"

# The same plan as the CLI's, option for option, in both folders.
cli() {  # name, flags...
  local name=$1
  shift
  (cd "$work/src-one" && "$cp_" compile "$@" -q -o "$work/$name.cplan" >/dev/null) || fail "collplan compile $* failed"
  for b in one two; do
    cmp -s "$work/$name.cplan" "$work/$b/collplan/$name/$name.cplan" ||
      fail "plan $name of build folder $b differs from collplan compile $*"
  done
}
cli filed --op encode --K 3 --p 1 --matrix file --matrix-file A.csv
cli bcast --op broadcast --K 33 --root 3 --blocks auto --beta 50 --tau 1 --cost-len 20000
cli vand --op encode --K 4 --field prime:257 --matrix vandermonde --points 3,5,7,9 --algorithm prepare-shoot \
  --passes drop-zeros
cli agv --op allgatherv --K 6 --counts 3,0,5,1,2,4 --blocks 2
cli dft --op encode --K 16 --field prime:257 --matrix dft --radix 4
cli dl --op encode --K 24 --field prime:7681 --matrix draw-loose --phi 5,0,7 --passes none
cli gen --op decentralized-encode --N 5 --K 2 --systematic false --generator G.csv
cli scan --op prefix --K 10 --p 2 --lambda 3 --counts 8,8,8,8,8,8,8,8,8,8 --exclusive
cli dec --op decentralized-encode --N 8 --K 3 --code random --seed 4
# The options changed the plans (not defaults everywhere).
shown=$("$cp_" show "$work/one/collplan/bcast/bcast.cplan")
grep -q "blocks auto" <<<"$shown" || fail "BLOCKS auto did not reach the plan"
shown=$("$cp_" show "$work/one/collplan/dft/dft.cplan")
grep -q "algorithm  dft P=4" <<<"$shown" || fail "RADIX 4 did not reach the plan"
echo "every plan equals collplan compile with the same options, in both build folders"

# Malformed calls fail configuration with a message naming them.
bad() {  # case, expected message fragment
  local out
  if out=$(cmake -S "$work/src-one" -B "$work/bad-$1" -G Ninja -DCMAKE_PREFIX_PATH="$prefix" \
           -DCMAKE_CXX_COMPILER="$cxx" -DBAD_CASE="$1" 2>&1); then
    fail "BAD_CASE=$1 configured"
  fi
  # CMake wraps long messages: compare with the lines joined.
  out=$(tr '\n' ' ' <<<"$out" | tr -s ' ')
  grep -qF -- "$2" <<<"$out" || fail "BAD_CASE=$1: the message lacks '$2': $out"
}
bad unknown-keyword "collplan_add_plan(app): unknown arguments: PORTS 2 (valid keywords: OP K N P"
bad bad-integer "collplan_add_plan(app): K 'four' is invalid (valid: a non-negative decimal integer)"
bad bad-blocks "BLOCKS 'many' is invalid (valid: a block count n >= 1, or auto)"
bad bad-list "POINTS 'x' is invalid (valid: non-negative integers"
bad bad-beta "BETA '-1' is invalid (valid: a number >= 0)"
bad bad-op "OP 'scatter' is invalid (valid: encode, decentralized-encode"
echo "malformed calls fail configuration, naming the keyword and value"

# An option the operation does not use: configuration succeeds, the build's
# collplan compile refuses it.
cmake -S "$work/src-one" -B "$work/bad-unused" -G Ninja -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_CXX_COMPILER="$cxx" \
  -DBAD_CASE=unused-root >/dev/null
if out=$(cmake --build "$work/bad-unused" 2>&1); then fail "ROOT on an allgather built"; fi
grep -qF -- "--root (key \"root\" of spec file" <<<"$out" || fail "the build error does not name ROOT: $out"
grep -qF -- "is not used by --op allgather (it is used by: broadcast, reduce)" <<<"$out" ||
  fail "the build error does not say who uses ROOT: $out"
echo "PASS: every option reaches the plan, the plan is the same in every build folder, bad calls are refused"
