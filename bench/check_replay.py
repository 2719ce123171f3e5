#!/usr/bin/env python3
"""Record, then replay, without a GPU: autoccl-bench --fake --trace writes a
trace folder laid out as scripts/gpu-record.sh does, and autoccl-sim --bench
--landscape h200-traces replays it (AUTOCCL_SIM_TRACES), counting every
bench trace of every mode and sweep config as a landscape source.

usage: check_replay.py AUTOCCL_BENCH AUTOCCL_SIM OUTDIR"""
import json, os, shutil, subprocess, sys

bench, sim, out = sys.argv[1:4]
shutil.rmtree(out, ignore_errors=True)
n = 0
for coll in ("all_reduce", "all_gather", "reduce_scatter"):
    d = os.path.join(out, "iso-procs-" + coll)
    cmd = [bench, "--fake", "-g", "2", "-b", "64K", "-e", "64M", "-f", "4", "-w", "30", "-n", "20",
           "-C", coll, "--compare", "default", "--reps", "1", "--sweep", "--sweep-algos", "Ring,Tree",
           "--sweep-protos", "LL,Simple", "--sweep-channels", "0,16", "--sweep-warmup", "10",
           "--trace", d, "-q"]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    if p.returncode != 0:
        sys.exit("FAIL: %s exited %d\n%s" % (" ".join(cmd), p.returncode, p.stderr[-2000:]))
    n += len([f for f in os.listdir(d) if f.endswith(".jsonl.gz")])
env = dict(os.environ, AUTOCCL_SIM_TRACES=out)
p = subprocess.run([sim, "--bench", "--landscape", "h200-traces", "--json", "--h200-reps", "2"],
                   capture_output=True, text=True, timeout=120, env=env)
if p.returncode == 2 and "without zlib" in p.stderr:
    print("SKIP: built without zlib")
    sys.exit(77)
if p.returncode not in (0, 1):
    sys.exit("FAIL: replay exited %d: %s" % (p.returncode, p.stderr[-2000:]))
r = json.loads(p.stdout.strip().splitlines()[-1])
# fake traces carry no probe: the default's executed config is unknown, the
# sweep's are known from their labels; Tree fails for AllGather and
# ReduceScatter (status 1 everywhere) and still counts as a file read
assert r["traces"] == n, (r["traces"], n)
for k in ("final_over_baseline_min", "incl_over_baseline_min", "short_run_over_baseline_min",
          "final_over_oracle_median", "final_over_oracle_p5"):
    assert 0 < r[k] <= 2.0, (k, r[k])
# without the probe a fake default's config is the H200 sweep's guess, not
# always among the recorded ones: such workloads are left out, not NaN; so
# are the ones never recorded (under GEMM, above 64 MiB)
assert r["workloads"] == len(r["per_workload"]) >= 10, (r["workloads"], len(r["per_workload"]))
for w in r["per_workload"]:
    kind, _, size = w["workload"].split()
    assert kind == "iso" and int(size) <= 64 << 20, w["workload"]
print("ok: %d fake traces recorded and replayed; %s" %
      (n, ", ".join("%s %.3f" % (k, r[k]) for k in ("final_over_baseline_min", "incl_over_baseline_min"))))
