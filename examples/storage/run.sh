#!/usr/bin/env bash
# An erasure-coded store, end to end (README.md):
#   (a) random data chunks on nodes 0..K-1;
#   (b) decentralized encode: nodes K..N-1 get the parity chunks;
#   (c) the chunks are copied aside, the lost nodes' directories deleted and
#       recreated empty (replacement nodes);
#   (d) repair: the replacement nodes rebuild their chunks, compared byte for
#       byte with the copies;
#   (e) decode: data chunk j is rebuilt on node j from the survivors alone,
#       compared with the original data.
# Every plan runs on all N nodes, one storage_node process each, over TCP on
# loopback or under mpiexec.
#
#   run.sh [--transport tcp|mpi] [--N 6] [--K 4] [--size 65536] [--lost 1,4]
#          [--code rs] [--field gf256] [--collplan PATH] [--node PATH]
#          [--mpiexec PATH] [--work DIR] [--timeout SECONDS] [--keep]
#
# --collplan defaults to $COLLPLAN, else `collplan` on PATH; --node to
# $STORAGE_NODE, else `storage_node` on PATH; --mpiexec to $MPIEXEC, else
# mpirun ($MPIEXEC_FLAGS: extra launcher flags). --work: where the nodes'
# directories go (default: a new temporary directory, removed after a run
# that passes unless --keep).
#
# Exit status: 0 every byte matched; 1 a step failed; 2 bad usage; 77 the
# collplan binary has no repair or decode operation yet (encode still ran).
set -u -o pipefail

TRANSPORT=tcp N=6 K=4 SIZE=65536 LOST="" CODE=rs FIELD=gf256
CP=${COLLPLAN:-collplan} NODE=${STORAGE_NODE:-storage_node} MPIEXEC=${MPIEXEC:-mpirun}
WORK="" KEEP=0 TIMEOUT=60

die() { echo "run.sh: $*" >&2; exit 2; }
while [ $# -gt 0 ]; do
  opt=$1
  case $opt in
    --keep) KEEP=1; shift; continue ;;
    -h|--help) sed -n '2,/^set -u/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
  esac
  [ $# -ge 2 ] || die "$opt needs a value"
  case $opt in
    --transport) TRANSPORT=$2 ;;
    --N) N=$2 ;;
    --K) K=$2 ;;
    --size) SIZE=$2 ;;
    --lost) LOST=$2 ;;
    --code) CODE=$2 ;;
    --field) FIELD=$2 ;;
    --collplan) CP=$2 ;;
    --node) NODE=$2 ;;
    --mpiexec) MPIEXEC=$2 ;;
    --work) WORK=$2 ;;
    --timeout) TIMEOUT=$2 ;;
    *) die "unknown option '$opt' (--help lists them)" ;;
  esac
  shift 2
done

