#!/usr/bin/env bash
# collplan_add_plan_libraries: one plan compiled once, one library per chosen
# rank. Configures and builds a consumer of the installed package
# (tests/package/libraries/) and checks: each plan is compiled once; every
# chosen rank, and no other, is its own library holding only its entry point;
# the rank libraries, their sources, their plan files and the header share
# the plan's digest; an object library per rank of a decentralized plan links
# and runs; a program linking collplan::tcp (and so libcrypto) links and runs; a second build does no work, touching a source regenerates
# nothing, a spec change (SEED) regenerates the plan once and rebuilds the
# libraries, a RANKS change makes the new set of libraries; bad calls fail at
# configure time with a message naming the bad value.
#   libraries_test.sh PREFIX WORKDIR CXX
set -euo pipefail
prefix=$1 work=$2 cxx=$3
cp_exe="$prefix/bin/collplan"
src=$(cd "$(dirname "$0")/libraries" && pwd)
rm -rf "$work"
mkdir -p "$work"
cp -r "$src" "$work/src"
b="$work/build"
gen="$b/collplan/fw"
fail() { echo "FAIL: $*"; exit 1; }
mtime() { stat -c %Y.%y "$1"; }
compiles() { grep -c "collplan: compiling and checking plan $1 " <<<"$2" || true; }
# The digest of a generated file's second line ("// Plan digest D. ...").
source_digest() { sed -n '2s/^\/\/ Plan digest \([0-9a-f]*\)\..*/\1/p' "$1"; }
# The fw::rank_<r> entry points a library defines.
entry_points() { nm -C --defined-only "$1" | grep -o 'fw::rank_[0-9]*(' | sort -u | tr -d '(' | tr '\n' ' '; }

# Checks the fw libraries for the ranks $1 (space-separated) of K = 4 and
# that everything carries the digest $2.
check_fw() {
  local want=$1 digest=$2 r
  for r in 0 1 2 3; do
    if [[ " $want " == *" $r "* ]]; then
      [ -f "$b/libfw_rank$r.a" ] || fail "no library for chosen rank $r"
      [ "$(entry_points "$b/libfw_rank$r.a")" = "fw::rank_$r " ] ||
        fail "libfw_rank$r.a defines $(entry_points "$b/libfw_rank$r.a")instead of fw::rank_$r alone"
      [ "$(source_digest "$gen/fw_rank$r.cpp")" = "$digest" ] || fail "fw_rank$r.cpp is not from plan $digest"
      "$cp_exe" check "$gen/fw_rank$r.cplan" | grep -q "plan digest $digest" ||
        fail "fw_rank$r.cplan is not rank $r of plan $digest"
    else
      [ ! -e "$b/libfw_rank$r.a" ] || fail "a library for rank $r, which was not chosen"
    fi
  done
  [ "$(source_digest "$gen/fw.h")" = "$digest" ] || fail "fw.h is not from plan $digest"
  grep -q "kDigest\[\] = \"$digest\"" "$gen/fw.h" || fail "fw.h's kDigest is not $digest"
  "$cp_exe" check --json "$gen/fw.cplan" | grep -q "\"digest\": \"$digest\"" || fail "fw.cplan's digest is not $digest"
  [ "$("$b/digest" | sed -n 2p)" = "$want" ] || fail "fw.h describes ranks '$("$b/digest" | sed -n 2p)', not '$want'"
}

cmake -S "$work/src" -B "$b" -G Ninja -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_CXX_COMPILER="$cxx" >/dev/null
log=$(cmake --build "$b")
# One compilation per plan (fw: 3 rank libraries, rs: 6), one whole plan file each.
[ "$(compiles fw "$log")" = 1 ] || fail "plan fw compiled $(compiles fw "$log") times in the first build"
[ "$(compiles rs "$log")" = 1 ] || fail "plan rs compiled $(compiles rs "$log") times in the first build"
[ "$(grep -c "collplan: compiling" <<<"$log")" = 2 ] || fail "more compilations than plans: $log"
[ "$(cd "$gen" && ls fw*.cplan | tr '\n' ' ')" = "fw.cplan fw_rank0.cplan fw_rank2.cplan fw_rank3.cplan " ] ||
  fail "plan files in $gen: $(cd "$gen" && ls fw*.cplan | tr '\n' ' ')"
[ ! -e "$gen/fw_rank1.cpp" ] || fail "rank 1's source was emitted though not chosen"
[ -s "$gen/fw.txt" ] || fail "no text dump fw.txt"
d1=$("$b/digest" | head -1)
echo "seed 1: digest $d1; libraries for ranks $("$b/digest" | sed -n 2p)"
check_fw "0 2 3" "$d1"
# collplan::tcp (and the libcrypto it links) from the package.
"$b/tcp_key" | grep -qE '^job key [0-9a-f]{64}$' || fail "the collplan::tcp consumer did not run"
# rs: an object library per rank 0..5 (no archives), linked together.
for r in 0 1 2 3 4 5; do
  [ -f "$b/CMakeFiles/rs_rank$r.dir/collplan/rs/rs_rank$r.cpp.o" ] || fail "no object file for rs rank $r"
  [ ! -e "$b/librs_rank$r.a" ] || fail "rs_rank$r is an archive, not an object library"
