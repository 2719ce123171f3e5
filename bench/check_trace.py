#!/usr/bin/env python3
"""autoccl-bench --trace on --fake timings: a compare + sweep run writes one
trace per mode and sweep config and repetition, each a valid
autoccl-bench-trace (docs/trace.md) with every rank's T iterations per size.

usage: check_trace.py AUTOCCL_BENCH OUTDIR"""
import gzip, json, os, shutil, subprocess, sys

bench, out = sys.argv[1], sys.argv[2]
shutil.rmtree(out, ignore_errors=True)
cmd = [bench, '--fake', '-g', '2', '-b', '64K', '-e', '1M', '-f', '4', '-w', '30', '-n', '10',
       '--compare', 'default', '--reps', '2', '--sweep', '--sweep-algos', 'Ring,Tree',
       '--sweep-protos', 'LL,Simple', '--sweep-channels', '0,32', '--sweep-warmup', '5',
       '--trace', out, '-q']
p = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
if p.returncode != 0:
    sys.exit(f'FAIL: {" ".join(cmd)} exited {p.returncode}\n{p.stdout}\n{p.stderr}')
files = sorted(os.listdir(out))
want = ['default-rep0.jsonl.gz', 'default-rep1.jsonl.gz'] + [
    f'{a}-{pr}-{ch}-rep0.jsonl.gz' for a in ('ring', 'tree') for pr in ('ll', 'simple')
    for ch in ('auto', '32')]
missing = sorted(set(want) - set(files))
if missing:
    sys.exit(f'FAIL: missing traces {missing}; got {files}')
for f in want:
    lines = [json.loads(l) for l in gzip.open(os.path.join(out, f), 'rt')]
    h = lines[0]
    assert h['format'] == 'autoccl-bench-trace' and h['version'] == 1, (f, h)
    assert h['nranks'] == 2 and h['launch'] == 'procs' and h['fake'] is True, (f, h)
    T = h['warmup'] + h['iters']
    sizes = [l for l in lines if l.get('t') == 'size']
    assert [s['bytes'] for s in sizes] == [65536, 262144, 1048576], (f, sizes)
    for s in sizes:
        assert len(s['times_us']) == 2 and all(len(r) == T for r in s['times_us']), (f, s['bytes'])
        if s['status'] == 0:
            assert all(t is not None and t > 0 for r in s['times_us'] for t in r), (f, s['bytes'])
    assert lines[-1] == {'t': 'end'}, (f, lines[-1])
    if f.startswith('ring-ll-32'):
        assert h['env'].get('NCCL_ALGO') == 'Ring' and h['env'].get('NCCL_MAX_NCHANNELS') == '32', h
print(f'ok: {len(want)} traces, warm-up {h["warmup"]} + {h["iters"]} timed per size')
