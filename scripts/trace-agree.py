#!/usr/bin/env python3
"""Do the ranks of a GPU run agree? Reads the plugin traces (AUTOCCL_TRACE
with %r, docs/trace.md) of one run and compares, per communicator and
workload, the decisions every rank wrote: the same candidate from the same
call on. A rank whose decision sequence differs from rank 0's (another
candidate at a call, a switch at another call) is a divergent decision.

  scripts/trace-agree.py TRACE_FILE [TRACE_FILE ...]

Prints one line per workload and a total; exit 0 when every workload's
ranks agree, 1 when one diverges, 2 when no decision could be read.
Traces cut short (a killed run) are compared up to the shortest rank's
last call."""
import gzip
import json
import sys


def records(path):
    op = gzip.open if path.endswith(".gz") else open
    try:
        with op(path, "rt") as f:
            for line in f:
                try:
                    yield json.loads(line)
                except ValueError:
                    return  # a cut tail
    except (OSError, EOFError):
        return


def main(paths):
    if not paths:
        sys.exit(__doc__)
    seqs = {}  # (comm, coll, bytes, pipe) -> rank -> [(call, cand)]
    last = {}  # (key, rank) -> last call seen in any record
    for p in paths:
        for r in records(p):
            if r.get("t") not in ("d", "s"):
                continue
            key = (r.get("comm"), r.get("coll"), r.get("bytes"), r.get("pipe"))
            rank = r.get("rank")
            call = r.get("call", 0)
            last[key, rank] = max(last.get((key, rank), 0), call)
            if r["t"] == "d":
                seqs.setdefault(key, {}).setdefault(rank, []).append((call, r.get("cand")))
    if not seqs:
        print("trace-agree: no decision records in %d files" % len(paths))
        return 2
    bad = 0
    for key in sorted(seqs, key=str):
        ranks = seqs[key]
        upto = min(last.get((key, rk), 0) for rk in ranks)
        cut = {rk: [(c, d) for c, d in s if c <= upto] for rk, s in ranks.items()}
        ref_rank = min(cut)
        ref = cut[ref_rank]
        differ = [rk for rk, s in cut.items() if s != ref]
        bad += bool(differ)
        print("%s %s %s bytes: %d ranks, %d decisions up to call %d%s" % (
            key[0], key[1], key[2], len(ranks), len(ref), upto,
            "" if not differ else ", DIVERGENT on ranks %s" % sorted(differ)))
    print("trace-agree: %d workloads, %d divergent" % (len(seqs), bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
