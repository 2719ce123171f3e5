#!/usr/bin/env python3
"""Fidelity of the replay (docs/trace.md, docs/benchmarks.md): the tuner
benchmark on replayed traces predicts autoccl/default per workload after
tuning (final/baseline) and over 350 calls (incl./baseline); the GPU matrix
measured both (autoccl-bench --compare default,autoccl: warm-up 300 calls
+ 50 timed, after --warmup-time seconds of untimed calls in the long runs).
The replay's incl. is over its first 350 calls for a short matrix, and over
the last 350 of its long run (as long as the GPU's, in NCCL's time) for a
long one. Prints a markdown table and flags |diff| > 5 %.

  scripts/replay-fidelity.py [--landscape L] AUTOCCL_SIM MATRIX.jsonl [MATRIX.jsonl ...]

--landscape (default h200-traces, the 2x H200 one): the recorded traces to
replay, e.g. h200-1gpu-traces (one H200, one process per rank) or
h200-1gpu-traces:single (one process), against that testbed's matrix."""
import json, subprocess, sys

argv = sys.argv[1:]
land = "h200-traces"
if argv[:1] == ["--landscape"] and len(argv) > 1:
    land, argv = argv[1], argv[2:]
if len(argv) < 2:
    sys.exit(__doc__)
sim, files = argv[0], argv[1:]
p = subprocess.run([sim, "--bench", "--landscape", land, "--json"],
                   capture_output=True, text=True, timeout=300)
d = json.loads(p.stdout.strip().splitlines()[-1])
pred = {w["workload"]: w for w in d["per_workload"]}
names = {"all_reduce": "AllReduce", "all_gather": "AllGather", "reduce_scatter": "ReduceScatter"}
print("replay: %s, %d trace files" % (d["landscape"], d["traces"]))
print()
print("| load | collective | size | real autoccl/default | replay final/baseline | diff | "
      "real incl./default incl. | replay incl./baseline | diff |")
print("|---|---|---|---|---|---|---|---|---|")
flagged = 0
for f in files:
    for line in open(f):
        m = json.loads(line)
        load = "gemm" if m.get("interference") else "iso"
        dres = m["modes"]["default"]["results"]
        ares = m["modes"]["autoccl"]["results"]
        for dr, ar in zip(dres, ares):
            key = "%s %s %d" % (load, names[m["coll"]], dr["size"])
            if key not in pred or not ar["time_us"] or not dr["time_us"]:
                continue
            real = dr["time_us"] / ar["time_us"]
            # both pay the communicator's first call: compare incl. with incl.
            real_incl = dr["time_incl_us"] / ar["time_incl_us"] if ar["time_incl_us"] else float("nan")
            w = pred[key]
            d1 = w["final_over_baseline"] / real - 1
            # a long run times the 350 calls after its tuning time
            w_incl = w["tail_incl_over_baseline"] if m.get("warmup_s") else w["incl_over_baseline"]
            d2 = w_incl / real_incl - 1
            mark = lambda x: " **" if abs(x) > 0.05 else ""
            flagged += abs(d1) > 0.05 or abs(d2) > 0.05
            size = dr["size"]
            sz = "%dK" % (size >> 10) if size < 1 << 20 else ("%dM" % (size >> 20) if size < 1 << 30 else "1G")
            print("| %s | %s | %s | %.3f | %.3f | %+.0f %%%s | %.3f | %.3f | %+.0f %%%s |" %
                  (load, names[m["coll"]], sz, real, w["final_over_baseline"], 100 * d1, mark(d1),
                   real_incl, w_incl, 100 * d2, mark(d2)))
print()
print("%d workloads differ by more than 5 %% (marked **)" % flagged)