is_uint() { [[ $1 =~ ^[0-9]+$ ]] && [ ${#1} -le 9 ]; }
for v in N K SIZE TIMEOUT; do is_uint "${!v}" || die "--$v '${!v}' is not a whole number"; done
[ "$TRANSPORT" = tcp ] || [ "$TRANSPORT" = mpi ] || die "--transport '$TRANSPORT' is not tcp or mpi"
if [ "$K" -lt 1 ] || [ "$N" -le "$K" ]; then die "need 1 <= K < N (got N = $N, K = $K)"; fi
[ "$SIZE" -ge 1 ] || die "--size must be at least 1 byte"
[ "$TIMEOUT" -ge 1 ] || die "--timeout must be at least 1 second"
if [ -z "$LOST" ]; then
  LOST=1
  [ $((N - K)) -ge 2 ] && LOST="1,$K"
fi
IFS=, read -r -a LOST_RANKS <<<"$LOST"
[ ${#LOST_RANKS[@]} -ge 1 ] || die "--lost is empty"
declare -A IS_LOST=()
for r in "${LOST_RANKS[@]}"; do
  if ! is_uint "$r" || [ "$r" -ge "$N" ]; then die "--lost: '$r' is not a rank in 0..$((N - 1))"; fi
  [ -z "${IS_LOST[$r]:-}" ] || die "--lost: rank $r is listed twice"
  IS_LOST[$r]=1
done
[ ${#LOST_RANKS[@]} -le $((N - K)) ] ||
  die "--lost '$LOST': the [$N, $K] code survives at most $((N - K)) lost nodes, not ${#LOST_RANKS[@]}"
command -v "$CP" >/dev/null || die "collplan binary '$CP' not found (--collplan or \$COLLPLAN)"
command -v "$NODE" >/dev/null || die "storage_node '$NODE' not found (--node or \$STORAGE_NODE)"
command -v timeout >/dev/null || die "'timeout' (coreutils) is needed"
if [ "$TRANSPORT" = mpi ]; then
  command -v "$MPIEXEC" >/dev/null || die "MPI launcher '$MPIEXEC' not found (--mpiexec or \$MPIEXEC)"
  # Open MPI: more nodes than cores is fine here (it then yields instead of
  # spinning); as root it wants an explicit confirmation.
  export OMPI_MCA_rmaps_base_oversubscribe=${OMPI_MCA_rmaps_base_oversubscribe:-1}
  if [ "$(id -u)" = 0 ]; then
    export OMPI_ALLOW_RUN_AS_ROOT=${OMPI_ALLOW_RUN_AS_ROOT:-1}
    export OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=${OMPI_ALLOW_RUN_AS_ROOT_CONFIRM:-1}
  fi
fi

MADE_WORK=0
if [ -z "$WORK" ]; then
  WORK=$(mktemp -d "${TMPDIR:-/tmp}/storage.XXXXXX") || die "cannot create a temporary directory"
  MADE_WORK=1
fi
DIR=$WORK/nodes   # one directory per node: $DIR/node<r>/
ORIG=$WORK/orig   # the copies kept outside the nodes, for the comparisons
PLANS=$WORK/plans
LOGS=$WORK/logs
rm -rf "$DIR" "$ORIG" "$PLANS" "$LOGS"
mkdir -p "$DIR" "$ORIG" "$PLANS" "$LOGS" || die "cannot create directories under '$WORK'"

PIDS=()
finish() {
  local rc=$?
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
  if [ $rc -eq 0 ] || [ $rc -eq 77 ]; then
    if [ $KEEP = 1 ]; then
      echo "kept: $WORK"
    elif [ $MADE_WORK = 1 ]; then
      rm -rf "$WORK"
    fi
  else
    echo "the nodes' directories, plans and logs are in $WORK" >&2
  fi
}
trap finish EXIT

fail() { echo "FAIL: $*" >&2; exit 1; }
skip() { echo "SKIP: $*"; exit 77; }
step() { echo; echo "== $*"; }

# compile NAME ARGS...: $PLANS/NAME.cplan. A collplan without the operation
# makes the run a skip, not a failure.
compile() {
  local name=$1; shift
  if ! "$CP" compile -q "$@" -o "$PLANS/$name.cplan" >"$LOGS/compile-$name.log" 2>&1; then
    cat "$LOGS/compile-$name.log" >&2
    if grep -q -e "unknown operation" -e "unknown option '--lost'" "$LOGS/compile-$name.log"; then
      skip "this collplan ($CP) cannot compile '$*': it has no such operation yet; the steps before passed"
    fi
    fail "collplan compile $* (log: $LOGS/compile-$name.log)"
  fi
  echo "compiled $name: collplan compile $*"
}

# TCP ports for the N nodes on loopback: random ones below the kernel's
# ephemeral range, none that something already listens on. A port taken
# between here and the run makes that run fail with "cannot listen on", and
# run_tcp retries with others.
pick_ports() {
  local lo=32768 used="" p i
  [ -r /proc/sys/net/ipv4/ip_local_port_range ] && read -r lo _ </proc/sys/net/ipv4/ip_local_port_range
  [ "$lo" -gt 12000 ] || lo=32768
  command -v ss >/dev/null && used=$(ss -Hltn 2>/dev/null | awk '{n = split($4, a, ":"); print a[n]}')
  PORTS=()
  while [ ${#PORTS[@]} -lt "$N" ]; do
    p=$((10000 + (RANDOM * 32768 + RANDOM) % (lo - 10000)))
    grep -qx "$p" <<<"$used" && continue
    for i in "${PORTS[@]}"; do [ "$i" = "$p" ] && continue 2; done
    PORTS+=("$p")
  done
  { echo "# rank r listens on line r"; for p in "${PORTS[@]}"; do echo "127.0.0.1:$p"; done; } >"$WORK/peers.txt"
}

# run_tcp NAME ARGS...: N storage_node processes in the background, waited
# for; every one must exit 0.
run_tcp() {
  local name=$1 r bad; shift
  for _ in 1 2 3; do
    pick_ports
    PIDS=()
    for ((r = 0; r < N; ++r)); do
      timeout -k 5 "$TIMEOUT" "$NODE" "$@" --transport tcp --rank "$r" --peers "$WORK/peers.txt" \
        >"$LOGS/$name.$r.log" 2>&1 &
      PIDS+=($!)
    done
    bad=""
    for ((r = 0; r < N; ++r)); do
      wait "${PIDS[$r]}" || bad="$bad $r:$?"
    done
    PIDS=()
    cat "$LOGS/$name".*.log
    [ -z "$bad" ] && return 0
    grep -q "cannot listen on" "$LOGS/$name".*.log || break
    echo "a port was taken: running $name again on other ports"
  done
  fail "$name over TCP: node(s) exited non-zero (rank:status$bad; 124 = killed after ${TIMEOUT} s)"
}

run_mpi() {
  local name=$1 rc=0; shift
  # shellcheck disable=SC2086 # MPIEXEC_FLAGS is a list of flags
  timeout -k 5 "$TIMEOUT" "$MPIEXEC" ${MPIEXEC_FLAGS:-} -np "$N" "$NODE" "$@" --transport mpi \
    >"$LOGS/$name.log" 2>&1 || rc=$?
  cat "$LOGS/$name.log"
  [ $rc -eq 0 ] || fail "$name under $MPIEXEC -np $N: exit status $rc (124 = killed after ${TIMEOUT} s)"
}

# run NAME IN OUT: plan $PLANS/NAME.cplan on every node, inputs from
# node<r>/IN, outputs to node<r>/OUT.
run() {
  local name=$1 in=$2 out=$3
  echo "running $name on $N nodes over $TRANSPORT"
  "run_$TRANSPORT" "$name" --plan "$PLANS/$name.cplan" --dir "$DIR" --size "$SIZE" --in "$in" --out "$out"
}

# same A B WHAT: byte-for-byte equal, or fail naming the first difference.
same() {
  local diff
  diff=$(cmp -- "$1" "$2" 2>&1) || fail "$3: $diff"
}

wipe_lost() {
  local r
  for r in "${LOST_RANKS[@]}"; do
    rm -rf "${DIR:?}/node$r"
    mkdir "$DIR/node$r" || fail "cannot recreate $DIR/node$r"
  done
}

echo "erasure-coded store: [N, K] = [$N, $K] $CODE code over $FIELD, chunks of $SIZE bytes," \
  "lost nodes $LOST, transport $TRANSPORT"
CODE_ARGS=(--N "$N" --K "$K" --code "$CODE" --field "$FIELD")

step "(a) data: $K random chunks of $SIZE bytes on nodes 0..$((K - 1))"
for ((r = 0; r < K; ++r)); do
  mkdir -p "$DIR/node$r"
  head -c "$SIZE" /dev/urandom >"$DIR/node$r/chunk" || fail "cannot write $DIR/node$r/chunk"
done

step "(b) encode: parity chunks on nodes $K..$((N - 1))"
compile enc --op decentralized-encode "${CODE_ARGS[@]}"
run enc chunk chunk
for ((r = 0; r < N; ++r)); do
  [ -f "$DIR/node$r/chunk" ] || fail "after encoding, node $r has no chunk"
  [ "$(wc -c <"$DIR/node$r/chunk")" -eq "$SIZE" ] || fail "after encoding, node $r's chunk is not $SIZE bytes"
done
echo "every node holds a chunk of $SIZE bytes"

step "(c) copies of the $N chunks kept aside; nodes $LOST lost and replaced by empty ones"
for ((r = 0; r < N; ++r)); do cp "$DIR/node$r/chunk" "$ORIG/node$r.chunk" || fail "cannot copy node $r's chunk"; done
wipe_lost

step "(d) repair: the replacement nodes rebuild their chunks"
compile rep --op repair "${CODE_ARGS[@]}" --lost "$LOST"
run rep chunk chunk
for ((r = 0; r < N; ++r)); do same "$ORIG/node$r.chunk" "$DIR/node$r/chunk" "node $r's chunk after repair"; done
echo "repair: every chunk, rebuilt ones included, equals the original byte for byte"

step "(e) decode: data chunk j on node j, from the survivors alone"
compile dec --op decode "${CODE_ARGS[@]}" --lost "$LOST"
wipe_lost   # nothing rebuilt in (d) is left for the decode to use
run dec chunk data
for ((j = 0; j < K; ++j)); do same "$ORIG/node$j.chunk" "$DIR/node$j/data" "node $j's decoded data"; done
echo "decode: the $K data chunks equal the original data byte for byte"

echo
echo "PASS: encode, repair of nodes $LOST and decode over $TRANSPORT"
