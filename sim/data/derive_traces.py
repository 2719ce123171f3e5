#!/usr/bin/env python3
"""Synthesise bench traces (autoccl-bench-trace v1, docs/trace.md) from the
2x H200 matrix data, so the replay landscape has data before real recorded
traces exist. Every file says "derived" in its header: these are NOT
measurements of per-iteration behaviour, only of medians.

  derive_traces.py SHARED_DATA_DIR OUT_DIR [SEED]

Inputs (SHARED_DATA_DIR = ../shared/data/h200x2-2026-11-30):
  isolated-matrix.jsonl, gemm-matrix.jsonl  medians per size of NCCL's default
      (warm-up 300 + 50 timed, with time_incl) and of the sweep configs
      (Ring/Tree x LL/LL128/Simple x auto/32, warm-up 10 + 50 timed)
  overhead.jsonl  the per-call cost of NCCL profiler events
Measured: every median (time_us), the default's first-call cost
((time_incl - time) x calls, put on iteration 0), the event cost.
Assumed (documented in docs/trace.md, replaced by real traces):
  - per-iteration noise: log-normal, sd 8 % below 100 us, 3 % above;
  - arrival skew: each iteration one rank (at random) arrives early by an
    exponential delay (mean 15 % of the median, at most 5 us isolated; 40 %
    under GEMM) and its CUDA-event time includes that wait;
  - outliers: 0.4 % of iterations are 10x..1000x (log-uniform), capped at 50 ms;
  - what NCCL ran: Ring/Tree as asked, 24 channels for "auto" (16 for LL at
    <= 256 KiB, 22 at 1 MiB), 32 when 32 was forced; the default is the auto
    sweep config closest to the default's median;
  - set-up (connections): a sweep run's first call in a fresh process pays
    the default run's first-call cost, plus 5 ms per channel beyond the
    default's at that size, plus 20 ms when its algorithm is not the
    default's (the design's estimate, "tens of ms"; a static table of 24- and
    32-channel configs paid ~40 ms where the default ran 16 channels).
"""
import gzip, json, math, os, random, sys

src, out = sys.argv[1], sys.argv[2]
seed = int(sys.argv[3]) if len(sys.argv) > 3 else 14
rng = random.Random(seed)
CONN_CH_US = 5000.0
CONN_ALGO_US = 20000.0


def ran_nch(proto, asked, size):
    if asked:
        return asked
    if proto == 'LL' and size <= 262144:
        return 16
    if proto == 'LL' and size <= 1048576:
        return 22
    return 24


def iterations(median, T, gemm, first_extra):
    """T iterations x 2 ranks (us) whose slowest-rank median is `median`."""
    sd = 0.08 if median < 100 else 0.03
    skew_mean = min(0.15 * median, 5.0) if not gemm else 0.4 * median
    raw = []
    for i in range(T):
        base = math.exp(rng.gauss(0.0, sd) - sd * sd / 2)
        d = rng.expovariate(1.0 / skew_mean) / median if skew_mean > 0 else 0.0
        early = rng.randrange(2)
        r = [base, base]
        r[early] += d
        if rng.random() < 0.004:
            f = 10 ** rng.uniform(1, 3)
            late = rng.randrange(2)
            r[late] = min(r[late] * f, 50000.0 / median)
            r[1 - late] = max(r[1 - late], r[late])  # the other rank waits for it
        raw.append(r)
    mx = sorted(max(r) for r in raw)
    scale = median / mx[len(mx) // 2]
    rows = [[round(v * scale, 3) for v in r] for r in raw]
    if first_extra > 0:
        rows[0] = [round(v + first_extra, 3) for v in rows[0]]
    return [[row[k] for row in rows] for k in range(2)]


def write(path, header, sizes):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, 'wb') as raw, gzip.GzipFile(fileobj=raw, mode='wb', compresslevel=9,
                                                 mtime=0) as gz, \
            __import__('io').TextIOWrapper(gz, encoding='utf-8') as f:  # reproducible bytes
        f.write(json.dumps(header, separators=(',', ':')) + '\n')
        for s in sizes:
            f.write(json.dumps(s, separators=(',', ':')) + '\n')
        f.write('{"t":"end"}\n')


def ran_json(algo, proto, nch):
    return [{"rank": r, "algo": algo, "proto": proto, "nch": nch} for r in range(2)]


