#!/usr/bin/env bash
# The main job on a fresh machine: set up, compile a K=16, p=2 all-to-all
# encode plan over GF(2^8), check it, replay it in-process and compare every
# output byte with a direct computation of x·A.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh build
CP=build/compiler/collplan
mkdir -p out
echo "== collplan compile"
$CP compile --op encode --K 16 --p 2 --lambda 1 --field gf256 --matrix random --seed 7 \
    -o out/encode-K16-p2.cplan --json out/encode-K16-p2.json
echo "== collplan check"
$CP check out/encode-K16-p2.cplan
echo "== collplan run (in-process threads transport)"
$CP run out/encode-K16-p2.cplan --len 65536 --seed 1
