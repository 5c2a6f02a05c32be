#!/usr/bin/env bash
# The solver comparison of docs/search.md ("Which solver"): dumps the CNFs
# `collplan search` asks for a few (K, p), then runs CaDiCaL (the library
# collplan links, here its command-line front end), Z3 and MiniSat on each,
# printing each one's answer and seconds. Every answer must agree: the UNSAT
# ones are then confirmed by two solvers other than the one collplan runs.
#   scripts/search_solvers.sh [BUILD_DIR] [TIMEOUT_SECONDS]
# Needs the Debian packages cadical, z3 and minisat (installed if missing).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD="${1:-build}"
LIMIT="${2:-300}"
CP="$BUILD/compiler/collplan"
for p in cadical z3 minisat; do
  command -v "$p" >/dev/null || { SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO=sudo;
    $SUDO apt-get update -qq; DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq cadical z3 minisat >/dev/null; break; }
done
dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT
# K, p: found at C2 = C1 (5/1, 6/1, 9/1, 10/2, 13/2, 15/2), refuted (7/1), a
# circulant refutation and a full question left open (10/1).
for kp in "5 1" "6 1" "7 1" "9 1" "10 1" "10 2" "13 2" "15 2"; do
  set -- $kp
  # One second per call: the CNFs are written before solving, and a call left
  # unknown makes the search write the next composition's as well.
  "$CP" search --op encode --K "$1" --p "$2" --time-limit 1 --dimacs "$dir" >/dev/null
done
answer() {  # solver exit status → sat / unsat / unknown
  case "$1" in 10) echo sat ;; 20) echo unsat ;; *) echo unknown ;; esac
}
printf '%-34s %8s %9s %8s %9s %8s %9s\n' instance cadical s z3 s minisat s
disagree=0
for f in "$dir"/*.cnf; do
  row=$(basename "$f" .cnf)
  answers=()
  for s in cadical z3 minisat; do
    start=$(date +%s.%N)
    set +e
    case $s in
      cadical) timeout "$LIMIT" cadical -q "$f" >/dev/null; rc=$? ;;
      z3) out=$(timeout "$LIMIT" z3 -dimacs "$f"); rc=124
          case "$out" in *UNSATISFIABLE*|unsat*) rc=20 ;; *SATISFIABLE*|sat*) rc=10 ;; esac ;;
      minisat) timeout "$LIMIT" minisat -verb=0 "$f" >/dev/null 2>&1; rc=$? ;;
    esac
    set -e
    end=$(date +%s.%N)
    a=$(answer "$rc")
    answers+=("$a")
    row+=$(printf ' %8s %9.2f' "$a" "$(awk "BEGIN{print $end - $start}")")
  done
  echo "$row"
  known=$(printf '%s\n' "${answers[@]}" | { grep -v unknown || true; } | sort -u | wc -l)
  [ "$known" -le 1 ] || disagree=1
done
[ "$disagree" -eq 0 ] && echo "every answer agrees" || { echo "solvers disagree"; exit 1; }
