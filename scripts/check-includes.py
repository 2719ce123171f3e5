#!/usr/bin/env python3
"""The include graph between folders: lists every `#include "..."` of the C
sources and fails (exit 1) when

  - folders include each other in a cycle (tuner/consensus -> tuner/search ->
    tuner/consensus), or
  - a folder under tuner/ includes a sibling above it (order: search <
    consensus < drive < plugin; search uses only core/), or
  - code outside a module folder (a tuner folder, observe/) includes anything
    of it but its one public header (tuner/X/X.h, observe/observe.h); tests/
    and fuzz/ may reach internals, or
  - a C file sits directly in tuner/ instead of one of its folders.

usage: check-includes.py [--list] [ROOT]   (ROOT: the source tree, default .)
       check-includes.py --self-test       (proves each rule fails on a bad tree)
"""
import os
import re
import sys
import tempfile

SOURCE_DIRS = ("core", "observe", "profiler", "tuner", "web", "tui", "sim", "bench", "fuzz", "tests")
TUNER_ORDER = ("tuner/search", "tuner/consensus", "tuner/drive", "tuner/plugin")
# What a tuner folder may use besides itself and the tuner folders below it.
TUNER_ALLOWED = {
    "tuner/search": ("core",),
    "tuner/consensus": ("core",),
    "tuner/drive": ("core",),
    "tuner/plugin": ("core", "observe", "profiler", "web"),
}
# Folders reached only through their one public header, FOLDER/<last part>.h.
ONE_HEADER = TUNER_ORDER + ("observe",)
# Where code outside a folder may look into it anyway (white-box tests).
INTERNALS_OK = ("tests", "fuzz")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def sources(root):
    for top in SOURCE_DIRS:
        for d, dirs, files in os.walk(os.path.join(root, top)):
            dirs[:] = sorted(x for x in dirs if not x.startswith((".", "build")))
            for f in sorted(files):
                if f.endswith((".c", ".h")):
                    yield os.path.relpath(os.path.join(d, f), root)


def includes(root):
    """(file, line number, included path relative to root) for every quoted
    include that names a file of the tree (generated headers are skipped)."""
    out = []
    for rel in sources(root):
        with open(os.path.join(root, rel), encoding="utf-8", errors="replace") as fh:
            for n, line in enumerate(fh, 1):
                m = INCLUDE.match(line)
                if not m:
                    continue
                inc = m.group(1)
                if os.path.isfile(os.path.join(root, inc)):
                    target = os.path.normpath(inc)
                elif os.path.isfile(os.path.join(root, os.path.dirname(rel), inc)):
                    target = os.path.normpath(os.path.join(os.path.dirname(rel), inc))
                else:
                    continue
                out.append((rel, n, target))
    return out


def folder(path):
    return os.path.dirname(path) or "."


def cycles(edges):
    """Strongly connected components of more than one folder (Tarjan)."""
    index, low, stack, on, comps = {}, {}, [], set(), []
    nodes = sorted(set(edges) | {b for bs in edges.values() for b in bs})

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                comps.append(sorted(comp))

    for v in nodes:
        if v not in index:
            visit(v)
    return comps


def shortest_loop(edges, comp):
    """A shortest path from comp[0] back to itself inside the component."""
    start, inside = comp[0], set(comp)
    prev, todo = {start: None}, [start]
    while todo:
        nxt = []
        for v in todo:
            for w in sorted(edges.get(v, ())):
                if w == start:
                    path = [v]
                    while prev[path[-1]] is not None:
                        path.append(prev[path[-1]])
                    return path[::-1] + [start]
                if w in inside and w not in prev:
                    prev[w] = v
                    nxt.append(w)
        todo = nxt
    return comp + comp[:1]


