#!/usr/bin/env python3
"""C2 of allgatherv plans against the receive-volume bound, on random counts.

  scripts/allgatherv_ratios.py [--collplan build/compiler/collplan]
                               [--vectors 40] [--seed 7]

For counts uniform in 0..5, 0..50 and 0..1000 (K uniform in 2..33, p in
1..4), compiles every count vector twice with `collplan compile --op
allgatherv`: with --algorithm dissemination-allgather, and with --blocks
auto --beta 0 (the generator --algorithm auto picks, n minimising C2), and
prints the median and worst C2 / bound of each (docs/circulant.md, "Allgatherv").
"""
import argparse
import json
import random
import statistics
import subprocess


def ratio(collplan, K, p, counts, extra):
    out = subprocess.run([collplan, "compile", "--op", "allgatherv", "--K", str(K), "--p", str(p), "--counts",
                          ",".join(map(str, counts)), "--format", "json", "-q"] + extra,
                         capture_output=True, text=True, check=True)
    cost = json.loads(out.stdout)["cost"]
    return cost["C2"] / cost["lower_bound_C2"]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--collplan", default="build/compiler/collplan")
    ap.add_argument("--vectors", type=int, default=40, help="count vectors per row")
    ap.add_argument("--seed", type=int, default=7)
    a = ap.parse_args()
    rng = random.Random(a.seed)
    print("| counts | dissemination-allgather, median / worst | --blocks auto, median / worst |")
    print("|---|---|---|")
    for hi in (5, 50, 1000):
        dis, auto = [], []
        for _ in range(a.vectors):
            K, p = rng.randint(2, 33), rng.randint(1, 4)
            counts = [rng.randint(0, hi) for _ in range(K)]
            if sum(counts) == 0:
                counts[0] = 1
            dis.append(ratio(a.collplan, K, p, counts, ["--algorithm", "dissemination-allgather"]))
            auto.append(ratio(a.collplan, K, p, counts, ["--blocks", "auto", "--beta", "0"]))
        print(f"| 0..{hi} | {statistics.median(dis):.2f} / {max(dis):.2f} | "
              f"{statistics.median(auto):.2f} / {max(auto):.2f} |")


if __name__ == "__main__":
    main()
