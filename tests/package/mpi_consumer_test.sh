#!/usr/bin/env bash
# An MPI application of the installed collplan package: builds
# tests/package/mpi-consumer/ against PREFIX alone (-DCMAKE_PREFIX_PATH; the
# plan is compiled and checked at build time by the installed collplan) and
# replays the K = 8 encode plan under mpiexec -np 8 from C (collplan_mpi.h)
# and from C++ (runtime/transport/mpi.h), and on threads from C through
# collplan.h alone, every rank checking its bytes.
#   mpi_consumer_test.sh PREFIX WORKDIR CC CXX MPIEXEC
set -euo pipefail
prefix=$1 work=$2 cc=$3 cxx=$4 mpiexec=$5
src=$(cd "$(dirname "$0")/mpi-consumer" && pwd)
rm -rf "$work"
cmake -S "$src" -B "$work" -G Ninja -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_C_COMPILER="$cc" \
  -DCMAKE_CXX_COMPILER="$cxx" >/dev/null
cmake --build "$work" >/dev/null
plan=$(sed -n 1p "$work/paths.txt") csv=$(sed -n 2p "$work/paths.txt")
[ -s "$plan" ] || { echo "FAIL: no plan file $plan"; exit 1; }
check=$("$prefix/bin/collplan" check "$plan") || { echo "FAIL: collplan check $plan: $check"; exit 1; }
grep -q ": OK — encode K=8 " <<<"$check" || { echo "FAIL: $plan is not a K = 8 encode plan: $check"; exit 1; }
# collplan.h without MPI: every rank a thread of one process. The runtime
# carries nothing of the compiler: no library above the plan IR on the link
# line of a program that only opens a plan and replays it.
link=$(ninja -C "$work" -t commands encode_threads | tail -n 1)
grep -q 'libcollplan_runtime\.a' <<<"$link" || { echo "FAIL: no runtime library on encode_threads' link line: $link"; exit 1; }
if grep -Eo 'libcollplan_(matrix|json|passes|gen|pipeline|backend|search|compiler|user_op)[^ ]*' <<<"$link"; then
  echo "FAIL: encode_threads (collplan::runtime only) links compiler libraries: $link"; exit 1
fi
echo "encode_threads: $(stat -c %s "$work/encode_threads") bytes; collplan libraries linked:" \
  $(grep -Eo 'libcollplan_[a-z_]+\.a' <<<"$link" | sort -u | tr '\n' ' ')
"$work/encode_threads" "$plan" "$csv" 4099
if [ -x "$work/encode_threads_f" ]; then
  "$work/encode_threads_f" "$plan" "$csv" 4099
else
  echo "SKIP: no Fortran compiler, the bind(C) program was not built"
fi
for exe in encode_c encode_cpp; do
  "$mpiexec" -np 8 "$work/$exe" "$plan" "$csv" 4099
done
