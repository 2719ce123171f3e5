#!/usr/bin/env python3
"""FSDP training steps of a Llama-style model with random weights (nothing
downloaded), timed as NCCL ships, with autoccl, and with autoccl plus a
raised channel ceiling.

NCCL reads its plugin and channel variables once per process, so every
(mode, repetition) is its own torchrun launch; the modes are interleaved
and their order rotates each repetition so that drift cancels.

  python3 examples/fsdp_llama.py --plugin build/tuner/libnccl-tuner-autoccl.so \\
      --nproc 2 --reps 3 --steps 30 --out torch.jsonl

Several ranks on one GPU (NCCL 2.30.3 or later, under MPS): --ranks-per-gpu K
puts local ranks K*g..K*g+K-1 on GPU g and sets NCCL_MULTI_RANK_GPU_ENABLE=1;
--nccl-lib PATH preloads that libnccl.so.2 instead of the one PyTorch
bundles (LD_PRELOAD). Without them it runs one rank per GPU, unchanged.

Modes (--modes, default all three):
  nccl             NCCL as it ships: no plugin, no NCCL_* channel variables
  autoccl          NCCL_TUNER_PLUGIN = NCCL_PROFILER_PLUGIN = --plugin
  autoccl_ceiling  autoccl plus NCCL_MIN_NCHANNELS=--ceiling and
                   AUTOCCL_STOCK_CHANNELS=--stock-channels (ceiling mode,
                   docs/channels.md: the minimum raises the channels NCCL
                   builds; NCCL_MAX_NCHANNELS only lowers them, so it is left
                   unset, as the README's ceiling line does)

Output (--out, JSON lines): one "torch_step_run" line per launch, then one
line per mode:
  {"kind": "torch_step", "mode": ..., "median_step_s": ..., "reps": ...,
   "steps": ..., "env": [...], "rep_median_step_s": [...],
   "ratio_vs_nccl": ..., "ratio_low": ..., "ratio_high": ...,
   "time_saved_s": ..., "exposed_comm_share": ...,
   "autoccl_exposed_share": ..., "workloads_unsampled": ...}
ratio_vs_nccl is NCCL's median step over the mode's (above 1: faster);
ratio_low/high its 95 % interval over the repetitions, each mode's launch
paired with NCCL's of the same repetition (null with fewer than 2).
time_saved_s is the tuner's own net time saved per rank, from its job report
(AUTOCCL_REPORT, set for every autoccl launch), else the sum of its
workloads' time_saved_seconds from its /api/v1/state endpoint at the end of
the run; null where the plugin is off or reports none. workloads_unsampled
is the number of its workloads with 200 calls or more that no sample reached
(no NCCL time in the report; neither a baseline nor a best time at the
endpoint); autoccl_exposed_share its own job-level exposed share (endpoint).
exposed_comm_share is the
share of a step in which an NCCL kernel runs and no other kernel does, from a
torch.profiler trace of a few extra steps after the timed ones (--no-overlap
skips it). A mode whose launches all failed gets no line: nothing is
reported without a run.

The worker side (--worker, started by torchrun) needs PyTorch with CUDA;
the driver needs only Python.
"""
import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

MODES = ("nccl", "autoccl", "autoccl_ceiling")
# NCCL variables a mode sets or must not inherit (the baseline is NCCL as it ships).
STRIP = ("NCCL_TUNER_PLUGIN", "NCCL_PROFILER_PLUGIN", "NCCL_MIN_NCHANNELS", "NCCL_MAX_NCHANNELS",
         "NCCL_ALGO", "NCCL_PROTO", "NCCL_NTHREADS", "NCCL_BUFFSIZE", "AUTOCCL_STOCK_CHANNELS")
HTTP_PORT_BASE = 9464  # autoccl's documented default port; rank 0 serves it
UNSAMPLED_MIN_CALLS = 200
# Student t quantiles (two-sided 95 %) for 1..10 degrees of freedom; 1.96 beyond.
T95 = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228]


def common_env(args):
    """The variables every mode sets: the NCCL library and ranks per GPU."""
    env = []
    if args.nccl_lib:
        pre = os.environ.get("LD_PRELOAD", "")
        env.append("LD_PRELOAD=%s" % (args.nccl_lib + (":" + pre if pre else "")))
    if args.ranks_per_gpu > 1:
        env.append("NCCL_MULTI_RANK_GPU_ENABLE=1")
    return env


