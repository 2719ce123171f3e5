#!/usr/bin/env python3
"""Markdown tables from autoccl-bench --compare --json lines and the PyTorch
example's torch_step lines (docs/benchmarks.md).

  scripts/gpu-summary.py RUN.jsonl... [--oracle OLD_SWEEP.jsonl]

Compare records: per size, every mode's time (median over reps of each run's
median of the timed iterations); each mode over NCCL as it ships (default),
on the timed iterations and including the whole run (time_incl); with a
ceiling mode, what each plugin mode adds over the ceiling alone; with a
same-run sweep, each mode over its oracle; with --oracle, autoccl against the
sweep oracle of another run (a single sweep picks lucky minima: indicative).
A per-call cost record (gpu-testbed.sh: modes default and table, one size)
also gets table - default from the per-rep medians, with a 95 % bootstrap
interval over reps and the verdict against the 1 us target; where the reps
fall in two states (a fast and a slow kind of process, in both modes), also
the difference within each state. Several cost records of one collective,
size and launch model are also pooled.
Lines of other kinds (--advise, torch_step) get their own short tables (with
torch_step_run lines also each autoccl launch's overlap against
torch.profiler's); lines
that are not JSON objects are skipped with a note on stderr.

A tar (gpu-testbed.sh --reports: reports-iso.tar) gets a table of the job
reports in it, per launch model: how each workload's rows (one per rank of
each process) ended, and the budget waits still ahead of those that wait."""
import json
import random
import statistics
import sys
import tarfile

COST_TARGET_US = 1.0  # docs/benchmarks.md: table mode saying NCCL costs at most 1 us a call
BOOT_N = 2000
BOOT_SEED = 1  # fixed: the same record gives the same interval


