#!/usr/bin/env python3
"""Merges search tables and renders them for docs/search.md.

  scripts/search_table.py merge OUT.inc IN.json|IN.inc ...
      one table from `collplan search --write-table` outputs; for a (K, p)
      in several inputs the later input wins when it proves more (a higher
      bound) or finds more (a lower C2). OUT.inc is the shipped form (the JSON
      inside a C++ raw string literal, compiler/gen/searched_table.inc).
  scripts/search_table.py markdown TABLE.inc
      the Results section's table and figures, as docs/search.md has them.
"""
import json
import sys

PREFIX = 'R"json('
SUFFIX = ')json"'


def load(path):
    text = open(path, encoding="utf-8").read()
    if path.endswith(".inc"):
        text = text[text.index(PREFIX) + len(PREFIX):text.rindex(SUFFIX)]
    return json.loads(text)


def better(new, old):
    return (new["proven_bound"], -new["searched_C2"]) > (old["proven_bound"], -old["searched_C2"])


def merge(out, inputs):
    entries, solver, limits = {}, None, []
    for path in inputs:
        doc = load(path)
        solver = doc["solver"]
        limits.append(doc["time_limit_s"])
        for e in doc["entries"]:
            key = (e["p"], e["K"])
            if key not in entries or better(e, entries[key]):
                entries[key] = e
    doc = {"solver": solver, "time_limit_s": max(limits), "entries": [entries[k] for k in sorted(entries)]}
    with open(out, "w", encoding="utf-8") as f:
        f.write("// The relay-and-combine search table: `collplan search --write-table`, merged by\n"
                "// scripts/search_table.py (docs/search.md).\n")
        # One line per (K, p): diffs of a re-run stay readable.
        head = json.dumps({"solver": doc["solver"], "time_limit_s": doc["time_limit_s"]}, ensure_ascii=False)
        lines = ",\n".join(json.dumps(e, separators=(",", ":"), ensure_ascii=False) for e in doc["entries"])
        f.write(PREFIX + head[:-1] + ', "entries": [\n' + lines + "\n]}" + SUFFIX + "\n")


def status(e):
    best, start = e["searched_C2"], max(e["C1"], e["lemma2"])
    if best == start:
        return "optimal (all universal plans)"
    if best == e["proven_bound"]:
        return "optimal (relay-and-combine)"
    return "open: {} ≤ C2 ≤ {}".format(e["proven_bound"], best)


def markdown(path):
    doc = load(path)
    rows = doc["entries"]
    print("| K | p | C1 | Lemma 2 | prepare-and-shoot | searched | proven (relay-and-combine) | status | solver calls | seconds |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for e in rows:
        print("| {} | {} | {} | {} | {} | {} | {} | {} | {} | {:.2f} |".format(
            e["K"], e["p"], e["C1"], e["lemma2"], e["prepare_shoot_C2"],
            ("**{}**" if e["searched_C2"] < e["prepare_shoot_C2"] else "{}").format(e["searched_C2"]),
            e["proven_bound"], status(e), len(e["calls"]), e["seconds"]))
    gap = [e for e in rows if e["prepare_shoot_C2"] > max(e["C1"], e["lemma2"])]
    improved = [e for e in rows if e["searched_C2"] < e["prepare_shoot_C2"]]
    settled = [e for e in rows if e["searched_C2"] == e["proven_bound"]]
    ps_opt = [e for e in gap if e["searched_C2"] == e["prepare_shoot_C2"] == e["proven_bound"]]
    univ = [e for e in improved if e["searched_C2"] == max(e["C1"], e["lemma2"])]
    calls = [c for e in rows for c in e["calls"]]
    print()
    print("{} cases (K = {}..{}, p = {}..{}); solver {}, at most {:g} s per call.".format(
        len(rows), min(e["K"] for e in rows), max(e["K"] for e in rows), min(e["p"] for e in rows),
        max(e["p"] for e in rows), doc["solver"], doc["time_limit_s"]))
    print()
    print("- prepare-and-shoot already meets max(C1, Lemma 2), optimal with no search: {}.".format(
        len(rows) - len(gap)))
    print("- searched (a gap to close): {}; settled (searched C2 = proven bound): {} of them.".format(
        len(gap), len([e for e in gap if e in settled])))
    print("- improved on prepare-and-shoot: {} ({} of them down to max(C1, Lemma 2), optimal among all "
          "universal plans).".format(len(improved), len(univ)))
    print("- prepare-and-shoot proven optimal among relay-and-combine plans: {}.".format(len(ps_opt)))
    print("- open (a time-out left a gap): {}.".format(len(gap) - len([e for e in gap if e in settled])))
    print("- solver calls: {} ({} sat, {} unsat, {} unknown); search time per case: median {:.2f} s, most "
          "{:.2f} s.".format(len(calls), sum(c["result"] == "sat" for c in calls),
                              sum(c["result"] == "unsat" for c in calls),
                              sum(c["result"] == "unknown" for c in calls),
                              sorted(e["seconds"] for e in gap)[len(gap) // 2] if gap else 0,
                              max((e["seconds"] for e in gap), default=0)))


if __name__ == "__main__":
    if len(sys.argv) >= 4 and sys.argv[1] == "merge":
        merge(sys.argv[2], sys.argv[3:])
    elif len(sys.argv) == 3 and sys.argv[1] == "markdown":
        markdown(sys.argv[2])
    else:
        sys.exit(__doc__)
