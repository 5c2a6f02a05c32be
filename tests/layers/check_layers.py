#!/usr/bin/env python3
"""The layer rule, checked on the sources: no #include of a header of a layer
that is not below the including file's layer (cmake/layers.cmake writes the
table of layers, their folders and their direct dependencies to
<build>/layers.json), and docs/architecture.md's layer table says the same.

    check_layers.py LAYERS_JSON SOURCE_DIR [--extra-include FILE:HEADER]...

--extra-include adds an include the tree does not have (the test that the
check fails on an upward include). Exit 0 when clean, 1 with one line per
violation otherwise.
"""
import json
import os
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
# Where a quoted include is looked up, after the including file's folder:
# the include path the build gives every layer.
SEARCH_DIRS = ["compiler", ".", "runtime/capi", "runtime/embedded"]


def main(argv):
    if len(argv) < 3:
        print(__doc__)
        return 2
    table = json.load(open(argv[1]))
    root = argv[2]
    extra = []
    i = 3
    while i < len(argv):
        if argv[i] == "--extra-include" and i + 1 < len(argv):
            f, h = argv[i + 1].split(":", 1)
            extra.append((f, h))
            i += 2
        else:
            print(f"check_layers: unknown argument {argv[i]}")
            return 2

    prefixes = sorted(((p, name) for name, l in table.items() for p in l["paths"]), key=lambda x: -len(x[0]))

    def owner(path):
        for p, name in prefixes:
            if path.startswith(p):
                return name
        return None

    below = {}

    def closure(name):
        if name not in below:
            below[name] = set()
            for d in table.get(name, {}).get("deps", []):
                below[name] |= {d} | closure(d)
        return below[name]

    def resolve(src, header):
        for d in [os.path.dirname(src)] + SEARCH_DIRS:
            cand = os.path.normpath(os.path.join(d, header))
            if os.path.isfile(os.path.join(root, cand)):
                return cand
        return None

    includes = []
    for top in ("compiler", "runtime"):
        for dirpath, _, files in os.walk(os.path.join(root, top)):
            for fn in files:
                if not fn.endswith((".h", ".cpp", ".inc")):
                    continue
                rel = os.path.relpath(os.path.join(dirpath, fn), root)
                with open(os.path.join(root, rel), encoding="utf-8") as fh:
                    for h in INCLUDE.findall(fh.read()):
                        includes.append((rel, h))
    includes += extra

    bad = []
    checked = 0
    for src, header in includes:
        a = owner(src)
        target = resolve(src, header)
        if a is None or target is None:
            continue
        b = owner(target)
        if b is None or b == a:
            continue
        checked += 1
        if b not in closure(a):
            bad.append(f"{src}: includes \"{header}\" of layer '{b}', which is not below layer '{a}' "
                       f"(below '{a}': {', '.join(sorted(closure(a))) or 'nothing'})")

    # docs/architecture.md: the table between the layer-table markers.
    doc = os.path.join(root, "docs", "architecture.md")
    text = open(doc, encoding="utf-8").read()
    m = re.search(r"<!-- layer-table -->(.*?)<!-- /layer-table -->", text, re.S)
    if not m:
        bad.append("docs/architecture.md: no <!-- layer-table --> ... <!-- /layer-table --> section")
    else:
        documented = {}
        for line in m.group(1).splitlines():
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if len(cells) < 3 or not cells[0].startswith("`"):
                continue
            name = cells[0].strip("`")
            deps = set(re.findall(r"`([a-z_]+)`", cells[2]))
            documented[name] = deps
        for name, l in table.items():
            if name not in documented:
                bad.append(f"docs/architecture.md: layer '{name}' is missing from the layer table")
            elif documented[name] != set(l["deps"]):
                bad.append(f"docs/architecture.md: layer '{name}' depends on {sorted(documented[name])} in the doc, "
                           f"on {sorted(l['deps'])} in the build")
        for name in documented:
            if name not in table and name not in ("mpi", "sim"):
                bad.append(f"docs/architecture.md: layer '{name}' is not a layer of the build")

    for line in bad:
        print(line)
    print(f"check_layers: {checked} includes across layers checked, {len(bad)} problems")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
