#!/usr/bin/env python3
"""Stale KernelCh stamps through the real plugin: the simulator hands out,
for runs of 256 calls, the stamps of the call 64 earlier or a channel start
63 ms early, as NCCL 2.30 did with two ranks on one H200. No sample the
tuner receives may then share its stamps with another of its rank or
overlap one: a rank's kernels run one after another, so either would be a
stale stamp taken for a measurement. Ranks still agree on every decision.

usage: stale_stamps.py AUTOCCL_SIM PLUGIN"""
import gzip, json, os, sys, tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import simtrace  # noqa: E402

TOL_NS = 2000  # the profiler's tolerance (profiler/overlap.h)
sim, plugin = sys.argv[1], sys.argv[2]
with tempfile.TemporaryDirectory() as d:
    rep, files = simtrace.run(sim, plugin, ["--ranks", "2", "--steps", "3000", "--stale-stamps",
                                            "0.5", "--seed", "7"], d)
    if rep["divergent_decisions"] != 0 or rep["plugin_errors"] != 0:
        sys.exit("FAIL: %d divergent decisions, %d plugin errors" %
                 (rep["divergent_decisions"], rep["plugin_errors"]))
    if len(files) != 2:
        sys.exit("FAIL: expected a trace per rank, found %s" % files)
    bad = []
    for f in files:
        ivs = {}
        for line in gzip.open(f, "rt"):
            s = json.loads(line)
            if s.get("t") == "s" and s.get("gpu"):
                ivs.setdefault(s["comm"], []).append((s["gpu"][0], s["gpu"][1], s["call"], s["bytes"]))
        n = sum(len(v) for v in ivs.values())
        if n < 1000:
            sys.exit("FAIL: %s: only %d samples (the check must not starve the search)" % (f, n))
        for comm, v in ivs.items():
            v.sort()
            end = None
            for a, b, call, nbytes in v:
                if end is not None and end[0] - a > TOL_NS:
                    bad.append("%s comm %s: call %d (%d B) [%d, %d] overlaps call %d, which ends at %d"
                               % (os.path.basename(f), comm, call, nbytes, a, b, end[1], end[0]))
                if end is None or b > end[0]:
                    end = (b, call)
        print("%s: %d samples" % (os.path.basename(f), n))
    if bad:
        print("FAIL: %d samples overlap an earlier kernel of their rank:" % len(bad))
        print("\n".join(bad[:10]))
        sys.exit(1)
print("ok: no sample overlaps an earlier kernel of its rank")
