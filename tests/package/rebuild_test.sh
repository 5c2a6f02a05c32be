#!/usr/bin/env bash
# collplan_add_plan rebuilds exactly when its spec changes: configure and
# build a consumer of the installed package, rebuild with nothing changed
# (the plan is not regenerated), touch a source (still not regenerated),
# change the spec (SEED): the plan, and the program, change. A second target
# compiles a decentralized RS plan in 4 blocks (N, CODE, BLOCKS arguments).
#   rebuild_test.sh PREFIX WORKDIR CXX
set -euo pipefail
prefix=$1 work=$2 cxx=$3
src=$(cd "$(dirname "$0")/rebuild" && pwd)
rm -rf "$work"
mkdir -p "$work"
cp -r "$src" "$work/src"
b="$work/build"
plan="$b/collplan/demo/demo.cplan"
mtime() { stat -c %Y.%y "$1"; }

cmake -S "$work/src" -B "$b" -G Ninja -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_CXX_COMPILER="$cxx" -DPLAN_SEED=1 >/dev/null
cmake --build "$b" >/dev/null
d1=$("$b/app")
m1=$(mtime "$plan")
echo "seed 1: digest $d1"

sleep 1
out=$(cmake --build "$b")
grep -q "no work to do" <<<"$out" || { echo "FAIL: a rebuild without changes did work: $out"; exit 1; }
[ "$(mtime "$plan")" = "$m1" ] || { echo "FAIL: the plan was regenerated without a change"; exit 1; }

touch "$work/src/main.cpp"
cmake --build "$b" >/dev/null
[ "$(mtime "$plan")" = "$m1" ] || { echo "FAIL: touching main.cpp regenerated the plan"; exit 1; }
[ "$("$b/app")" = "$d1" ] || { echo "FAIL: the digest changed without a spec change"; exit 1; }

cmake -S "$work/src" -B "$b" -DPLAN_SEED=2 >/dev/null
cmake --build "$b" >/dev/null
d2=$("$b/app")
echo "seed 2: digest $d2"
[ "$(mtime "$plan")" != "$m1" ] || { echo "FAIL: changing the spec did not regenerate the plan"; exit 1; }
[ "$d2" != "$d1" ] || { echo "FAIL: changing the spec did not change the compiled-in plan"; exit 1; }
"$prefix/bin/collplan" check "$plan" >/dev/null
# The decentralized plan (N, CODE, BLOCKS) built, has its shape, and checks.
coded=$("$b/coded") || { echo "FAIL: the decentralized plan's generated code has the wrong shape: $coded"; exit 1; }
grep -q "decentralized-encode" <<<"$coded" || { echo "FAIL: coded built another plan: $coded"; exit 1; }
"$prefix/bin/collplan" check "$b/collplan/rs/rs.cplan" >/dev/null
echo "PASS: rebuilt exactly when the spec changed; the decentralized plan in blocks built and checks"