def mode_env(mode, args):
    """The variables one mode sets (shown in its JSON line)."""
    env = common_env(args)
    if mode in ("autoccl", "autoccl_ceiling"):
        env += ["NCCL_TUNER_PLUGIN=%s" % args.plugin, "NCCL_PROFILER_PLUGIN=%s" % args.plugin,
                "AUTOCCL_HTTP_PORT=%d" % args.http_port] + args.plugin_env
    if mode == "autoccl_ceiling":
        env += ["NCCL_MIN_NCHANNELS=%d" % args.ceiling,
                "AUTOCCL_STOCK_CHANNELS=%d" % args.stock_channels]
    return env


# ---- worker (one rank, under torchrun) ----------------------------------------

def build_model(torch, cfg):
    nn = torch.nn

    class Block(nn.Module):
        """Pre-norm attention + SwiGLU MLP, Llama's shape."""

        def __init__(self):
            super().__init__()
            d, ff = cfg["d"], cfg["ff"]
            self.n1 = nn.RMSNorm(d)
            self.attn = nn.MultiheadAttention(d, cfg["heads"], batch_first=True, bias=False)
            self.n2 = nn.RMSNorm(d)
            self.w1 = nn.Linear(d, ff, bias=False)
            self.w3 = nn.Linear(d, ff, bias=False)
            self.w2 = nn.Linear(ff, d, bias=False)

        def forward(self, x):
            y = self.n1(x)
            x = x + self.attn(y, y, y, need_weights=False, is_causal=False)[0]
            y = self.n2(x)
            return x + self.w2(nn.functional.silu(self.w1(y)) * self.w3(y))

    class Llama(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(cfg["vocab"], cfg["d"])
            self.blocks = nn.ModuleList(Block() for _ in range(cfg["layers"]))
            self.norm = nn.RMSNorm(cfg["d"])
            self.head = nn.Linear(cfg["d"], cfg["vocab"], bias=False)

        def forward(self, tok):
            x = self.emb(tok)
            for b in self.blocks:
                x = b(x)
            return self.head(self.norm(x))

    return Llama, Block


def exposed_share(trace_path):
    """Share of the profiled time in which an NCCL kernel runs with no other
    kernel: the communication compute does not hide."""
    with open(trace_path) as f:
        ev = json.load(f).get("traceEvents", [])
    comm, comp = [], []
    for e in ev:
        if e.get("cat") != "kernel" or "dur" not in e:
            continue
        iv = (float(e["ts"]), float(e["ts"]) + float(e["dur"]))
        (comm if "nccl" in e.get("name", "").lower() else comp).append(iv)
    if not comm:
        return None

    def union(ivs):
        out = []
        for a, b in sorted(ivs):
            if out and a <= out[-1][1]:
                out[-1][1] = max(out[-1][1], b)
            else:
                out.append([a, b])
        return out

    cu, pu = union(comm), union(comp)
    exposed, j = 0.0, 0
    for a, b in cu:  # comm minus compute, both sorted
        t = a
        while j < len(pu) and pu[j][1] <= t:
            j += 1
        k = j
        while k < len(pu) and pu[k][0] < b:
            if pu[k][0] > t:
                exposed += pu[k][0] - t
            t = max(t, pu[k][1])
            k += 1
        if t < b:
            exposed += b - t
    lo = min(x[0] for x in cu + pu)
    hi = max(x[1] for x in cu + pu)
    return exposed / (hi - lo) if hi > lo else None


def tuner_account(st):
    """From the plugin's /api/v1/state document: its net time saved (sum of
    time_saved_seconds, None when none is known), its job-level exposed
    share, and the workloads of UNSAMPLED_MIN_CALLS calls or more that no
    sample reached (neither a baseline nor a best time)."""
    if not isinstance(st, dict):
        return None, None, None
    wls = st.get("workloads") or []
    vals = [w.get("time_saved_seconds") for w in wls]
    vals = [v for v in vals if isinstance(v, (int, float))]
    unsampled = sum(1 for w in wls if (w.get("calls") or 0) >= UNSAMPLED_MIN_CALLS
                    and w.get("baseline_seconds") is None and w.get("best_seconds") is None)
    share = (st.get("job") or {}).get("exposed_share")
    return (sum(vals) if vals else None), share, unsampled


def report_account(path):
    """From the plugin's job report (AUTOCCL_REPORT, written when the
    communicators are destroyed): its net time saved per rank and the
    workloads of UNSAMPLED_MIN_CALLS calls or more with no NCCL time (no
    sample reached the search). None, None when there is no report."""
    try:
        with open(path) as f:
            rep = json.load(f)
        wls = rep.get("workloads") or []
        unsampled = sum(1 for w in wls if (w.get("calls") or 0) >= UNSAMPLED_MIN_CALLS
                        and w.get("nccl_seconds") is None)
        # what each workload did, in short: the run's record says it
        brief = [{k: w.get(k) for k in ("collective", "bytes", "calls", "state", "nccl_seconds",
                                        "speedup", "source", "budget_wait_calls")} for w in wls]
        return (rep.get("totals") or {}).get("net_saved_seconds"), unsampled, brief
    except (OSError, ValueError, AttributeError):
        return None, None, None


def tuner_state(port):
    try:
        with urllib.request.urlopen("http://127.0.0.1:%d/api/v1/state" % port, timeout=5) as r:
            return json.load(r)
    except (OSError, ValueError):
        return None


def worker(args):
    import torch
    import torch.distributed as dist

    rank = int(os.environ["RANK"])
    local = int(os.environ.get("LOCAL_RANK", rank))
    dev = local // args.ranks_per_gpu
    if dev >= torch.cuda.device_count():
        sys.exit("fsdp_llama: local rank %d wants GPU %d (--ranks-per-gpu %d), %d visible"
                 % (local, dev, args.ranks_per_gpu, torch.cuda.device_count()))
    torch.cuda.set_device(dev)
    dist.init_process_group("nccl", device_id=torch.device("cuda", dev))
    cfg = dict(vocab=32000, d=args.dim, heads=args.dim // 128, ff=int(args.dim * 8 / 3) // 64 * 64,
               layers=args.layers, seq=args.seq, batch=args.batch)
    torch.manual_seed(0)  # random weights, the same on every rank and mode
    Llama, Block = build_model(torch, cfg)
    if args.wrap == "ddp":
        # fp32 parameters, bf16 compute: gradients are AllReduced in fp32
        # buckets of --bucket-mb as backward produces them
        from torch.nn.parallel import DistributedDataParallel as DDP
        model = DDP(Llama().cuda(), device_ids=[dev], bucket_cap_mb=args.bucket_mb)
    else:
        from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
        from torch.distributed.fsdp import MixedPrecision
        from torch.distributed.fsdp.wrap import ModuleWrapPolicy
        model = FSDP(Llama().cuda(), auto_wrap_policy=ModuleWrapPolicy({Block}),
                     mixed_precision=MixedPrecision(param_dtype=torch.bfloat16,
                                                    reduce_dtype=torch.bfloat16),
                     device_id=dev, use_orig_params=True)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    g = torch.Generator(device="cuda").manual_seed(1 + rank)

    def step():
        tok = torch.randint(0, cfg["vocab"], (cfg["batch"], cfg["seq"]), device="cuda", generator=g)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            logits = model(tok)
        loss = torch.nn.functional.cross_entropy(logits.float().flatten(0, 1), tok.flatten())
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    for _ in range(args.warmup):
        step()
    torch.cuda.synchronize()
    times = []
    for _ in range(args.steps):
        t0 = time.perf_counter()
        step()
        torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
    # slowest rank per step: what the job waits for
    tt = torch.tensor(times, device="cuda", dtype=torch.float64)
    dist.all_reduce(tt, op=dist.ReduceOp.MAX)
    times = tt.tolist()
    share = None
    if args.overlap_steps > 0:
        from torch.profiler import ProfilerActivity, profile
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(args.overlap_steps):
                step()
            torch.cuda.synchronize()
        if rank == 0:
            with tempfile.TemporaryDirectory() as d:
                p = os.path.join(d, "trace.json")
                prof.export_chrome_trace(p)
                share = exposed_share(p)
    st = tuner_state(int(os.environ["AUTOCCL_HTTP_PORT"])) \
        if rank == 0 and os.environ.get("AUTOCCL_HTTP_PORT") else None
    saved, acl_share, unsampled = tuner_account(st)
    known = st is not None
    world = dist.get_world_size()  # the group is gone after the next line
    dist.destroy_process_group()
    report = os.environ.get("AUTOCCL_REPORT", "").replace("%r", str(local))
    brief = None
    if rank == 0 and report:
        # the job report exists once the communicators are gone: the
        # plugin's final account (also where its endpoint is not built)
        r_saved, r_unsampled, brief = report_account(report)
        if r_unsampled is not None:
            saved, unsampled, known = r_saved, r_unsampled, True
    if rank == 0:
        rec = {"kind": "torch_step_run", "mode": args.mode, "rep": args.rep, "wrap": args.wrap,
               "median_step_s": statistics.median(times), "steps": len(times),
               "step_s": times, "time_saved_s": saved, "exposed_comm_share": share,
               "autoccl_exposed_share": acl_share,
               "workloads_unsampled": unsampled if known else None,
               "workloads": brief,
               "ranks_per_gpu": args.ranks_per_gpu,
               "world": world, "torch": torch.__version__,
               "nccl_version": ".".join(map(str, torch.cuda.nccl.version())), "model": cfg}
        with open(args.result, "w") as f:
            f.write(json.dumps(rec) + "\n")


# ---- driver -------------------------------------------------------------------

def launch(mode, rep, args, out):
    env = {k: v for k, v in os.environ.items() if k not in STRIP and not k.startswith("AUTOCCL_")}
    for kv in mode_env(mode, args):
        k, v = kv.split("=", 1)
        env[k] = v
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as tf:
        result = tf.name
    rdir = tempfile.mkdtemp(prefix="fsdp-llama-report.")
    if mode != "nccl":
        env["AUTOCCL_REPORT"] = os.path.join(rdir, "report-%r.json")
    cmd = [args.torchrun, "--standalone", "--nproc-per-node", str(args.nproc), __file__, "--worker",
           "--mode", mode, "--rep", str(rep), "--result", result, "--steps", str(args.steps),
           "--warmup", str(args.warmup), "--overlap-steps", str(args.overlap_steps),
           "--dim", str(args.dim), "--layers", str(args.layers), "--seq", str(args.seq),
           "--batch", str(args.batch), "--wrap", args.wrap, "--bucket-mb", str(args.bucket_mb),
           "--ranks-per-gpu", str(args.ranks_per_gpu)]
    t0 = time.time()
    p = subprocess.run(cmd, env=env, timeout=args.timeout)
    rec = None
    try:
        with open(result) as f:
            rec = json.loads(f.read())
    except (OSError, ValueError):
        pass
    finally:
        if os.path.exists(result):
            os.unlink(result)
        for f in os.listdir(rdir):
            os.unlink(os.path.join(rdir, f))
        os.rmdir(rdir)
    if p.returncode != 0 or rec is None:
        print("fsdp_llama: %s rep %d failed (exit %d)" % (mode, rep, p.returncode), file=sys.stderr)
        return None
    rec["env"] = mode_env(mode, args)
    rec["wall_s"] = round(time.time() - t0, 1)
    out.write(json.dumps(rec) + "\n")
    out.flush()
    return rec


def ratio_interval(runs, mode):
    """NCCL's step over the mode's, paired by repetition: the geometric mean
    and its 95 % interval (None, None with fewer than two pairs)."""
    by = {}
    for r in runs:
        by.setdefault(r["rep"], {})[r["mode"]] = r["median_step_s"]
    logs = [math.log(p["nccl"] / p[mode]) for p in by.values() if "nccl" in p and mode in p]
    if len(logs) < 2:
        return None, None
    m, se = statistics.fmean(logs), statistics.stdev(logs) / math.sqrt(len(logs))
    t = T95[len(logs) - 2] if len(logs) - 2 < len(T95) else 1.96
    return math.exp(m - t * se), math.exp(m + t * se)


def summarize(runs, args):
    lines, base = [], None
    for mode in args.modes:
        rs = [r for r in runs if r["mode"] == mode]
        if not rs:
            continue
        med = [r["median_step_s"] for r in rs]
        saved = [r["time_saved_s"] for r in rs if r.get("time_saved_s") is not None]
        share = [r["exposed_comm_share"] for r in rs if r.get("exposed_comm_share") is not None]
        ashare = [r["autoccl_exposed_share"] for r in rs
                  if r.get("autoccl_exposed_share") is not None]
        unsampled = [r["workloads_unsampled"] for r in rs
                     if r.get("workloads_unsampled") is not None]
        line = {"kind": "torch_step", "mode": mode, "wrap": args.wrap,
                "median_step_s": statistics.median(med),
                "reps": len(rs), "steps": rs[0]["steps"], "env": mode_env(mode, args),
                "rep_median_step_s": med,
                "time_saved_s": statistics.median(saved) if saved else None,
                "exposed_comm_share": statistics.median(share) if share else None,
                "autoccl_exposed_share": statistics.median(ashare) if ashare else None,
                "workloads_unsampled": max(unsampled) if unsampled else None,
                "ranks_per_gpu": args.ranks_per_gpu,
                "nccl_version": rs[0].get("nccl_version"), "world": rs[0].get("world")}
        if mode == "nccl":
            base = line["median_step_s"]
        lines.append(line)
    for line in lines:
        line["ratio_vs_nccl"] = base / line["median_step_s"] if base else None
        line["ratio_low"], line["ratio_high"] = ratio_interval(runs, line["mode"]) \
            if base and line["mode"] != "nccl" else (None, None)
    return lines


def driver(args):
    if any(m != "nccl" for m in args.modes) and not (args.plugin and os.path.isfile(args.plugin)):
        sys.exit("fsdp_llama: modes %s need --plugin PATH (libnccl-tuner-autoccl.so)" % args.modes)
    args.plugin = os.path.abspath(args.plugin) if args.plugin else ""
    runs = []
    with open(args.out, "a") as out:
        for rep in range(args.reps):
            order = args.modes[rep % len(args.modes):] + args.modes[:rep % len(args.modes)]
            for mode in order:
                r = launch(mode, rep, args, out)
                if r:
                    runs.append(r)
        lines = summarize(runs, args)
        for line in lines:
            out.write(json.dumps(line) + "\n")
    for line in lines:
        iv = ("" if line["ratio_low"] is None
              else " (95 %% %.3f-%.3f)" % (line["ratio_low"], line["ratio_high"]))
        print("%-16s median step %.4f s over %d reps x %d steps  x%s%s vs nccl  saved %s  "
              "exposed %s (autoccl's %s)  unsampled %s"
              % (line["mode"], line["median_step_s"], line["reps"], line["steps"],
                 "%.3f" % line["ratio_vs_nccl"] if line["ratio_vs_nccl"] else "-", iv,
                 line["time_saved_s"], line["exposed_comm_share"], line["autoccl_exposed_share"],
                 line["workloads_unsampled"]))
    return 0 if len(lines) == len(args.modes) else 1


def parse(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--modes", default=",".join(MODES))
    ap.add_argument("--plugin", default="")
    ap.add_argument("--ceiling", type=int, default=32)
    ap.add_argument("--stock-channels", type=int, default=24)
    ap.add_argument("--nproc", type=int, default=2)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--overlap-steps", type=int, default=5)
    ap.add_argument("--no-overlap", action="store_true")
    ap.add_argument("--dim", type=int, default=2048)
    ap.add_argument("--layers", type=int, default=8)
    ap.add_argument("--seq", type=int, default=1024)
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--http-port", type=int, default=HTTP_PORT_BASE)
    ap.add_argument("--plugin-env", action="append", default=[], metavar="KEY=VALUE",
                    help="a variable for every plugin launch, e.g. AUTOCCL_TRACE=/tmp/t-%%r.jsonl "
                         "(repeatable; the launches otherwise drop AUTOCCL_* from the environment)")
    ap.add_argument("--wrap", choices=("fsdp", "ddp"), default="fsdp")
    ap.add_argument("--bucket-mb", type=int, default=25, help="DDP's gradient bucket size")
    ap.add_argument("--ranks-per-gpu", type=int, default=1)
    ap.add_argument("--nccl-lib", default="", help="libnccl.so.2 to preload (LD_PRELOAD)")
    ap.add_argument("--torchrun", default="torchrun")
    ap.add_argument("--timeout", type=float, default=600)
    ap.add_argument("--out", default="torch.jsonl")
    # worker side (started by torchrun)
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--mode", default="nccl", help=argparse.SUPPRESS)
    ap.add_argument("--rep", type=int, default=0, help=argparse.SUPPRESS)
    ap.add_argument("--result", default="", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    a.modes = [m for m in a.modes.split(",") if m]
    bad = [m for m in a.modes if m not in MODES]
    if bad or not a.modes:
        ap.error("--modes: %s (choose from %s)" % (bad or "empty", ", ".join(MODES)))
    if a.ceiling <= a.stock_channels:
        ap.error("--ceiling must be above --stock-channels")
    if a.no_overlap:
        a.overlap_steps = 0
    bad = [kv for kv in a.plugin_env if "=" not in kv or not kv.split("=", 1)[0]]
    if bad:
        ap.error("--plugin-env %s: give KEY=VALUE" % bad[0])
    if a.ranks_per_gpu < 1 or a.nproc % a.ranks_per_gpu:
        ap.error("--ranks-per-gpu must be >= 1 and divide --nproc")
    if a.nccl_lib and not a.worker:
        if not os.path.isfile(a.nccl_lib):
            ap.error("--nccl-lib %s: no such file" % a.nccl_lib)
        a.nccl_lib = os.path.abspath(a.nccl_lib)
    return a


if __name__ == "__main__":
    a = parse(sys.argv[1:])
    sys.exit(worker(a) or 0 if a.worker else driver(a))
