#!/usr/bin/env python3
"""scripts/autoccl-ab and the docs/ab.md recipe that sums job reports.

usage: ab_tools.py recipe ROOT   the recipe, run as written: on autoccl-ab's
                                 file names (ab/run-K/report-<host>-<rank>.json)
                                 with the pattern the doc gives for them, on the
                                 torchrun names, and where nothing matches (a
                                 clear message, no traceback)
       ab_tools.py script AB     a command that cannot run is bad usage (exit 2,
                                 named, no traceback); --quiet output starts
                                 with its first figure, not a blank line
"""
import json
import os
import re
import subprocess
import sys
import tempfile

problems = []


def report(path, ranks, saved, nccl):
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    with open(path, "w") as f:
        json.dump({"totals": {"ranks": ranks, "net_saved_seconds": saved, "nccl_seconds": nccl,
                              "exploration_cost_seconds": 0.0}}, f)
    with open(path + ".txt", "w") as f:  # the text beside it must not be read
        f.write("autoccl job report\n")


def recipe(root):
    doc = open(os.path.join(root, "docs", "ab.md"), encoding="utf-8").read()
    at = doc.index("Sum `totals.net_saved_seconds`")
    m = re.compile(r"```sh\n(.*?)```", re.S).search(doc, at)
    block = m.group(1)
    alt = re.search(r"give that run's reports instead:\s*`('[^`]+')`", doc)
    if not alt:
        problems.append("docs/ab.md gives no pattern for autoccl-ab's file names")
    with tempfile.TemporaryDirectory() as tmp:
        report(os.path.join(tmp, "ab", "run-2", "report-vm-0.json"), 1, 0.10, 1.0)
        report(os.path.join(tmp, "ab", "run-2", "report-vm-1.json"), 1, 0.05, 1.0)
        report(os.path.join(tmp, "ab", "run-3", "report-vm-0.json"), 1, 9.0, 9.0)  # another run

        def run(text, cwd):
            return subprocess.run(["sh", "-c", text], cwd=cwd, capture_output=True, text=True,
                                  timeout=30)
        # as written, where only autoccl-ab's names are: a clear refusal
        r = run(block, tmp)
        if r.returncode == 0 or "Traceback" in r.stderr or "no job report matches" not in r.stderr:
            problems.append("recipe as written on autoccl-ab's names: exit %d, stderr %r" %
                            (r.returncode, r.stderr[-300:]))
        # with the pattern the doc gives for one autoccl-ab run
        if alt:
            quoted = re.findall(r"'[^']*\*[^']*'", block)
            text = block.replace(quoted[-1], alt.group(1)) if quoted else block
            r = run(text, tmp)
            want = "2 reports, 2 ranks: net saved 0.075 s of 1.000 s NCCL time per rank"
            if r.returncode != 0 or want not in r.stdout:
                problems.append("recipe with %s: exit %d, out %r, err %r" %
                                (alt.group(1), r.returncode, r.stdout, r.stderr[-300:]))
        # the torchrun example's names
        report(os.path.join(tmp, "autoccl-report-vm-0.json"), 1, 0.2, 2.0)
        report(os.path.join(tmp, "autoccl-report-vm-1.json"), 1, 0.4, 2.0)
        r = run(block, tmp)
        want = "2 reports, 2 ranks: net saved 0.300 s of 2.000 s NCCL time per rank"
        if r.returncode != 0 or want not in r.stdout:
            problems.append("recipe on the torchrun names: exit %d, out %r, err %r" %
                            (r.returncode, r.stdout, r.stderr[-300:]))


def script(ab):
    r = subprocess.run([sys.executable, ab, "--", "/nonexistent/cmd"], capture_output=True,
                       text=True, timeout=30)
    if r.returncode != 2 or "Traceback" in r.stderr or "/nonexistent/cmd" not in r.stderr:
        problems.append("autoccl-ab -- /nonexistent/cmd: exit %d, stderr %r" %
                        (r.returncode, r.stderr[-400:]))
    with tempfile.TemporaryDirectory() as tmp:
        r = subprocess.run([sys.executable, ab, "--quiet", "--pairs", "1", "--out",
                            os.path.join(tmp, "ab"), "--", "true"], capture_output=True,
                           text=True, timeout=60)
        lines = r.stdout.splitlines()
        if r.returncode != 0 or not lines or not lines[0].strip():
            problems.append("autoccl-ab --quiet: exit %d, first line %r" %
                            (r.returncode, lines[0] if lines else None))


if len(sys.argv) != 3 or sys.argv[1] not in ("recipe", "script"):
    sys.exit(__doc__)
(recipe if sys.argv[1] == "recipe" else script)(sys.argv[2])
for p in problems:
    print("FAIL:", p)
if not problems:
    print("PASS:", sys.argv[1])
sys.exit(1 if problems else 0)