nfiles = 0
for regime, fn in (('iso', 'isolated-matrix.jsonl'), ('gemm', 'gemm-matrix.jsonl')):
    for line in open(os.path.join(src, fn)):
        d = json.loads(line)
        coll, sizes = d['coll'], d['sizes']
        gemm = d.get('interference')
        base_hdr = {"format": "autoccl-bench-trace", "version": 1, "bench": "0.1.0",
                    "host": "derived", "coll": coll, "dtype": d['dtype'], "nranks": 2,
                    "launch": d['launch'], "gemm": {"duty": gemm['duty'], "n": gemm['n']} if gemm else None,
                    "fake": False, "nccl_version": 22803,
                    "derived": {"from": fn, "by": "sim/data/derive_traces.py", "seed": seed,
                                "note": "medians measured; per-iteration noise, skew, outliers assumed"}}
        sweep = {s['config']: s['time_us'] for s in d['sweep'] if not s.get('skipped')}
        # default: the auto config closest to its median says what NCCL ran
        dres = d['modes']['default']['results']
        dflt_ran, first_excess = [], []
        for i, r in enumerate(dres):
            best, bd = None, 1e9
            for cfg, ts in sweep.items():
                a, p, ch = cfg.split('/')
                if ch != 'auto' or ts[i] is None:
                    continue
                dist = abs(math.log(ts[i] / r['time_us']))
                if dist < bd:
                    best, bd = (a, p), dist
            dflt_ran.append(best)
            T = d['warmup'] + d['iters']
            first_excess.append(max(0.0, (r['time_incl_us'] - r['time_us']) * T))
        T = d['warmup'] + d['iters']
        rows = []
        for i, r in enumerate(dres):
            a, p = dflt_ran[i]
            rows.append({"t": "size", "bytes": r['size'], "count": r['count'], "status": 0,
                         "wall_s": None, "gemm_tflops": r.get('gemm_tflops'),
                         "ran": ran_json(a, p, ran_nch(p, 0, r['size'])),
                         "times_us": iterations(r['time_us'], T, gemm, first_excess[i])})
        h = dict(base_hdr, label="default", warmup=d['warmup'], iters=d['iters'], env={})
        write(os.path.join(out, f"{regime}-{d['launch']}-{coll}", "default-rep0.jsonl.gz"), h, rows)
        nfiles += 1
        Ts = 10 + d['iters']  # the matrix ran its sweep with --sweep-warmup 10
        for cfg, ts in sweep.items():
            a, p, ch = cfg.split('/')
            asked = 0 if ch == 'auto' else int(ch)
            rows, first = [], True
            a0, p0 = dflt_ran[0]
            n0 = ran_nch(p0, 0, sizes[0])
            for i, t in enumerate(ts):
                if t is None:
                    rows.append({"t": "size", "bytes": sizes[i], "count": dres[i]['count'], "status": 1,
                                 "wall_s": None, "gemm_tflops": None, "ran": None,
                                 "times_us": [[None] * Ts, [None] * Ts]})
                    continue
                n = ran_nch(p, asked, sizes[i])
                extra = (first_excess[0] + CONN_CH_US * max(0, n - n0) +
                         (CONN_ALGO_US if a != a0 else 0.0)) if first else 0.0
                first = False
                rows.append({"t": "size", "bytes": sizes[i], "count": dres[i]['count'], "status": 0,
                             "wall_s": None, "gemm_tflops": None,
                             "ran": ran_json(a, p, ran_nch(p, asked, sizes[i])),
                             "times_us": iterations(t, Ts, gemm, extra)})
            env = {"NCCL_ALGO": a, "NCCL_PROTO": p}
            if asked:
                env.update(NCCL_MIN_NCHANNELS=str(asked), NCCL_MAX_NCHANNELS=str(asked))
            h = dict(base_hdr, label=cfg, warmup=10, iters=d['iters'], env=env)
            name = f"{a}-{p}-{ch}".lower() + "-rep0.jsonl.gz"
            write(os.path.join(out, f"{regime}-{d['launch']}-{coll}", name), h, rows)
            nfiles += 1

# per-call cost of NCCL profiler events (Coll|KernelCh), us: static-table
# mode with events on minus the same with AUTOCCL_PROFILER=off (overhead.jsonl)
ev = {}
for line in open(os.path.join(src, 'overhead.jsonl')):
    d = json.loads(line)
    if d['name'].startswith('static_'):
        ev.setdefault(d['coll'], {})[d['name'].split('_')[1]] = \
            {r['size']: r['time_us'] for r in d['modes']['autoccl']['results']}
with open(os.path.join(out, 'events.tsv'), 'w') as f:
    f.write("# coll\tbytes\tevent_us  (derived: overhead.jsonl, events on - off, static mode; "
            "reduce_scatter uses all_gather's)\n")
    for coll in ('all_reduce', 'all_gather', 'reduce_scatter'):
        e = ev['all_gather' if coll == 'reduce_scatter' else coll]
        for size in sorted(e['events']):
            f.write(f"{coll}\t{size}\t{max(0.0, e['events'][size] - e['noevents'][size]):.3f}\n")
print(f"{nfiles} traces written under {out}")
