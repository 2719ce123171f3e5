#!/usr/bin/env python3
"""What a plugin trace (AUTOCCL_TRACE, docs/trace.md) says per workload:
its decisions in call order, and per config its samples' kernel time, NCCL's
host time per call ("host", when recorded) and how late the samples came;
where NCCL's choice has samples from both CUPTI and NCCL's KernelCh events,
the difference of their medians (the two clocks).

  scripts/trace-stats.py [--bytes N] [--coll NAME] TRACE.jsonl[.gz] | RECORD.tar ...

A tar (gpu-record.sh, gpu-testbed.sh: record-iso.tar) is read member by
member: every *-plugin-r*.jsonl.gz in it. A workload's decisions are listed
in call order (the first and the last 20 where there are more), then the
call at which it first left warm-up and its waits for a measuring state
("-": never). --bytes keeps one size (the
tuner's bytes: AllGather's and ReduceScatter's whole buffer), --coll one
collective (AllReduce, AllGather, ...).

Per config (what the tuner decided, "NCCL" for NCCL's own choice, and the
source that measured it): n samples, the median and 10th-90th percentiles
of the kernel time in us, the median host time in us ("-" where none was
recorded), the median sample latency in ms. A rank that arrives early
measures its wait for the other in its kernel (docs/profiler.md): compare
configs on one rank, or on the faster one."""
import gzip
import io
import json
import statistics
import sys
import tarfile

DECISIONS = 20  # the first and the last this many decisions of a workload are listed


def pct(xs, q):
    s = sorted(xs)
    return s[min(len(s) - 1, int(q * len(s)))]


def cand_name(c):
    return "NCCL" if not c else "%s/%s/%s" % (c[0], c[1], c[2])


def read_lines(name, f):
    """(header, records) of one trace; records skip lines that do not parse."""
    head, recs = None, []
    for n, line in enumerate(f, 1):
        try:
            r = json.loads(line)
        except ValueError:
            print("%s:%d: not JSON, skipped" % (name, n), file=sys.stderr)
            continue
        if head is None and isinstance(r, dict) and r.get("format"):
            head = r
        elif isinstance(r, dict) and r.get("t") in ("s", "d"):
            recs.append(r)
    return head, recs


def traces(path):
    """(name, header, records) per trace file in path."""
    if path.endswith(".tar"):
        with tarfile.open(path) as tf:
            for m in tf.getmembers():
                base = m.name.rsplit("/", 1)[-1]
                if not m.isfile() or "-plugin-r" not in base:
                    continue
                raw = tf.extractfile(m).read()
                if base.endswith(".gz"):
                    raw = gzip.decompress(raw)
                yield (m.name,) + read_lines(m.name, io.StringIO(raw.decode("utf-8", "replace")))
        return
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8", errors="replace") as f:
        yield (path,) + read_lines(path, f)


def report(name, head, recs, want_bytes, want_coll):
    if head is None or head.get("format") != "autoccl-trace":
        print("%s: not an autoccl plugin trace, skipped" % name, file=sys.stderr)
        return
    work = {}
    for r in recs:
        if want_bytes is not None and r.get("bytes") != want_bytes:
            continue
        if want_coll is not None and r.get("coll") != want_coll:
            continue
        work.setdefault((r.get("rank"), r.get("coll"), r.get("bytes")), []).append(r)
    for (rank, coll, nbytes), rs in sorted(work.items(), key=lambda x: (x[0][0], x[0][1], x[0][2])):
        print("\n### %s, rank %s, %s %s bytes" % (name, rank, coll, nbytes))
        ds = ["%d: %s %s" % (r["call"], r["phase"], cand_name(r["cand"])) for r in rs if r["t"] == "d"]
        if len(ds) > 2 * DECISIONS:
            ds = ds[:DECISIONS] + ["... %d more ..." % (len(ds) - 2 * DECISIONS)] + ds[-DECISIONS:]
        if ds:
            print("decisions (call: phase config): " + ", ".join(ds))
            # when it left warm-up and its waits (a job's share of the run:
            # the call over the workload's calls per step and steps)
            began = next((r["call"] for r in rs if r["t"] == "d" and r["phase"] != "warmup"
                          and not str(r["phase"]).startswith("waiting")), None)
            last = max(r.get("call", 0) for r in rs if isinstance(r.get("call"), int))
            print("measuring from call %s (the trace reaches call %d)" % (
                "-" if began is None else began, last))
        by = {}
        for r in rs:
            if r["t"] == "s" and isinstance(r.get("sec"), (int, float)):
                by.setdefault((cand_name(r["cand"]), r.get("src")), []).append(r)
        if not by:
            print("no samples")
            continue
        print("\n| config | source | samples | kernel us median | p10-p90 | host us | latency ms |")
        print("|---|---|---|---|---|---|---|")
        for (cand, src), ss in sorted(by.items(), key=lambda x: -len(x[1])):
            sec = [s["sec"] * 1e6 for s in ss]
            host = [s["host"] * 1e6 for s in ss if isinstance(s.get("host"), (int, float))]
            lat = [s["lat"] * 1e3 for s in ss if isinstance(s.get("lat"), (int, float))]
            print("| %s | %s | %d | %.2f | %.2f-%.2f | %s | %s |" % (
                cand, src, len(ss), statistics.median(sec), pct(sec, 0.1), pct(sec, 0.9),
                "%.2f" % statistics.median(host) if host else "-",
                "%.2f" % statistics.median(lat) if lat else "-"))
        # the two clocks: NCCL's choice timed by CUPTI (in its windows) and by
        # NCCL's KernelCh stamps; the search takes their difference off
        # CUPTI's durations where it is within a clock's (docs/tuner.md)
        cu, kc = by.get(("NCCL", "cupti")), by.get(("NCCL", "nccl"))
        if cu and kc:
            off = statistics.median(s["sec"] for s in cu) - statistics.median(s["sec"] for s in kc)
            print("\nNCCL's choice, CUPTI minus KernelCh on this rank: %+.2f us "
                  "(medians of %d and %d samples; the search sees the fastest rank's)"
                  % (off * 1e6, len(cu), len(kc)))


def main():
    args = sys.argv[1:]
    if not args or args[0] in ("-h", "--help"):
        print(__doc__)
        return 0 if args else 2
    want_bytes = want_coll = None
    paths = []
    i = 0
    while i < len(args):
        a = args[i]
        if a in ("--bytes", "--coll"):
            if i + 1 >= len(args):
                sys.exit("trace-stats.py: %s needs a value" % a)
            if a == "--bytes":
                try:
                    want_bytes = int(args[i + 1])
                except ValueError:
                    sys.exit("trace-stats.py: --bytes takes a whole number of bytes, not %r"
                             % args[i + 1])
            else:
                want_coll = args[i + 1]
            i += 2
            continue
        if a.startswith("-"):
            sys.exit("trace-stats.py: unknown option %s (see --help)" % a)
        paths.append(a)
        i += 1
    if not paths:
        sys.exit("trace-stats.py: no trace given (see --help)")
    for p in paths:
        try:
            for name, head, recs in traces(p):
                report(name, head, recs, want_bytes, want_coll)
        except BrokenPipeError:
            raise
        except (OSError, EOFError, tarfile.TarError) as e:
            sys.exit("trace-stats.py: cannot read %s: %s" % (p, e))
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BrokenPipeError:  # a reader such as head left early
        sys.stderr.close()
        sys.exit(0)
