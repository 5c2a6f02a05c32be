#!/usr/bin/env bash
# The TCP transport under a limited bandwidth: K network namespaces, one per
# rank, each joined by a veth pair to a bridge in a "switch" namespace, with a
# tbf (token bucket) rate limit on both ends of every veth — each rank's
# link is RATE up and RATE down, like a NIC on a non-blocking switch. Runs
# `collplan run --transport tcp` on every rank and prints the slowest rank's
# median time beside the modeled time C1·α + C2·ℓ·8/RATE (α = half the
# loopback round trip is negligible here; it is left at 0).
#
#   scripts/netns_tcp.sh [COLLPLAN] [K] [RATE_MBIT] [LEN_BYTES] [REPS]
#   defaults: build/compiler/collplan 8 100 1048576 5
#
# Needs root (ip netns, tc from iproute2). Where namespaces cannot be created
# (no CAP_SYS_ADMIN, a container without them) it prints "SKIP: ..." and
# exits 0. Everything it creates is removed on exit.
set -uo pipefail
cd "$(dirname "$0")/.."

CP="${1:-build/compiler/collplan}"
K="${2:-8}"
RATE="${3:-100}"
LEN="${4:-1048576}"
REPS="${5:-5}"
TAG="cpn$$"
SW="${TAG}sw"
WORK="$(mktemp -d)"

skip() { echo "SKIP: $*"; rm -rf "$WORK"; exit 0; }
[ -x "$CP" ] || { echo "netns_tcp: $CP is not an executable (build it first)" >&2; exit 2; }
command -v ip >/dev/null && command -v tc >/dev/null || skip "ip or tc not installed (Debian: iproute2)"
ip netns add "$SW" 2>/dev/null || skip "ip netns is not allowed here (needs root / CAP_SYS_ADMIN)"

cleanup() {
  for ((r = 0; r < K; r++)); do ip netns del "${TAG}r$r" 2>/dev/null; done
  ip netns del "$SW" 2>/dev/null
  rm -rf "$WORK"
}
trap cleanup EXIT

ip -n "$SW" link add br0 type bridge || skip "cannot create a bridge"
ip -n "$SW" link set br0 up
# tbf: burst of 10 ms at the rate (at least 32 KiB), queue up to 100 ms.
BURST=$(( RATE * 1000000 / 8 / 100 )); [ "$BURST" -lt 32768 ] && BURST=32768
shape() { tc -n "$1" qdisc add dev "$2" root tbf rate "${RATE}mbit" burst "$BURST" latency 100ms; }
PEERS=""
for ((r = 0; r < K; r++)); do
  NS="${TAG}r$r"
  ip netns add "$NS"
  ip link add "v$r$TAG" type veth peer name "b$r$TAG"
  ip link set "v$r$TAG" netns "$NS"
  ip link set "b$r$TAG" netns "$SW"
  ip -n "$NS" link set "v$r$TAG" name eth0
  ip -n "$NS" addr add "10.199.0.$((r + 1))/24" dev eth0
  ip -n "$NS" link set eth0 up
  ip -n "$NS" link set lo up
  ip -n "$SW" link set "b$r$TAG" master br0
  ip -n "$SW" link set "b$r$TAG" up
  shape "$NS" eth0 || skip "tc tbf is not available"
  shape "$SW" "b$r$TAG"
  PEERS="$PEERS${PEERS:+,}10.199.0.$((r + 1)):7000"
done

"$CP" compile --K "$K" --field gf256 --matrix random -o "$WORK/enc.cplan" > "$WORK/compile.txt" 2>&1 || { cat "$WORK/compile.txt" >&2; exit 1; }
C1=$(sed -n 's/^C1 = \([0-9]*\) steps.*/\1/p' "$WORK/compile.txt")
C2=$(sed -n 's/^C2 = \([0-9]*\) elements.*/\1/p' "$WORK/compile.txt")

pids=()
for ((r = 0; r < K; r++)); do
  ip netns exec "${TAG}r$r" "$CP" run "$WORK/enc.cplan" --transport tcp --peers "$PEERS" --rank "$r" \
    --len "$LEN" --reps "$REPS" --timeout 60000 > "$WORK/out$r" 2>&1 &
  pids+=($!)
done
fail=0
for p in "${pids[@]}"; do wait "$p" || fail=1; done
if [ "$fail" -ne 0 ]; then
  echo "netns_tcp: a rank failed:" >&2
  cat "$WORK"/out* >&2
  exit 1
fi
grep -L "equals the direct computation" "$WORK"/out* | grep -q . && { echo "netns_tcp: wrong output" >&2; exit 1; }
SLOWEST=$(sed -n 's/^time (this rank): median \([0-9.e-]*\) s.*/\1/p' "$WORK"/out* | sort -g | tail -1)
MODEL=$(awk -v c2="$C2" -v len="$LEN" -v rate="$RATE" 'BEGIN { printf "%.6f", c2 * len * 8 / (rate * 1e6) }')
echo "netns tcp: K=$K, ${RATE} Mbit/s per link direction (tbf on both veth ends), len=$LEN bytes, plan C1=$C1 C2=$C2"
echo "  measured (slowest rank, median of $REPS): $SLOWEST s"
echo "  modeled C2*len*8/rate: $MODEL s   ratio $(awk -v a="$SLOWEST" -v b="$MODEL" 'BEGIN { printf "%.3f", a / b }')"
echo "  every rank's output equals the direct computation"
