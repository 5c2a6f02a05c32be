#!/usr/bin/env python3
"""Checks a `collplan run --trace` file against what Chrome trace viewers
(Perfetto, chrome://tracing) need, and that it has the expected ranks.

    check_trace.py TRACE.json RANKS

A traceEvents array; every event with ph, pid, tid, name; complete events
(ph "X") with numeric ts >= 0 and dur >= 0, pid == tid (one track per rank);
exactly RANKS distinct tracks 0..RANKS-1, each with a run, post and wait
spans and a process_name metadata event. Exit status 0 when it holds.
"""
import json
import sys


def fail(why):
    print(f"FAILED: {why}")
    sys.exit(1)


def main():
    path, ranks = sys.argv[1], int(sys.argv[2])
    with open(path, encoding="utf-8") as f:
        j = json.load(f)
    if not isinstance(j, dict) or not isinstance(j.get("traceEvents"), list):
        fail("no traceEvents array")
    tracks, named, kinds = set(), set(), {}
    for e in j["traceEvents"]:
        for k in ("ph", "pid", "tid", "name"):
            if k not in e:
                fail(f"event without {k}: {e}")
        if e["ph"] == "M":
            if e["name"] == "process_name":
                named.add(e["pid"])
            continue
        if e["ph"] != "X":
            fail(f"unexpected phase {e['ph']}")
        for k in ("ts", "dur"):
            if not isinstance(e.get(k), (int, float)) or e[k] < 0:
                fail(f"{k} missing or negative: {e}")
        if e["pid"] != e["tid"]:
            fail(f"pid != tid: {e}")
        tracks.add(e["pid"])
        kinds.setdefault(e["pid"], set()).add(e["name"].split(" ")[0])
    if tracks != set(range(ranks)):
        fail(f"tracks {sorted(tracks)}, expected 0..{ranks - 1}")
    if named != tracks:
        fail(f"process_name metadata for {sorted(named)}, tracks {sorted(tracks)}")
    for r, k in kinds.items():
        for need in ("run", "step", "post_send", "post_recv", "wait", "combine"):
            if need not in k:
                fail(f"rank {r} has no {need} span")
    print(f"trace ok: {len(j['traceEvents'])} events, {len(tracks)} tracks")


main()