def fmt_size(b):
    for u, s in ((1 << 30, "G"), (1 << 20, "M"), (1 << 10, "K")):
        if b >= u:
            return "%d%s" % (b // u, s)
    return str(b)


def ratio(num, den):
    return "%.2f" % (num / den) if num and den else "-"


def env_of(mode):
    """The variables a mode set, without the plugin paths and trace files."""
    return " ".join(e for e in mode.get("env", []) if not e.startswith(("NCCL_TUNER", "NCCL_PROFILER",
                                                                        "AUTOCCL_TRACE")))


def compare_table(d, oracle):
    modes = d["modes"]
    names = list(modes)
    others = [m for m in names if m != "default"]
    intf = "GEMM" if d.get("interference") else "isolated"
    envs = "; ".join("%s env: %s" % (m, env_of(modes[m])) for m in others if env_of(modes[m]))
    print("\n#### %s, %s, %s, reps %d, warm-up %d%s + %d timed%s%s\n" % (
        d["coll"], intf, d["launch"], d["reps"], d["warmup"],
        " + %g s" % d["warmup_s"] if d.get("warmup_s") else "", d["iters"],
        ", NCCL %s" % d["nccl_version"] if d.get("nccl_version") else "",
        ", " + envs if envs else ""))
    cols = ["size"] + ["%s us" % m for m in names]
    if "default" in modes:
        cols += ["%s/default" % m for m in others] + ["%s incl./default" % m for m in others]
    plug = [m for m in others if m != "ceiling"]
    if "ceiling" in modes:
        cols += ["%s/ceiling" % m for m in plug]
    if d.get("oracle"):
        cols += ["oracle (same run)"] + ["%s/oracle" % m for m in names]
    if oracle and "autoccl" in modes:
        cols += ["oracle (other run)", "autoccl/other oracle"]
    print("| " + " | ".join(cols) + " |")
    print("|" + "---|" * len(cols))
    res = {m: {r["size"]: r for r in modes[m]["results"]} for m in names}
    same = {o["size"]: o for o in d.get("oracle") or []}
    for s in d["sizes"]:
        t = {m: res[m].get(s, {}).get("time_us") for m in names}
        ti = {m: res[m].get(s, {}).get("time_incl_us") for m in names}
        row = [fmt_size(s)] + ["%.1f" % t[m] if t[m] else "-" for m in names]
        if "default" in modes:
            row += [ratio(t["default"], t[m]) for m in others]
            row += [ratio(ti["default"], ti[m]) for m in others]
        if "ceiling" in modes:
            row += [ratio(t["ceiling"], t[m]) for m in plug]
        if d.get("oracle"):
            o = same.get(s, {})
            row += ["%.1f %s" % (o["time_us"], o.get("config")) if o.get("time_us") else "-"]
            row += [ratio(o.get("time_us"), t[m]) for m in names]
        if oracle and "autoccl" in modes:
            o = oracle.get((d["coll"], s))
            row += ["%.1f %s" % (o["time_us"], o["config"]) if o else "-",
                    ratio(o["time_us"], t["autoccl"]) if o else "-"]
        print("| " + " | ".join(row) + " |")


def is_cost(d):
    return set(d["modes"]) == {"default", "table"} and len(d["sizes"]) == 1


def boot_interval(a, b):
    """95 % percentile interval of median(b) - median(a), each resampled on
    its own: the reps are separate processes, each at its own level."""
    rng = random.Random(BOOT_SEED)
    med = statistics.median
    ds = sorted(med(rng.choices(b, k=len(b))) - med(rng.choices(a, k=len(a)))
                for _ in range(BOOT_N))
    return ds[int(0.025 * BOOT_N)], ds[int(0.975 * BOOT_N) - 1]


def cost_reps(d):
    """A cost record's per-rep times of each mode, failed reps (null) kept
    as None so that pairs stay aligned."""
    s = d["sizes"][0]
    return {m: next((r.get("reps_time_us") or [] for r in d["modes"][m]["results"] if r["size"] == s), [])
            for m in ("default", "table")}


def verdict_of(lo, hi):
    return "met" if hi <= COST_TARGET_US else "missed" if lo > COST_TARGET_US else "not settled"


def two_states(vals):
    """The split of per-process times into a fast and a slow state, or None.
    In one process the same 64 KiB call ran 18-20 or 25-29 us from one
    process to the next, with or without the plugin: a pooled median then
    says which state more reps drew, not what the plugin costs. A split is
    the threshold that best separates the two groups (Otsu), each holding
    at least a fifth of the reps, with a valley: at most 2 % of the reps
    within a tenth of the groups' distance of it, and that distance at
    least 2 us."""
    v = sorted(vals)
    n = len(v)
    if n < 10:
        return None
    best = None
    for i in range(max(1, n // 5), n - n // 5 + 1):
        lo, hi = v[:i], v[i:]
        if len(lo) < n / 5 or len(hi) < n / 5:
            continue
        ml, mh = statistics.fmean(lo), statistics.fmean(hi)
        score = len(lo) * len(hi) * (mh - ml) ** 2
        if best is None or score > best[0]:
            best = (score, (v[i - 1] + v[i]) / 2, statistics.median(lo), statistics.median(hi))
    if best is None:
        return None
    _, t, ml, mh = best
    w = 0.1 * (mh - ml)
    near = sum(1 for x in v if abs(x - t) <= w)
    return t if mh - ml >= 2.0 and near <= 0.02 * n else None


def cost_lines(a, b, pairs=None):
    """The cost's lines for default reps a and table reps b: the pooled
    median difference and its interval, the pairs' median when given, and,
    where the reps fall in two states, the difference within each."""
    if len(a) < 2 or len(b) < 2:
        print("\nFewer than 2 reps in a mode: no interval; target <= %.1f us: not settled" % COST_TARGET_US)
        return
    diff = statistics.median(b) - statistics.median(a)
    lo, hi = (round(x, 6) for x in boot_interval(a, b))  # no float noise at the 1.0 boundary
    print("\ntable - default: %+.2f us, 95 %% interval [%+.2f, %+.2f] us (bootstrap over reps, %d resamples); "
          "target <= %.1f us: **%s**" % (diff, lo, hi, BOOT_N, COST_TARGET_US, verdict_of(lo, hi)))
    if pairs:
        print("\nPaired (rep r of table - rep r of default, %d pairs): median %+.2f us; %s" % (
            len(pairs), statistics.median(pairs), " ".join("%+.2f" % p for p in pairs)))
    t = two_states(a + b)
    if t is None:
        return
    rows, verdicts = [], []
    for name, keep in (("fast", lambda x: x < t), ("slow", lambda x: x >= t)):
        sa, sb = [x for x in a if keep(x)], [x for x in b if keep(x)]
        if len(sa) < 3 or len(sb) < 3:
            rows.append("%s: %d / %d reps, too few" % (name, len(sa), len(sb)))
            verdicts.append("not settled")
            continue
        slo, shi = (round(x, 6) for x in boot_interval(sa, sb))
        verdicts.append(verdict_of(slo, shi))
        rows.append("%s (%d / %d reps): %+.2f us [%+.2f, %+.2f]" % (
            name, len(sa), len(sb), statistics.median(sb) - statistics.median(sa), slo, shi))
    v = "missed" if "missed" in verdicts else "met" if set(verdicts) == {"met"} else "not settled"
    print("\nTwo states (reps split at %.2f us, in both modes): within each, table - default: %s; "
          "target <= %.1f us: **%s** within the states" % (t, "; ".join(rows), COST_TARGET_US, v))


def cost_section(d):
    s = d["sizes"][0]
    reps = cost_reps(d)
    # a failed rep is null: dropped, and its pair with it
    ok = {m: [t for t in reps[m] if t] for m in reps}
    print("\n#### Per-call cost, %s %s, %s: table - default\n" % (d["coll"], fmt_size(s), d["launch"]))
    print("| mode | reps | per rep us | median us |")
    print("|---|---|---|---|")
    for m in reps:
        print("| %s | %d | %s | %s |" % (m, len(ok[m]), " ".join("%.2f" % t if t else "-" for t in reps[m]),
                                       "%.2f" % statistics.median(ok[m]) if ok[m] else "-"))
    cost_lines(ok["default"], ok["table"],
               [t - u for t, u in zip(reps["table"], reps["default"]) if t and u])


def pooled_cost(key, ds):
    """Several cost records of one collective, size and launch model: their
    reps together (each rep its own process, so they pool)."""
    a = [t for d in ds for t in cost_reps(d)["default"] if t]
    b = [t for d in ds for t in cost_reps(d)["table"] if t]
    print("\n#### Per-call cost, %s %s, %s: %d records pooled (%d / %d reps)" % (
        key[0], fmt_size(key[1]), key[2], len(ds), len(a), len(b)))
    cost_lines(a, b)


def advise_table(a):
    print("\n#### --advise, %s, %d ranks, reps %d\n" % (a["collective"], a["ranks"], a["reps"]))
    print("| variable | value | gain | worst size | best size | recommended |")
    print("|---|---|---|---|---|---|")
    for v in a["values"]:
        print("| %s | %s | %s | %s | %s | %s |" % (
            v["variable"], v["value"], *("%.3f" % v[k] if v[k] else "-" for k in ("gain", "worst", "best")),
            "yes" if v["recommended"] else ""))
    if a.get("reproduce"):
        print("\n`%s`" % a["reproduce"])


def retunes_max(t, runs):
    """The most re-tunes one rank's workloads made in one launch of t's mode:
    the summary line's own figure, else from the file's torch_step_run lines
    (their job reports); None where neither says."""
    if t.get("retunes_max") is not None:
        return t["retunes_max"]
    rt = [sum(w.get("retunes") or 0 for w in rank.get("workloads") or [])
          for r in runs if r.get("mode") == t["mode"] and r.get("wrap", t.get("wrap")) == t.get("wrap")
          for rank in (r.get("reports_by_rank") or []) if isinstance(rank, dict)]
    return max(rt) if rt else None


def torch_table(lines, runs=()):
    wraps = sorted({t.get("wrap") or "fsdp" for t in lines})
    print("\n#### PyTorch step, %s\n" % " and ".join(w.upper() for w in wraps))
    print("| wrap | mode | median step s | reps x steps | vs nccl (95 %) | last quarter vs nccl "
          "| tuner's net time saved s | re-tunes (most of one rank, one launch) "
          "| exposed comm share | env |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for t in lines:
        rt = retunes_max(t, runs)
        iv = (" (%.3f-%.3f)" % (t["ratio_low"], t["ratio_high"])
              if t.get("ratio_low") is not None and t.get("ratio_high") is not None else "")
        print("| %s | %s | %.4f | %d x %d | %s%s | %s | %s | %s | %s | %s |" % (
            t.get("wrap") or "fsdp", t["mode"], t["median_step_s"], t["reps"], t["steps"],
            "%.3f" % t["ratio_vs_nccl"] if t.get("ratio_vs_nccl") else "-", iv,
            "%.3f" % t["ratio_tail_vs_nccl"] if t.get("ratio_tail_vs_nccl") else "-",
            "%.3f" % t["time_saved_s"] if t.get("time_saved_s") is not None else "-",
            "-" if rt is None else "%d" % rt,
            "%.3f" % t["exposed_comm_share"] if t.get("exposed_comm_share") is not None else "-",
            env_of(t)))


def overlap_table(runs):
    """Each autoccl launch's exposed share against torch.profiler's (the gap
    from the plugin's whole-run share; its last quarter beside it), and what
    the plugin's profiler says about its own samples."""
    rows = [r for r in runs if r.get("mode") == "autoccl" and (
        r.get("torch_exposed_of_comm") is not None or r.get("autoccl_profiler"))]
    if not rows:
        return
    print("\n#### Overlap, autoccl launches: exposed share of communication time\n")
    print("| wrap | rep | torch.profiler | autoccl, run | autoccl, last quarter | gap pp "
          "| workload gap max | torch's NCCL kernels a step (ms) | samples | overlap late (s) "
          "| CUPTI backed off | not measuring at 30 % of steps |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")

    def f3(v):
        return "-" if v is None else "%.3f" % v
    for r in rows:
        p = r.get("autoccl_profiler") or {}
        t, run, tail = (r.get("torch_exposed_of_comm"), r.get("autoccl_exposed_share"),
                        r.get("autoccl_exposed_share_tail"))
        late = ("%d (%.3f)" % (p["overlap_late"], p.get("overlap_late_seconds") or 0.0)
                if p.get("overlap_late") is not None else "-")
        # how long the profiled steps' NCCL kernels ran: a rank waiting for
        # the other in them shows here (its kernels run the wait)
        # (records before overlap_steps was written used the example's 5)
        cs, ns = r.get("torch_comm_s_by_coll"), r.get("overlap_steps") or 5
        comm = "%.1f" % (1e3 * sum(cs.values()) / ns) if isinstance(cs, dict) and cs else "-"
        # workloads of >= 200 calls not yet measuring at 30 % of the steps (waiting, no time of their own)
        we = r.get("workloads_waiting_early")
        # with the calls it still waited and what for, where the record has them
        wait = "-" if not isinstance(we, list) else ", ".join(
            "%s %s %s%s" % (w.get("collective"), fmt_size(w.get("bytes") or 0), w.get("state"),
                            " (%s more calls for %s)" % (w["budget_wait_calls"],
                                                         w.get("budget_wait_for") or "?")
                            if w.get("budget_wait_calls") else "")
            for w in we) or "none"
        print("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            r.get("wrap") or "fsdp", r.get("rep", "-"), f3(t), f3(run), f3(tail),
            # the gap: the job's share as the plugin reports it, not its last quarter
            "%.1f" % (100 * abs(run - t)) if t is not None and run is not None else "-",
            f3(r.get("workload_overlap_gap_max")), comm,
            p.get("samples", "-"), late,
            {True: "yes", False: "no"}.get(p.get("cupti_backed_off"), "-"), wait))


def reports_tables(path):
    """End states of the job reports under reports-<launch>/ in a tar."""
    rows = {}
    with tarfile.open(path) as tf:
        for m in tf.getmembers():
            parts = m.name.split("/")
            if (not m.isfile() or len(parts) != 2 or not parts[0].startswith("reports-")
                    or not parts[1].endswith(".json")):
                continue
            try:
                d = json.load(tf.extractfile(m))
            except ValueError:
                print("%s: %s: not JSON, skipped" % (path, m.name), file=sys.stderr)
                continue
            if d.get("kind") != "autoccl-job-report":
                continue
            for w in d.get("workloads") or []:
                key = (parts[0][len("reports-"):], w.get("collective", "?"), w.get("bytes", 0))
                rows.setdefault(key, []).append(w)
    if not rows:
        print("%s: no job reports (gpu-testbed.sh --reports)" % path, file=sys.stderr)
        return
    states = sorted({w.get("state", "?") for ws in rows.values() for w in ws})
    for launch in sorted({k[0] for k in rows}):
        print("\n#### Job reports, %s: each workload's end state (one row per rank)\n" % launch)
        print("| workload | rows | " + " | ".join(states) + " | budget wait to go (calls) |")
        print("|---|---|" + "---|" * len(states) + "---|")
        for key in sorted(k for k in rows if k[0] == launch):
            ws = rows[key]
            waits = sorted(w["budget_wait_calls"] for w in ws if w.get("budget_wait_calls"))
            print("| %s %s | %d | %s | %s |" % (
                key[1], fmt_size(key[2]), len(ws),
                " | ".join(str(sum(w.get("state") == st for w in ws)) for st in states),
                ", ".join(str(x) for x in waits) or "-"))


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
    if args[0] in ("-h", "--help"):
        print(__doc__)
        return
    costs = {}
    for path in args:
        try:
            open(path).close()
        except OSError as e:
            sys.exit("gpu-summary.py: cannot read %s: %s" % (path, e.strerror))
        if path.endswith(".tar") or path.endswith(".tgz") or path.endswith(".tar.gz"):
            reports_tables(path)
            continue
        torch, torch_runs = [], []
        for n, line in enumerate(open(path), 1):
            try:
                d = json.loads(line)
            except ValueError:
                print("%s:%d: not JSON, skipped" % (path, n), file=sys.stderr)
                continue
            if not isinstance(d, dict):
                continue
            if d.get("kind") == "compare":
                compare_table(d, oracle)
                if is_cost(d):
                    cost_section(d)
                    costs.setdefault((d["coll"], d["sizes"][0], d.get("launch")), []).append(d)
            elif "advise" in d:
                advise_table(d["advise"])
            elif d.get("kind") == "torch_step":
                torch.append(d)
            elif d.get("kind") == "torch_step_run":
                torch_runs.append(d)
        if torch:
            torch_table(torch, torch_runs)
            overlap_table(torch_runs)
    for key, ds in costs.items():
        if len(ds) > 1:
            pooled_cost(key, ds)


if __name__ == "__main__":
    main()
