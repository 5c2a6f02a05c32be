#!/usr/bin/env bash
# Real MPI programs from Debian packages, run unmodified under mpiexec with
# and without libcollplan_pmpi preloaded: their own checks must pass in both
# runs, their results must agree, and the library must have served calls.
#   hpcc                 (package hpcc) HPC Challenge, N = 300, 2 x 2 grid
#   xdlu                 (scalapack-mpi-test) ScaLAPACK's LU test driver
#   mpi4py_check.py      (python3-mpi4py, python3-numpy) numpy arrays
# A program whose package is missing is skipped with its reason; the test
# fails only on a wrong run (scripts/setup.sh installs the packages).
#   real_programs.sh COLLPLAN LIBPMPI MPIEXEC
set -uo pipefail
CP=$(realpath "$1"); LIB=$(realpath "$2"); MPIEXEC="$3"
here=$(cd "$(dirname "$0")" && pwd)
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAILED: $*"; exit 1; }
skipped=()

"$CP" plan-set --K 2-4 --max-bytes 4194304 --max-blocks 16 --quiet -o "$dir/set" || fail "plan-set"
with() { COLLPLAN_PLANS="$dir/set" COLLPLAN_REPORT=1 LD_PRELOAD="$LIB" \
  timeout 900 "$MPIEXEC" -x COLLPLAN_PLANS -x COLLPLAN_REPORT -x LD_PRELOAD "$@"; }
without() { timeout 900 "$MPIEXEC" "$@"; }
served_line() { grep "^collplan: served" "$1" || echo "(no report)"; }

# ── hpcc ──
if [ -x /usr/bin/hpcc ] && [ -f /usr/share/doc/hpcc/examples/_hpccinf.txt ]; then
  for mode in plain lib; do
    mkdir -p "$dir/hpcc-$mode" && cd "$dir/hpcc-$mode"
    sed -e '6s/^1000 /300  /' /usr/share/doc/hpcc/examples/_hpccinf.txt > hpccinf.txt
    grep -q "^300 " hpccinf.txt || fail "hpcc: could not set N = 300 in the example input"
    if [ $mode = plain ]; then without -n 4 /usr/bin/hpcc > run.log 2>&1 || fail "hpcc plain: $(tail run.log)"
    else with -n 4 /usr/bin/hpcc > run.log 2>&1 || fail "hpcc with the library: $(tail -20 run.log)"; fi
    grep -q "^Success=1" hpccoutf.txt || fail "hpcc $mode: no Success=1"
    grep -q "FAILED" hpccoutf.txt && fail "hpcc $mode: a check FAILED: $(grep FAILED hpccoutf.txt)"
    grep -q "PASSED" hpccoutf.txt || fail "hpcc $mode: no PASSED line"
  done
  # The same checks passed, and HPL's scaled residual agrees within rounding.
  p=$(grep -c PASSED "$dir/hpcc-plain/hpccoutf.txt"); l=$(grep -c PASSED "$dir/hpcc-lib/hpccoutf.txt")
  [ "$p" = "$l" ] || fail "hpcc: $p PASSED lines without the library, $l with it"
  for key in HPL_N PTRANS_residual; do
    a=$(grep "^$key=" "$dir/hpcc-plain/hpccoutf.txt"); b=$(grep "^$key=" "$dir/hpcc-lib/hpccoutf.txt")
    [ "$a" = "$b" ] || fail "hpcc: $a without the library, $b with it"
  done
  grep -q "^collplan: served [1-9]" "$dir/hpcc-lib/run.log" || fail "hpcc: no call served: $(grep collplan "$dir/hpcc-lib/run.log")"
  echo "hpcc: Success=1 both runs, $l PASSED; $(served_line "$dir/hpcc-lib/run.log")"
  grep "^collplan:   " "$dir/hpcc-lib/run.log"
else
  skipped+=("hpcc (install the Debian package hpcc)")
fi

# ── ScaLAPACK LU ──
SL=/usr/lib/x86_64-linux-gnu/scalapack/openmpi-tests
if [ -x $SL/xdlu ] && [ -f $SL/LU.dat ]; then
  for mode in plain lib; do
    mkdir -p "$dir/lu-$mode" && cd "$dir/lu-$mode" && cp $SL/LU.dat .
    if [ $mode = plain ]; then without -n 4 $SL/xdlu > run.log 2>&1 || fail "xdlu plain: $(tail run.log)"
    else with -n 4 $SL/xdlu > run.log 2>&1 || fail "xdlu with the library: $(tail -20 run.log)"; fi
    grep -q " 0 tests completed and failed residual checks" run.log || fail "xdlu $mode: $(grep -A3 Finished run.log)"
  done
  a=$(grep "tests completed and passed" "$dir/lu-plain/run.log"); b=$(grep "tests completed and passed" "$dir/lu-lib/run.log")
  [ "$a" = "$b" ] || fail "xdlu: '$a' without the library, '$b' with it"
  echo "xdlu: $b; $(served_line "$dir/lu-lib/run.log")"
  grep "^collplan:   " "$dir/lu-lib/run.log"
else
  skipped+=("ScaLAPACK xdlu (install the Debian package scalapack-mpi-test)")
fi

# ── mpi4py ──
if /usr/bin/python3 -c "import mpi4py, numpy" 2>/dev/null; then
  cd "$dir"
  without -n 4 /usr/bin/python3 "$here/mpi4py_check.py" > py-plain.log 2>&1 || fail "mpi4py plain: $(cat py-plain.log)"
  with -n 4 /usr/bin/python3 "$here/mpi4py_check.py" > py-lib.log 2>&1 || fail "mpi4py with the library: $(cat py-lib.log)"
  grep -q "mpi4py_check: OK" py-lib.log || fail "mpi4py: $(cat py-lib.log)"
  grep -q "^collplan: served [1-9]" py-lib.log || fail "mpi4py: no call served: $(cat py-lib.log)"
  for op in iallreduce ibroadcast iallgather iscan; do
    grep -q "^collplan:   $op: served [1-9]" py-lib.log || fail "mpi4py: no $op served: $(cat py-lib.log)"
  done
  echo "mpi4py: $(grep mpi4py_check py-lib.log); $(served_line py-lib.log)"
  grep "^collplan:   " py-lib.log
else
  skipped+=("mpi4py (install the Debian packages python3-mpi4py python3-numpy)")
fi

for s in "${skipped[@]}"; do echo "SKIPPED: $s"; done
echo "real_programs: OK"
