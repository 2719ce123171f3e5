#!/usr/bin/env python3
"""The real plugin on the replay landscape, recording its own trace: the
simulator replays h200-traces (recorded iterations, clamps, set-up, event
cost), ranks agree on every call, and AUTOCCL_TRACE holds per rank the
samples the tuner received, what NCCL ran (clamped as on the GPU: never
more than 24 channels, LL at 64 KiB at most 16) and the decision changes.

usage: replay_e2e.py AUTOCCL_SIM PLUGIN"""
import gzip, json, os, sys, tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import simtrace  # noqa: E402

sim, plugin = sys.argv[1], sys.argv[2]
with tempfile.TemporaryDirectory() as d:
    rep, files = simtrace.run(sim, plugin, ["--landscape", "h200-traces", "--ranks", "2",
                                            "--steps", "300", "--workload", "tp"], d)
    assert rep["divergent_decisions"] == 0 and rep["plugin_errors"] == 0, rep
    assert rep["landscape"].startswith("h200-traces"), rep["landscape"]
    assert [os.path.basename(f) for f in files] == ["t-0.jsonl.gz", "t-1.jsonl.gz"], files
    for f in files:
        lines = [json.loads(l) for l in gzip.open(f, "rt")]
        h = lines[0]
        assert h["format"] == "autoccl-trace" and h["version"] == 1, h
        s = [l for l in lines if l.get("t") == "s"]
        dec = [l for l in lines if l.get("t") == "d"]
        assert lines[-1]["t"] == "end" and lines[-1]["dropped_ring"] == 0, lines[-1]
        assert len(s) > 50 and len(dec) >= 2, (len(s), len(dec))  # the search samples few calls
        assert all(x["src"] == "sim" and x["ran"] is not None for x in s)
        assert max(x["ran"][2] for x in s) <= 24, "a decision ran above the 24 built channels"
        ll64 = [x for x in s if x["bytes"] == 65536 and x["ran"][1] == "LL"]
        assert all(x["ran"][2] <= 16 for x in ll64), "LL at 64 KiB runs at most 16 channels"
        kinds = {x["status"] for x in s}
        assert kinds <= {"ok", "clamped", "channels", "algo/proto"}, kinds
        print("%s: %d samples, %d decision changes, statuses %s" %
              (os.path.basename(f), len(s), len(dec), sorted(kinds)))
print("ok")
