#!/usr/bin/env python3
"""autoccl-sim --bench --landscape h200-traces --json (docs/trace.md):
the last stdout line is one JSON object with the replay keys and, under
"targets", the targets themselves (sim/bench_int.h is their one source);
prints each key against its target.

Exit status: 0 when the run parsed and checked (and, with --targets, every
target was met); 1 only with --targets, when the run parsed and checked and
a target was missed; 77 when autoccl-sim was built without zlib; 99 for
anything else (autoccl-sim crashed or exited oddly, its output did not
parse, a key is missing, this script failed). Meson's should_fail turns 1
into an expected failure but never 99, so a crash cannot pass for a missed
target.

usage: replay_bench.py [--targets] AUTOCCL_SIM"""
import json
import subprocess
import sys

MISSED = 1
ERROR = 99


def check(exe, targets):
    p = subprocess.run([exe, "--bench", "--landscape", "h200-traces", "--json"],
                       capture_output=True, text=True, timeout=280)
    if p.returncode == 2 and "without zlib" in p.stderr:
        print("SKIP: built without zlib, the shipped traces are gzip")
        return 77
    if p.returncode not in (0, 1):
        print("ERROR: replay bench exited %d: %s" % (p.returncode, p.stderr))
        return ERROR
    d = json.loads(p.stdout.strip().splitlines()[-1])
    want = d["targets"]
    assert isinstance(want, dict) and len(want) >= 5, want
    for k in list(want) + ["traces", "targets_met"]:
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
                                                                 e["traces_recorded"],
                                                                 e["workloads"]))
        # the plugin's CUPTI windows played: every call in one sampled (and
        # charged its events), so the same seeds' runs come out otherwise
        w = subprocess.run([exe, "--bench", "--landscape", "h200-1gpu-traces", "--h200-reps", "2",
                            "--cupti-window", "100/5000", "--json"],
                           capture_output=True, text=True, timeout=120)
        assert w.returncode in (0, 1), (w.returncode, w.stderr)
        f = json.loads(w.stdout.strip().splitlines()[-1])
        assert f["workloads"] == 21, f
        assert f["per_workload"] != e["per_workload"], "windows changed no run"
        x = subprocess.run([exe, "--bench", "--landscape", "h200-1gpu-traces",
                            "--cupti-window", "5/3"], capture_output=True, text=True, timeout=20)
        assert x.returncode == 2 and "--cupti-window" in x.stderr and x.stdout == "", (
            x.returncode, x.stderr)
        print("with CUPTI's windows: incl/baseline min %.4f (%.4f without)" % (
            f["incl_over_baseline_min"], e["incl_over_baseline_min"]))
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
    assert (not missed) == d["targets_met"], (missed, d["targets_met"])
    # bad use: a clear message, exit 2
    b = subprocess.run([exe, "--bench", "--landscape", "moon"], capture_output=True, text=True,
                       timeout=20)
    assert b.returncode == 2 and "h200-traces" in b.stderr and b.stdout == "", (b.returncode,
                                                                                b.stderr)
    if targets and missed:
        print("missed: " + ", ".join(missed))
        return MISSED
    print("ok")
    return 0


def main(argv):
    args = argv[1:]
    targets = args[:1] == ["--targets"]
    if targets:
        args = args[1:]
    if len(args) != 1:
        sys.stderr.write(__doc__ + "\n")
        return ERROR
    try:
        return check(args[0], targets)
    except Exception as e:  # any failure to run, parse or check is an error, not a miss
        print("ERROR: %s: %s" % (type(e).__name__, e))
        return ERROR


if __name__ == "__main__":
    sys.exit(main(sys.argv))
