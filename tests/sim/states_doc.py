#!/usr/bin/env python3
"""The state diagram in docs/tuner.md is the search's transition table:
the Mermaid block between the states:begin/end markers must equal what
`autoccl-sim --dump-states` prints, and must name every transition
(a table with no transitions, or a doc without the block, fails).

usage: states_doc.py SIM DOC
"""
import re
import subprocess
import sys

SIM, DOC = sys.argv[1], sys.argv[2]
got = subprocess.run([SIM, "--dump-states"], capture_output=True, text=True, timeout=30)
if got.returncode != 0:
    sys.exit("FAIL: autoccl-sim --dump-states exit status %d: %s" % (got.returncode, got.stderr))
text = open(DOC, encoding="utf-8").read()
m = re.search(r"<!-- states:begin -->\n```mermaid\n(.*?)```\n<!-- states:end -->", text, re.S)
if not m:
    sys.exit("FAIL: %s has no states:begin/end block with a mermaid diagram" % DOC)
doc, code = m.group(1).splitlines(), got.stdout.splitlines()
edges = [l for l in code if "-->" in l and "[*]" not in l]
if len(edges) < 10:
    sys.exit("FAIL: --dump-states printed %d transitions" % len(edges))
if doc != code:
    missing = [l for l in code if l not in doc]
    extra = [l for l in doc if l not in code]
    print("FAIL: the diagram in %s differs from autoccl-sim --dump-states" % DOC)
    print("  missing in the doc:", missing)
    print("  not in the code:", extra)
    print("  (regenerate: autoccl-sim --dump-states)")
    sys.exit(1)
print("ok: %d transitions in the doc match the code" % len(edges))
