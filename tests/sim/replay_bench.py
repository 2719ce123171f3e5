#!/usr/bin/env python3
"""autoccl-sim --bench --landscape h200-traces --json (docs/trace.md):
the last stdout line is one JSON object with the replay keys; prints them.
With --targets, also asserts the issue's targets (0.99 / 0.97 / 0.97 /
0.98 / 0.95) and fails naming every one missed.

usage: replay_bench.py [--targets] AUTOCCL_SIM"""
import json, subprocess, sys

args = sys.argv[1:]
targets = args[:1] == ["--targets"]
if targets:
    args = args[1:]
exe = args[0]
p = subprocess.run([exe, "--bench", "--landscape", "h200-traces", "--json"],
                   capture_output=True, text=True, timeout=280)
if p.returncode == 2 and "without zlib" in p.stderr:
    print("SKIP: built without zlib, the shipped traces are gzip")
    sys.exit(77)
if p.returncode not in (0, 1):
    sys.exit("FAIL: replay bench exited %d: %s" % (p.returncode, p.stderr))
d = json.loads(p.stdout.strip().splitlines()[-1])
want = {"final_over_baseline_min": 0.99, "incl_over_baseline_min": 0.97,
        "short_run_over_baseline_min": 0.97, "final_over_oracle_median": 0.98,
        "final_over_oracle_p5": 0.95}
for k in list(want) + ["traces"]:
    assert k in d, "missing key " + k
assert isinstance(d["traces"], int) and d["traces"] > 0, d["traces"]
assert isinstance(d.get("traces_recorded"), int) and d["traces_recorded"] <= d["traces"], d
# the one-H200 landscape: recorded traces only, and only the workloads recorded
# there (isolated, 64 KiB..256 MiB: 3 x 7)
if not targets:
    g = subprocess.run([exe, "--bench", "--landscape", "h200-1gpu-traces", "--h200-reps", "2",
                        "--json"], capture_output=True, text=True, timeout=120)
    assert g.returncode in (0, 1), (g.returncode, g.stderr)
    e = json.loads(g.stdout.strip().splitlines()[-1])
    assert "1gpu" in e["landscape"] and e["traces_recorded"] >= 12, e
    assert e["traces_recorded"] == e["traces"] and e["workloads"] == 21, e
    assert all(w["workload"].startswith("iso ") for w in e["per_workload"]), e["per_workload"]
    print("landscape %s: %d recorded traces, %d workloads" % (e["landscape"],
                                                             e["traces_recorded"], e["workloads"]))
assert (d["targets_met"] is True) == (p.returncode == 0), d
print("landscape %s, %d trace files" % (d["landscape"], d["traces"]))
missed = []
for k, t in want.items():
    at = d.get(k + "_at", "")
    ok = d[k] >= t
    print("%-28s %.4f  target >= %.2f  %s%s" % (k, d[k], t, "ok" if ok else "MISSED",
                                             "  (" + at + ")" if at else ""))
    if not ok:
        missed.append(k)
# bad use: a clear message, exit 2
b = subprocess.run([exe, "--bench", "--landscape", "moon"], capture_output=True, text=True,
                   timeout=20)
assert b.returncode == 2 and "h200-traces" in b.stderr and b.stdout == "", (b.returncode, b.stderr)
if targets and missed:
    sys.exit("FAIL: replay targets missed: " + ", ".join(missed))
print("ok")
