#!/usr/bin/env bash
# Builds examples/firmware-consumer from the installed collplan package and
# runs it: the plan compiled once into one library per rank, one process per
# device, each embedding only its rank's generated code, pipes between them,
# every device checking its own result.
#   consumer_test.sh PREFIX WORKDIR CXX
set -euo pipefail
prefix=$1 work=$2 cxx=$3
src=$(cd "$(dirname "$0")/../../examples/firmware-consumer" && pwd)
rm -rf "$work"
cmake -S "$src" -B "$work" -G Ninja -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_CXX_COMPILER="$cxx" >/dev/null
log=$(cmake --build "$work")
# One plan compilation for the five devices.
n=$(grep -c "collplan: compiling" <<<"$log" || true)
[ "$n" = 1 ] || { echo "FAIL: the plan was compiled $n times, expected once"; exit 1; }
ranks=()
for r in 0 1 2 3 4; do ranks+=("$work/rank_$r"); done
# Each device holds only its own rank's code.
syms=$(nm -C "$work/rank_2")
grep -q "device_plan::rank_2(" <<<"$syms" || { echo "FAIL: rank_2 lacks its entry point"; exit 1; }
if grep -q "device_plan::rank_3(" <<<"$syms"; then echo "FAIL: rank_2 embeds rank 3's code"; exit 1; fi
"$work/launcher" --len 1000 "${ranks[@]}"
"$work/launcher" --len 1 "${ranks[@]}"
