#!/usr/bin/env python3
"""User documentation speaks to users about the project: no notes about how
the work was organised (machine-lending syntax, device time, internal machine
names, issue numbers, sessions). Scans README.md, docs/*.md and sim/README.md;
--self-test checks that the patterns do catch such lines.

usage: user_facing.py ROOT | --self-test
"""
import pathlib
import re
import sys

BAD = [
    (re.compile(r"run\(kind|run\(command="), "tool-call syntax"),
    (re.compile(r"device[- ]time|device[- ]minutes"), "device time"),
    (re.compile(r"nvidia-h200"), "an internal machine name"),
    (re.compile(r"\(issue \d+[,)]|\bissue \d+\b"), "an issue number"),
    (re.compile(r"\bthis session\b|\bthe session's\b|not lent"), "a note about sessions"),
]


def scan(text):
    hits = []
    for n, line in enumerate(text.splitlines(), 1):
        for rx, what in BAD:
            if rx.search(line):
                hits.append((n, what, line.strip()[:120]))
    return hits


if sys.argv[1:] == ["--self-test"]:
    samples = ['run(kind: "x")', "spent device time", "on nvidia-h200-x2",
               "limits (issue " + "16, 2026)", "run in this session", "not lent at present"]
    missed = [s for s in samples if not scan(s)]
    clean = scan("The tuner re-tunes on drift; see docs/tuner.md (two H200 GPUs).")
    if missed or clean:
        print("FAIL: missed %s, false hits %s" % (missed, clean))
        sys.exit(1)
    print("PASS: %d samples caught, clean text passes" % len(samples))
    sys.exit(0)

root = pathlib.Path(sys.argv[1])
files = [root / "README.md", root / "sim" / "README.md"] + sorted((root / "docs").glob("*.md"))
bad = 0
for f in files:
    if not f.exists():
        continue
    for n, what, line in scan(f.read_text(errors="replace")):
        print("%s:%d: %s: %s" % (f.relative_to(root), n, what, line))
        bad += 1
if bad:
    print("FAIL: %d lines in the user documentation are notes about how the work was done" % bad)
    sys.exit(1)
print("PASS: %d files speak to users" % len(files))
