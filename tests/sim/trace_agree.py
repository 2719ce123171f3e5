#!/usr/bin/env python3
"""scripts/trace-agree.py on a real plugin run: the 4 ranks' traces of a
simulator run agree (exit 0); with one decision of rank 1 changed, the
script names that workload and rank and exits 1; with no trace, exit 2.

usage: trace_agree.py AUTOCCL_SIM PLUGIN TRACE_AGREE"""
import json
import os
import subprocess
import sys
import tempfile

sim, plugin, tool = sys.argv[1:4]
with tempfile.TemporaryDirectory() as d:
    env = dict(os.environ, AUTOCCL_TRACE=os.path.join(d, "t-%r.jsonl"), AUTOCCL_HTTP_PORT="")
    p = subprocess.run([sim, "--plugin", plugin, "--ranks", "4", "--steps", "400", "--quiet",
                        "--json"], env=env, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, (p.returncode, p.stderr[-500:])
    files = sorted(os.path.join(d, f) for f in os.listdir(d))
    assert len(files) == 4, files
    a = subprocess.run([sys.executable, tool] + files, capture_output=True, text=True)
    assert a.returncode == 0 and "0 divergent" in a.stdout, (a.returncode, a.stdout[-400:])
    lines = open(files[1]).read().splitlines()
    for i, line in enumerate(lines):
        r = json.loads(line)
        if r.get("t") == "d" and r.get("call", 0) > 5:
            r["cand"] = ["TREE", "LL", 3]
            lines[i] = json.dumps(r)
            break
    else:
        sys.exit("no decision past call 5 to change")
    open(files[1], "w").write("\n".join(lines) + "\n")
    b = subprocess.run([sys.executable, tool] + files, capture_output=True, text=True)
    assert b.returncode == 1 and "DIVERGENT on ranks [1]" in b.stdout, (b.returncode, b.stdout)
    e = subprocess.run([sys.executable, tool, os.path.join(d, "none.jsonl")], capture_output=True,
                       text=True)
    assert e.returncode == 2, e.returncode
print("ok")