done
shape=$("$b/shape") || fail "rs's generated code has the wrong shape: $shape"
grep -q "^decentralized-encode K=4 .*N=6" <<<"$shape" || fail "shape built another plan: $shape"

# Nothing changed: no work.
sleep 1
m1=$(mtime "$gen/fw.cplan")
out=$(cmake --build "$b")
grep -q "no work to do" <<<"$out" || fail "a rebuild without changes did work: $out"
touch "$work/src/digest.cpp"
out=$(cmake --build "$b")
[ "$(grep -c "collplan: compiling" <<<"$out" || true)" = 0 ] || fail "touching digest.cpp recompiled a plan: $out"
[ "$(mtime "$gen/fw.cplan")" = "$m1" ] || fail "touching digest.cpp regenerated the plan"

# A spec change: fw is compiled again, once, rs is not; the libraries follow.
ma=$(mtime "$b/libfw_rank2.a")
cmake -S "$work/src" -B "$b" -DPLAN_SEED=2 >/dev/null
out=$(cmake --build "$b")
[ "$(compiles fw "$out")" = 1 ] || fail "after the SEED change plan fw compiled $(compiles fw "$out") times"
[ "$(compiles rs "$out")" = 0 ] || fail "the SEED change of fw recompiled rs"
[ "$(mtime "$b/libfw_rank2.a")" != "$ma" ] || fail "the SEED change did not rebuild libfw_rank2.a"
d2=$("$b/digest" | head -1)
echo "seed 2: digest $d2"
[ "$d2" != "$d1" ] || fail "changing the spec did not change the digest"
check_fw "0 2 3" "$d2"
out=$(cmake --build "$b")
grep -q "no work to do" <<<"$out" || fail "a second build after the SEED change did work: $out"

# Another set of ranks: the same plan (digest), a new set of libraries.
cmake -S "$work/src" -B "$b" -DPLAN_RANKS="0-2" >/dev/null
rm -f "$b"/libfw_rank*.a
out=$(cmake --build "$b")
[ "$(compiles fw "$out")" = 1 ] || fail "after the RANKS change plan fw compiled $(compiles fw "$out") times"
check_fw "0 1 2" "$d2"
echo "RANKS 0-2: libraries for ranks $("$b/digest" | sed -n 2p), digest unchanged"

# Bad calls: configure fails, naming the bad value.
bad="$work/bad"
expect_error() {
  local call=$1 fragment=$2 err
  if err=$(cmake -S "$work/src" -B "$bad" -G Ninja -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_CXX_COMPILER="$cxx" \
             "-DBAD_CALL=$call" 2>&1 >/dev/null); then
    fail "collplan_add_plan_libraries($call) configured"
  fi
  # CMake wraps long messages: compare with the whitespace collapsed.
  err=$(tr -s ' \n' '  ' <<<"$err")
  grep -qF -- "$fragment" <<<"$err" || fail "collplan_add_plan_libraries($call): no '$fragment' in: $err"
}
expect_error "bad OP encode K 4 RANKS 4" "rank 4 (RANKS '4') is out of range: the plan's ranks are 0..3 (K = 4)"
expect_error "bad OP encode K 4 RANKS 0,2-5" "rank 5 (RANKS '2-5') is out of range"
expect_error "bad OP decentralized-encode N 6 K 4 CODE rs RANKS 0 6" "rank 6 (RANKS '6') is out of range: the plan's ranks are 0..5 (N = 6)"
expect_error "bad OP encode K 4 RANKS 1 3 1" "rank 1 is given twice (RANKS 1 3 1)"
expect_error "bad OP encode K 4 RANKS 0-2,2" "rank 2 is given twice"
expect_error "bad OP encode K 4 STATIC OBJECT" "STATIC and OBJECT are both given"
expect_error "bad OP encode K 4 RANK 2" "unknown arguments: RANK 2"
expect_error "bad K 4" "OP is required"
expect_error "bad OP encode" "K is required"
expect_error "1bad OP encode K 4" "the name '1bad' is not a C identifier"
expect_error "bad OP encode K 4 RANKS two" "RANKS 'two' is not a rank"
expect_error "bad OP encode K 4 RANKS 3-1" "RANKS range '3-1' runs backwards"
expect_error "bad OP encode K 4 RANKS ALL 2" "RANKS ALL stands alone"
expect_error "bad OP encode K 4 RANKS" "no value after RANKS"
expect_error "bad OP decentralized-encode K 4 CODE rs" "decentralized-encode needs N"
echo "PASS: each plan compiled once into one library per chosen rank, one digest; rebuilt exactly when the call changed; bad calls refused"
