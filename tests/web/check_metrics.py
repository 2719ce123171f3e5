#!/usr/bin/env python3
"""Checks a Prometheus text exposition (format 0.0.4) beyond promtool:
HELP+TYPE on every family before its samples, families contiguous, no
duplicate series, counters named *_total, histograms with sorted le,
cumulative buckets and +Inf == _count, valid label escaping, and an
optional bound on the series count.

usage: check_metrics.py FILE [--max-series N] [--require NAME ...]
"""
import math
import re
import sys

NAME = r"[a-zA-Z_:][a-zA-Z0-9_:]*"
SAMPLE = re.compile(rf"^({NAME})(\{{.*\}})? (\S+)$")
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\\n]|\\[\\"n])*)"(,|$)')


def parse_labels(s):
    if not s:
        return ()
    body, out, pos = s[1:-1], [], 0
    while pos < len(body):
        m = LABEL.match(body, pos)
        if not m:
            raise ValueError(f"bad labels {s!r}")
        out.append((m.group(1), m.group(2)))
        pos = m.end()
    names = [k for k, _ in out]
    if len(set(names)) != len(names):
        raise ValueError(f"repeated label in {s!r}")
    return tuple(out)


def value(v):
    if v in ("+Inf", "-Inf", "NaN"):
        return float(v.replace("Inf", "inf").replace("NaN", "nan"))
    return float(v)


def check(text, max_series=None, require=()):
    errs = []
    fams, order, closed = {}, [], set()
    cur = help_name = None
    series = set()
    hist = {}
    for no, line in enumerate(text.split("\n"), 1):
        if not line:
            continue
        if line.startswith("# HELP "):
            name = line[7:].split(" ", 1)[0]
            help_name = name
            continue
        if line.startswith("# TYPE "):
            name, typ = line[7:].split(" ")
            if help_name != name:
                errs.append(f"{no}: TYPE {name} without HELP just before")
            if name in fams:
                errs.append(f"{no}: family {name} declared twice")
            if cur:
                closed.add(cur)
            fams[name], cur = typ, name
            order.append(name)
            if typ == "counter" and not name.endswith("_total"):
                errs.append(f"{no}: counter {name} lacks _total")
            continue
        if line.startswith("#"):
            errs.append(f"{no}: stray comment {line!r}")
            continue
        m = SAMPLE.match(line)
        if not m:
            errs.append(f"{no}: unparsable sample {line!r}")
            continue
        name, lab, val = m.group(1), m.group(2), m.group(3)
        try:
            labels = parse_labels(lab)
            v = value(val)
        except ValueError as e:
            errs.append(f"{no}: {e}")
            continue
        fam = name
        for suf in ("_bucket", "_sum", "_count"):
            if name.endswith(suf) and fams.get(name[: -len(suf)]) == "histogram":
                fam = name[: -len(suf)]
        if fam != cur:
            errs.append(f"{no}: sample {name} outside its family (in {cur})")
            continue
        key = (name, labels)
        if key in series:
            errs.append(f"{no}: duplicate series {name}{lab}")
        series.add(key)
        if fams[fam] == "counter" and not (v >= 0):
            errs.append(f"{no}: negative counter {line!r}")
        if fams[fam] == "histogram":
            base = tuple(kv for kv in labels if kv[0] != "le")
            h = hist.setdefault((fam, base), {"buckets": [], "count": None, "sum": None})
            if name.endswith("_bucket"):
                le = dict(labels).get("le")
                if le is None:
                    errs.append(f"{no}: bucket without le")
                    continue
                h["buckets"].append((value(le), v))
            elif name.endswith("_count"):
                h["count"] = v
            else:
                h["sum"] = v
    for (fam, base), h in hist.items():
        b = h["buckets"]
        where = f"{fam}{dict(base)}"
        if not b or not math.isinf(b[-1][0]):
            errs.append(f"{where}: no +Inf bucket last")
            continue
        les = [x for x, _ in b]
        if les != sorted(les) or len(set(les)) != len(les):
            errs.append(f"{where}: le not strictly increasing")
        counts = [c for _, c in b]
        if any(y < x for x, y in zip(counts, counts[1:])):
            errs.append(f"{where}: buckets not cumulative {counts}")
        if h["count"] is None or h["sum"] is None:
            errs.append(f"{where}: missing _count or _sum")
        elif counts[-1] != h["count"]:
            errs.append(f"{where}: +Inf {counts[-1]} != _count {h['count']}")
    if max_series is not None and len(series) > max_series:
        errs.append(f"{len(series)} series > bound {max_series}")
    for r in require:
        if r not in fams:
            errs.append(f"required family {r} missing")
    return errs, len(fams), len(series), len(hist)


def main():
    args = sys.argv[1:]
    if not args:
        print(__doc__, file=sys.stderr)
        return 2
    path, max_series, require = args[0], None, []
    i = 1
    while i < len(args):
        if args[i] == "--max-series":
            max_series = int(args[i + 1])
            i += 2
        elif args[i] == "--require":
            i += 1
            while i < len(args) and not args[i].startswith("--"):
                require.append(args[i])
                i += 1
        else:
            print(f"check_metrics.py: unknown argument {args[i]!r}", file=sys.stderr)
            return 2
    with open(path, encoding="utf-8") as f:
        errs, nf, ns, nh = check(f.read(), max_series, require)
    for e in errs:
        print("check_metrics:", e)
    print(f"check_metrics: {nf} families, {ns} series, {nh} histograms, {len(errs)} problems")
    return 1 if errs else 0


if __name__ == "__main__":
    sys.exit(main())
