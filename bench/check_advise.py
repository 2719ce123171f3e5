#!/usr/bin/env python3
"""autoccl-bench --advise under --fake: every start-up variable value is
measured against NCCL's defaults, and the recommendations follow the fake
model (32 channels and 512 threads faster, no buffer size worth setting).

usage: check_advise.py BENCH"""
import json
import subprocess
import sys

p = subprocess.run([sys.argv[1], "--fake", "-g", "2", "-b", "64K", "-e", "64M", "-f", "4",
                    "-w", "20", "-n", "10", "--advise", "--reps", "2", "--json", "-q"],
                   capture_output=True, text=True, timeout=280)
if p.returncode != 0:
    sys.exit("FAIL: exit %d\n%s%s" % (p.returncode, p.stdout, p.stderr))
a = json.loads(p.stdout.strip().splitlines()[-1])["advise"]
vals = {(v["variable"], v["value"]): v for v in a["values"]}
want = {"NCCL_MIN_NCHANNELS/NCCL_MAX_NCHANNELS": ["8", "16", "24", "32"],
        "NCCL_NTHREADS": ["128", "256", "512"],
        "NCCL_BUFFSIZE": ["1048576", "2097152", "8388608", "16777216"]}
for var, vs in want.items():
    for v in vs:
        x = vals.get((var, v))
        if not x or x["sizes"] != len(a["sizes"]) or not x["gain"] > 0:
            sys.exit("FAIL: %s=%s not measured on every size: %s" % (var, v, x))
rec = {r["variable"]: r for r in a["recommend"]}
if rec.get("NCCL_MIN_NCHANNELS/NCCL_MAX_NCHANNELS", {}).get("value") != "32":
    sys.exit("FAIL: channels: %s" % rec)
if rec.get("NCCL_NTHREADS", {}).get("value") != "512" or not rec["NCCL_NTHREADS"]["gain"] >= 1.02:
    sys.exit("FAIL: threads: %s" % rec)
if "NCCL_BUFFSIZE" in rec:
    sys.exit("FAIL: no buffer size gains 2 %% in the model: %s" % rec)
if "# recommend: NCCL_MIN_NCHANNELS=32 NCCL_MAX_NCHANNELS=32" not in p.stdout:
    sys.exit("FAIL: text report:\n" + p.stdout)
# the commands that repeat the measurement and check each recommendation
run = "-g 2 -b 64K -e 64M -f 4 -C all_reduce -d float -w 20 -n 10 --reps 2 --procs"
if a.get("reproduce") != "autoccl-bench %s --advise" % run:
    sys.exit("FAIL: reproduce: %s" % a.get("reproduce"))
for r in a["recommend"]:
    want = ("--compare default,ceiling,autoccl --ceiling 32" if "NCHANNELS" in r["variable"]
            else "--compare default,autoccl --mode-env autoccl:%s=%s" % (r["variable"], r["value"]))
    if r.get("check") != "autoccl-bench %s %s" % (run, want):
        sys.exit("FAIL: check command of %s: %s" % (r["variable"], r.get("check")))
c = a.get("ceiling")
if not c or c["value"] != "32" or not c["best"] >= 1.02 or "--ceiling 32" not in c["check"]:
    sys.exit("FAIL: ceiling: %s" % c)
if "# reproduce: autoccl-bench %s --advise" % run not in p.stdout:
    sys.exit("FAIL: the text report lacks the command:\n" + p.stdout)
print("ok:", json.dumps(a["recommend"]))
