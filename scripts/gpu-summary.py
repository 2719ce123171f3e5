#!/usr/bin/env python3
"""Markdown tables from autoccl-bench --compare --json lines (docs/benchmarks.md).

  scripts/gpu-summary.py RUN.jsonl [--oracle OLD_SWEEP.jsonl]

Per size: NCCL default and autoccl times (median over reps of each run's
median of the timed iterations), autoccl/default on the timed iterations and
including the whole run (time_incl), and, with --oracle, autoccl against the
sweep oracle of another run (a single sweep picks lucky minima: indicative)."""
import json
import sys


def fmt_size(b):
    for u, s in ((1 << 30, "G"), (1 << 20, "M"), (1 << 10, "K")):
        if b >= u:
            return "%d%s" % (b // u, s)
    return str(b)


def main():
    args = sys.argv[1:]
    oracle = {}
    if "--oracle" in args:
        i = args.index("--oracle")
        for line in open(args[i + 1]):
            d = json.loads(line)
            for o in d.get("oracle") or []:
                oracle[(d["coll"], o["size"])] = o
        del args[i:i + 2]
    if not args:
        sys.exit(__doc__)
    for path in args:
        for line in open(path):
            d = json.loads(line)
            intf = "GEMM" if d.get("interference") else "isolated"
            env = " ".join(e for e in d["modes"]["autoccl"]["env"] if not e.startswith("NCCL_TUNER") and
                           not e.startswith("NCCL_PROFILER") and not e.startswith("AUTOCCL_TRACE"))
            print("\n#### %s, %s, %s, reps %d, warm-up %d%s + %d timed%s\n" % (
                d["coll"], intf, d["launch"], d["reps"], d["warmup"],
                " + %g s" % d["warmup_s"] if d.get("warmup_s") else "", d["iters"],
                ", autoccl env: " + env if env else ""))
            head = "| size | default us | autoccl us | autoccl/default | incl. run |"
            if oracle:
                head += " oracle (other run) | autoccl/oracle |"
            print(head)
            print("|" + "---|" * (head.count("|") - 1))
            base = {r["size"]: r for r in d["modes"]["default"]["results"]}
            for r in d["modes"]["autoccl"]["results"]:
                b = base[r["size"]]
                if not (r["time_us"] and b["time_us"]):
                    continue
                row = "| %s | %.1f | %.1f | %.2f | %.2f |" % (
                    fmt_size(r["size"]), b["time_us"], r["time_us"], b["time_us"] / r["time_us"],
                    b["time_incl_us"] / r["time_incl_us"])
                if oracle:
                    o = oracle.get((d["coll"], r["size"]))
                    row += " %s | %s |" % ("%.1f %s" % (o["time_us"], o["config"]) if o else "-",
                                            "%.2f" % (o["time_us"] / r["time_us"]) if o else "-")
                print(row)


if __name__ == "__main__":
    main()