def check(root, listing=False, out=sys.stdout):
    incs = includes(root)
    errors = []
    edges, where = {}, {}
    for rel, n, target in incs:
        a, b = folder(rel), folder(target)
        if listing:
            print(f"{rel}:{n}: {target}", file=out)
        if a == b:
            continue
        edges.setdefault(a, set()).add(b)
        where.setdefault((a, b), f"{rel}:{n} includes {target}")
        if b in ONE_HEADER and target != f"{b}/{b.split('/')[-1]}.h" and \
                rel.split("/")[0] not in INTERNALS_OK:
            errors.append(f"{rel}:{n}: includes {target}; outside {b}/ only its public header "
                          f"{b}/{b.split('/')[-1]}.h")
        if a in TUNER_ORDER:
            if b in TUNER_ORDER:
                if TUNER_ORDER.index(b) > TUNER_ORDER.index(a):
                    errors.append(f"{rel}:{n}: {a} includes {target}, a folder above it "
                                  f"(order: {' < '.join(TUNER_ORDER)})")
            elif b.split("/")[0] not in TUNER_ALLOWED[a]:
                errors.append(f"{rel}:{n}: {a} includes {target}; it may use only "
                              f"{', '.join(TUNER_ALLOWED[a])} and the tuner folders below it")
    for rel in sources(root):
        if folder(rel) == "tuner":
            errors.append(f"{rel}: a file directly in tuner/; it belongs in one of "
                          f"{', '.join(TUNER_ORDER)}")
    for comp in cycles(edges):
        loop = shortest_loop(edges, comp)
        path = [f"  {where[(a, b)]}" for a, b in zip(loop, loop[1:])]
        errors.append("include cycle between folders " + " -> ".join(loop) + ":\n" +
                      "\n".join(path))
    for e in errors:
        print("check-includes: " + e, file=sys.stderr)
    nfolders = len(set(edges) | {b for bs in edges.values() for b in bs})
    print(f"check-includes: {len(incs)} includes, {nfolders} folders, "
          f"{sum(len(v) for v in edges.values())} folder edges, {len(errors)} problem(s)",
          file=out)
    return 1 if errors else 0


def self_test():
    """Each rule, on a small tree: clean passes, each break fails."""
    def tree(files):
        d = tempfile.mkdtemp(prefix="acl-incl-")
        for path, text in files.items():
            os.makedirs(os.path.join(d, os.path.dirname(path)), exist_ok=True)
            with open(os.path.join(d, path), "w") as fh:
                fh.write(text)
        return d

    base = {
        "core/types.h": "",
        "tuner/search/search.h": '#include "core/types.h"\n',
        "tuner/consensus/consensus.h": '#include "tuner/search/search.h"\n',
        "tuner/plugin/plugin.c": '#include "tuner/consensus/consensus.h"\n',
    }
    cases = {
        "clean": ({}, 0),
        "cycle": ({"core/types.h": '#include "sim/x.h"\n', "sim/x.h": '#include "core/types.h"\n'}, 1),
        "upward": ({"tuner/search/search.c": '#include "tuner/consensus/consensus.h"\n'}, 1),
        "search-impure": ({"tuner/search/search.c": '#include "profiler/p.h"\n',
                           "profiler/p.h": ""}, 1),
        "loose-file": ({"tuner/x.c": ""}, 1),
        "internal-header": ({"tuner/search/search_int.h": "",
                             "sim/x.c": '#include "tuner/search/search_int.h"\n'}, 1),
        "observe-internal": ({"observe/observe_int.h": "",
                              "web/x.c": '#include "observe/observe_int.h"\n'}, 1),
        "internal-header-test": ({"tuner/search/search_int.h": "",
                                  "tests/x.c": '#include "tuner/search/search_int.h"\n'}, 0),
    }
    bad = 0
    with open(os.devnull, "w") as null:
        for name, (extra, want) in cases.items():
            files = dict(base)
            files.update(extra)
            stderr, sys.stderr = sys.stderr, null
            try:
                got = check(tree(files), out=null)
            finally:
                sys.stderr = stderr
            ok = got == want
            bad += not ok
            print(f"self-test {name}: exit {got}, want {want}: {'ok' if ok else 'WRONG'}")
    return 1 if bad else 0


def main(argv):
    args = argv[1:]
    if "--self-test" in args:
        return self_test()
    listing = "--list" in args
    args = [a for a in args if a != "--list"]
    if len(args) > 1 or any(a.startswith("-") for a in args):
        print(__doc__.strip(), file=sys.stderr)
        return 2
    return check(args[0] if args else ".", listing)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
