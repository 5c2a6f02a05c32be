#!/usr/bin/env bash
# Builds the libFuzzer harnesses (fuzz/, ASan + UBSan, clang) in build-fuzz/
# and runs them (docs/fuzzing.md).
#   scripts/fuzz.sh                 replay the seed corpora, then fuzz each
#                                   harness for FUZZ_SECONDS (default 30) s
#   scripts/fuzz.sh --replay        replay the seed corpora only (regression)
#   scripts/fuzz.sh --runs N        fuzz each harness for N executions, one
#                                   after another, keeping the grown corpus in
#                                   build-fuzz/grown/<harness> (the long run;
#                                   logs in build-fuzz/logs/<harness>-runs.log)
#   FUZZ_HARNESSES="fuzz_spec ..."  a subset of the harnesses
# Fails (exit 1) on any finding: libFuzzer then leaves the input as
# build-fuzz/findings/<harness>/crash-*, leak-*, timeout-* or oom-*.
# New coverage found while fuzzing stays in build-fuzz/grown/, never in the
# seed corpora of the repository (fuzz/corpus/): a seed is added by hand.
set -euo pipefail
cd "$(dirname "$0")/.."

MODE=short
RUNS=0
case "${1:-}" in
  "") ;;
  --replay) MODE=replay ;;
  --runs) MODE=runs; RUNS="${2:?--runs needs a count}" ;;
  *) echo "usage: scripts/fuzz.sh [--replay | --runs N]" >&2; exit 2 ;;
esac
SECONDS_EACH="${FUZZ_SECONDS:-30}"
HARNESSES=(${FUZZ_HARNESSES:-fuzz_binary fuzz_json_plan fuzz_spec fuzz_matrix fuzz_tcp_wire fuzz_plan_table})
BUILD="${FUZZ_BUILD_DIR:-build-fuzz}"

# Largest input per harness: a few times the largest seed, small enough to
# stay fast (bigger plans only repeat the same records).
max_len() {
  case "$1" in
    fuzz_binary) echo 2048 ;;
    fuzz_json_plan) echo 4096 ;;
    fuzz_spec) echo 512 ;;
    fuzz_matrix) echo 1024 ;;
    fuzz_tcp_wire) echo 512 ;;
    fuzz_plan_table) echo 4096 ;;
  esac
}

if ! command -v clang++ >/dev/null || [ ! -e "$(clang++ -print-resource-dir)/lib/linux/libclang_rt.fuzzer-x86_64.a" ]; then
  bash scripts/setup.sh build  # installs clang and its libFuzzer runtime
fi
LAUNCHER=()
command -v ccache >/dev/null && LAUNCHER=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
FLAGS=()
# CI: line tables only (the findings' stack traces keep file and line).
[ -n "${COLLPLAN_NO_DEBUG_INFO:-}" ] && FLAGS=(-DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG"
                                             -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG")
cmake -S . -B "$BUILD" -G Ninja -DCOLLPLAN_BUILD_FUZZERS=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ "${LAUNCHER[@]}" "${FLAGS[@]}" >/dev/null
cmake --build "$BUILD" -j "$(nproc)" --target "${HARNESSES[@]}"

export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:${ASAN_OPTIONS:-}"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:${UBSAN_OPTIONS:-}"
COMMON=(-timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=2048 -print_final_stats=1)

status=0
for h in "${HARNESSES[@]}"; do
  bin="$BUILD/fuzz/$h"
  seeds="fuzz/corpus/$h"
  dict=()
  [ -f "fuzz/dict/$h.dict" ] && dict=(-dict="fuzz/dict/$h.dict")
  mkdir -p "$BUILD/findings/$h" "$BUILD/logs"
  log="$BUILD/logs/$h-$MODE.log"
  echo "== $h: replaying $(ls "$seeds" | wc -l) seeds"
  if ! "$bin" "${COMMON[@]}" -runs=0 -artifact_prefix="$BUILD/findings/$h/" "$seeds" >"$log" 2>&1; then
    tail -n 40 "$log"; echo "FAIL $h: a seed input fails (log: $log)"; status=1; continue
  fi
  [ "$MODE" = replay ] && continue

  if [ "$MODE" = short ]; then
    work="$BUILD/work-short/$h"  # from the seeds alone each time, so its time stays bounded
    rm -rf "$work"
    limit=(-max_total_time="$SECONDS_EACH")
  else
    work="$BUILD/grown/$h"  # grows from run to run
    limit=(-runs="$RUNS")
  fi
  mkdir -p "$work"
  echo "== $h: fuzzing (${limit[*]}, -max_len=$(max_len "$h"))"
  if ! "$bin" "${COMMON[@]}" "${dict[@]}" "${limit[@]}" -max_len="$(max_len "$h")" \
       -artifact_prefix="$BUILD/findings/$h/" "$work" "$seeds" >"$log" 2>&1; then
    tail -n 60 "$log"; echo "FAIL $h: finding (log: $log, input in $BUILD/findings/$h/)"; status=1; continue
  fi
  grep -E '^#[0-9]+[[:space:]]+DONE|stat::number_of_executed_units|stat::average_exec_per_sec|stat::peak_rss_mb' "$log" || true
  echo "   corpus: $(ls "$work" | wc -l) inputs"
done
[ $status -eq 0 ] && echo "fuzz: no findings"
exit $status
