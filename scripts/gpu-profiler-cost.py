#!/usr/bin/env python3
"""Cost and accuracy of the profiler modes on one GPU (docs/benchmarks-profiler.md).

Runs acl-gpucheck-profiler-cost once per (mode, loop, repetition), the modes
in a rotating order within each repetition, one process each. Writes every
run to $OUT/profiler-cost-raw.jsonl and one summary line per (mode, loop) to
$OUT/profiler-cost.jsonl:
  {"kind": "profiler_cost", "mode", "loop", "overhead_pct", "overlap_err",
   "exposed_err_pct", ...}
overhead_pct: median over repetitions of (wall / wall of the nccl run of the
same repetition - 1); overlap_err: default modes against the always-on CUPTI
runs (medians), cupti against the constructed overlap; exposed_err_pct:
estimated exposed time against the constructed one. Checks the targets and
exits 1 when one is missed.

usage: gpu-profiler-cost.py BINARY [--reps N] [--launch-iters N] [--compute-iters N]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

MODES = ["nccl", "default", "default_keep", "cupti"]
# Targets (issue: overlap on by default).
LAUNCH_MAX_PCT = 2.0
COMPUTE_MAX_PCT = 0.5
OVERLAP_MAX_ERR = 0.05
EXPOSED_MAX_PCT = 5.0


def run(binary, mode, loop, iters):
    try:
        p = subprocess.run([binary, mode, loop, str(iters)], capture_output=True, text=True,
                           timeout=120)
    except subprocess.TimeoutExpired:
        return {"mode": mode, "loop": loop, "error": "timeout"}
    for line in p.stdout.splitlines():
        if line.startswith("{"):
            d = json.loads(line)
            d["rc"] = p.returncode
            return d
    return {"mode": mode, "loop": loop, "error": "rc %d: %s" % (p.returncode, p.stderr[-400:])}


def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("binary")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--launch-iters", type=int, default=1900000)
    ap.add_argument("--compute-iters", type=int, default=8000)
    ap.add_argument("--shift-iters", type=int, default=12000)
    a = ap.parse_args()
    out = os.environ.get("OUT", ".")
    raw = open(os.path.join(out, "profiler-cost-raw.jsonl"), "w")
    runs = []
    for rep in range(a.reps):
        for loop, iters in (("launch", a.launch_iters), ("compute", a.compute_iters)):
            order = MODES[rep % len(MODES):] + MODES[:rep % len(MODES)]
            for mode in order:
                d = run(a.binary, mode, loop, iters)
                d["rep"] = rep
                runs.append(d)
                raw.write(json.dumps(d) + "\n")
                raw.flush()
                print(json.dumps(d), flush=True)
    # The regime change (compute stream idle, then busy) as the windows see it.
    for mode in ("default", "cupti"):
        d = run(a.binary, mode, "shift", a.shift_iters)
        d["rep"] = 0
        runs.append(d)
        raw.write(json.dumps(d) + "\n")
        print(json.dumps(d), flush=True)
    raw.close()

    def get(mode, loop, rep):
        for d in runs:
            if d["mode"] == mode and d["loop"] == loop and d["rep"] == rep and "wall_s" in d:
                return d
        return None

    fails = 0
    summary = open(os.path.join(out, "profiler-cost.jsonl"), "w")
    for loop in ("launch", "compute"):
        cupti_ov = med([get("cupti", loop, r)["overlap_mean"] for r in range(a.reps)
                        if get("cupti", loop, r) and get("cupti", loop, r)["samples_with_overlap"]])
        for mode in MODES:
            ratios, ov, exp = [], [], []
            for r in range(a.reps):
                d, base = get(mode, loop, r), get("nccl", loop, r)
                if not d or not base:
                    continue
                ratios.append(d["wall_s"] / base["wall_s"] - 1.0)
                if d["samples_with_overlap"]:
                    ov.append(d["overlap_mean"])
                if d["has_exposed"] and d["exposed_constructed_s"] > 0:
                    exp.append(abs(d["exposed_s"] / d["exposed_constructed_s"] - 1.0) * 100)
            ov_m = med(ov)
            constructed = 0.6 if loop == "compute" else 0.0
            if ov_m is None:
                ov_err = None
            elif mode == "cupti" or cupti_ov is None:
                ov_err = abs(ov_m - constructed)
            else:
                ov_err = abs(ov_m - cupti_ov)
            line = {"kind": "profiler_cost", "mode": mode, "loop": loop,
                    "overhead_pct": None if not ratios else round(med(ratios) * 100, 3),
                    "overlap_err": None if ov_err is None else round(ov_err, 4),
                    "exposed_err_pct": None if not exp else round(med(exp), 3),
                    "overlap_mean": None if ov_m is None else round(ov_m, 4),
                    "overlap_constructed": constructed,
                    "overhead_pct_each": [round(x * 100, 3) for x in ratios],
                    "reps": len(ratios)}
            summary.write(json.dumps(line) + "\n")
            print("SUMMARY " + json.dumps(line), flush=True)
            if mode == "default":
                lim = LAUNCH_MAX_PCT if loop == "launch" else COMPUTE_MAX_PCT
                checks = [("overhead_%s_le_%gpct" % (loop, lim),
                           line["overhead_pct"] is not None and line["overhead_pct"] <= lim,
                           line["overhead_pct"]),
                          ("overlap_%s_within_%g_of_cupti" % (loop, OVERLAP_MAX_ERR),
                           ov_err is not None and ov_err <= OVERLAP_MAX_ERR, ov_err)]
                if loop == "compute":
                    checks.append(("exposed_%s_within_%gpct" % (loop, EXPOSED_MAX_PCT),
                                   line["exposed_err_pct"] is not None
                                   and line["exposed_err_pct"] <= EXPOSED_MAX_PCT,
                                   line["exposed_err_pct"]))
                for name, ok, val in checks:
                    print("CHECK %s %s %s" % (name, "PASS" if ok else "FAIL", val))
                    fails += not ok
    for mode in ("default", "cupti"):
        d = get(mode, "shift", 0)
        if not d:
            continue
        line = {"kind": "profiler_shift", "mode": mode,
                "overlap_first_half": d["overlap_first_half"],
                "overlap_second_half": d["overlap_second_half"], "windows": d["windows"]}
        summary.write(json.dumps(line) + "\n")
        print("SUMMARY " + json.dumps(line), flush=True)
        ok = (d["overlap_first_half"] >= 0 and d["overlap_second_half"] >= 0 and
              abs(d["overlap_first_half"] - 0.0) <= OVERLAP_MAX_ERR and
              abs(d["overlap_second_half"] - 0.6) <= OVERLAP_MAX_ERR)
        print("CHECK shift_seen_%s %s %s -> %s" % (mode, "PASS" if ok else "FAIL",
                                                   d["overlap_first_half"],
                                                   d["overlap_second_half"]))
        fails += not ok
    summary.close()
    print("SUMMARY %s (%d failed)" % ("FAIL" if fails else "PASS", fails))
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
