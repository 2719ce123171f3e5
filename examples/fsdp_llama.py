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
   "tail_step_s": ..., "ratio_tail_vs_nccl": ...,
   "time_saved_s": ..., "exposed_comm_share": ...,
   "torch_exposed_of_comm": ..., "autoccl_exposed_share": ...,
   "overlap_gap_pp": ..., "torch_overlap_by_coll": {...},
   "autoccl_overlap_by_coll": {...}, "workload_overlap_gap_max": ...,
   "workloads_unsampled": ...}
ratio_vs_nccl is NCCL's median step over the mode's (above 1: faster);
ratio_low/high its 95 % interval over the repetitions, each mode's launch
paired with NCCL's of the same repetition (null with fewer than 2).
tail_step_s is the median over the mode's launches of each launch's median
step over its last quarter of steps, once the tuner has had the run to
decide: a tuned job's gain grows over its first steps, which the median of
all steps dilutes; ratio_tail_vs_nccl is NCCL's over the mode's.
time_saved_s is the tuner's own net time saved per rank, from its job report
(AUTOCCL_REPORT, set for every autoccl launch), else the sum of its
workloads' time_saved_seconds from its /api/v1/state endpoint at the end of
the run; null where the plugin is off or reports none. workloads_unsampled
is the number of its workloads with 200 calls or more that no sample reached
(no NCCL time in the report; neither a baseline nor a best time at the
endpoint). workloads_waiting_early is the most, over the mode's launches, of
those workloads that had not begun measuring (not yet seen, or waiting with
no time of their own) when rank 0 read the plugin's state at 30 % of the
run's steps, warm-up included; each
torch_step_run line lists them (collective, bytes, state, calls,
budget_wait_calls and budget_wait_for then) and gives that step as early_step. Each autoccl
torch_step_run line also has reports_by_rank, every
local rank's own account (net saved, and each workload's state, times, net
saved and exploration cost): a rank that arrives first waits in its kernels.

Exposed communication, two ways. torch's figures come from a
torch.profiler trace of rank 0 over a few extra steps after the timed ones,
begun together on every rank and each synchronized as the timed ones are
(--overlap-steps, 5; --no-overlap skips them; --torch-trace DIR keeps that
trace); autoccl's from rank 0's
/api/v1/state at the end of the run (null where the plugin is off or has not
measured an overlap). A kernel whose name contains "nccl" is communication,
every other kernel compute.
  exposed_comm_share     the share of the trace's span in which an NCCL
                         kernel runs and no compute kernel does
  torch_exposed_of_comm  that exposed time over the time some NCCL kernel
                         runs: a share of communication time
  autoccl_exposed_share  the plugin's job-level exposed_share: its exposed
                         seconds over its collective seconds, also a share of
                         communication time, over the whole run
  autoccl_exposed_share_tail  the same over the last quarter of the timed
                         steps (rank 0 reads the state before them too): the
                         stretch nearest torch's steps, but from a quarter of
                         the CUPTI windows; null without both
  overlap_gap_pp         100 x |autoccl_exposed_share - torch_exposed_of_comm|
                         (percentage points; null unless both are known)
  torch_overlap_by_coll  per collective (AllGather, ReduceScatter, AllReduce,
                         Broadcast, ... from the kernel name, "other" when it
                         names none): the share of its NCCL kernel time that
                         compute overlaps, 1 - exposed / kernel time
  autoccl_overlap_by_coll  per collective: the plugin's workload overlaps,
                         weighted by each workload's collective_seconds (calls
                         x bytes where that is missing), workloads without an
                         overlap left out; null when none has one
  autoccl_overlap_by_workload  (torch_step_run lines) each workload with an
                         overlap: comm, rank, collective, bytes, calls, state,
                         overlap, exposed_share, overlap_tail and
                         exposed_share_tail (over the last quarter of the
                         steps; null without collective time there),
                         collective_seconds, speedup
  torch_overlap_by_workload  (torch_step_run lines) per (collective, bytes),
                         bytes as autoccl counts them (the larger buffer:
                         AllGather's output, ReduceScatter's input), from the
                         NCCL kernels that carry PyTorch's collective metadata
                         (sizes and dtype, copied from the collective's CPU
                         op; the profiled steps record CPU ops for it): its
                         kernel time, overlap and number of kernels; null
                         where no kernel carries it
  overlap_gap_by_workload  (torch_step_run lines) each autoccl workload with
                         an overlap that torch's trace also saw: autoccl's
                         overlap, torch's, and the gap between them
  workload_overlap_gap_max  the largest of those gaps (the summary line: the
                         largest over the mode's launches); null unless some
                         workload was seen by both
  autoccl_profiler       (torch_step_run lines) the profiler block of the
                         plugin's /api/v1/state (samples, stale and
                         overlap_unknown counts, CUPTI windows); null without it
  retunes_max            (the summary line) the most re-tunes one rank's
                         workloads made in one of the mode's launches, from
                         the job reports (reports_by_rank); null without them
  cupti_backed_off_runs  (the summary line) how many of the mode's launches
                         ended with the plugin's CUPTI backed off (another
                         CUPTI client, such as PyTorch's own profiler, took
                         CUPTI; samples then come from NCCL's events); null
                         when no launch reported its profiler
Compare torch_exposed_of_comm with autoccl_exposed_share (and its last
quarter), not exposed_comm_share: the span share divides by the whole
step, the other two by communication time. The two sides watch different
steps: torch.profiler takes CUPTI while it runs, so the plugin measures
the steps before it. The summary line carries the median
of each figure over the mode's launches, per collective for the
*_by_coll maps; each torch_step_run line carries its launch's figures and
also torch_comm_s_by_coll, each collective's NCCL kernel time (seconds)
in the profiled steps, and overlap_steps, how many steps those were.

A mode whose launches all failed gets no line: nothing is reported without
a run.

A launch that stops making progress (past --timeout, or once a launch
finished, past --stall-factor times the longest so far) counts as hung:
every thread's stack of its processes goes to OUT.hang-MODE-rREP.txt next
to --out (py-spy where installed, else gdb, else each thread's kernel wait
channel), the processes are killed, a {"kind": "torch_step_hang", "mode",
"rep", "wrap", "limit_s", "stacks"} line is written, and the run goes on.

The worker side (--worker, started by torchrun) needs PyTorch with CUDA;
the driver needs only Python.
"""
import argparse
import gzip
import json
import math
import os
import re
import shutil
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


# NCCL kernel names carry the collective after the prefix:
# "ncclDevKernel_AllGather_RING_LL(...)", "ncclKernel_ReduceScatter_...".
COLLECTIVES = ("AllGather", "ReduceScatter", "AllReduce", "Broadcast", "Reduce", "SendRecv",
               "Send", "Recv", "AllToAll")


def nccl_collective(name):
    """The collective an NCCL kernel's name names; "other" when none is known."""
    parts = name.split("(", 1)[0].split("_")
    return parts[1] if len(parts) > 1 and parts[1] in COLLECTIVES else "other"


def union(ivs):
    """The union of [a, b) intervals, sorted and disjoint."""
    out = []
    for a, b in sorted(ivs):
        if out and a <= out[-1][1]:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return out


def length(ivs):
    return sum(b - a for a, b in ivs)


def uncovered(cu, pu):
    """Length of the disjoint sorted intervals cu that pu (likewise) does not cover."""
    exposed, j = 0.0, 0
    for a, b in cu:
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
    return exposed


# Element sizes of the dtypes PyTorch names in a collective's metadata.
DTYPE_BYTES = {"Float": 4, "BFloat16": 2, "Half": 2, "Double": 8, "Long": 8, "Int": 4,
               "Short": 2, "Char": 1, "Byte": 1, "Bool": 1, "Float8_e4m3fn": 1, "Float8_e5m2": 1}


def kernel_bytes(args):
    """The bytes autoccl counts for the collective a kernel ran, from the
    metadata PyTorch's profiler copies from the collective's CPU op onto its
    kernels ("In msg nelems", "Out msg nelems", "dtype"): the larger buffer
    (AllGather's output, ReduceScatter's input: the whole buffer, as the
    tuner counts it). None where the kernel carries none."""
    try:
        n = max(int(args["In msg nelems"]), int(args["Out msg nelems"]))
        size = DTYPE_BYTES[str(args["dtype"]).strip('"')]
    except (KeyError, TypeError, ValueError):
        return None
    return n * size if n > 0 else None


def trace_kernels(trace_path):
    """The kernels of a chrome trace: {(collective, bytes): [(start, end),
    ...]} for the NCCL ones (bytes None where the kernel carries no
    collective metadata) and the list of the others (compute), in
    microseconds."""
    with open(trace_path) as f:
        ev = json.load(f).get("traceEvents", [])
    comm, comp = {}, []
    for e in ev:
        if e.get("cat") != "kernel" or "dur" not in e:
            continue
        iv = (float(e["ts"]), float(e["ts"]) + float(e["dur"]))
        name = e.get("name", "")
        if "nccl" in name.lower():
            key = (nccl_collective(name), kernel_bytes(e.get("args") or {}))
            comm.setdefault(key, []).append(iv)
        else:
            comp.append(iv)
    return comm, comp


def kernel_overlap(ivs, pu):
    """NCCL kernel time of intervals ivs, and the share of it the compute
    union pu covers (None without kernel time)."""
    u = union(ivs)
    t = length(u)
    return {"comm_s": t * 1e-6, "overlap": 1.0 - uncovered(u, pu) / t if t > 0 else None}


def trace_overlap(trace_path):
    """Exposed communication in a torch.profiler trace, None without an NCCL
    kernel: span_share, the share of the trace's span in which an NCCL kernel
    runs and no compute kernel does; exposed_of_comm, that exposed time over
    the time some NCCL kernel runs (autoccl's exposed_share); by_coll, per
    collective, its NCCL kernel time (comm_s) and the share of it compute
    overlaps (overlap = 1 - exposed / comm_s); by_workload, the same per
    (collective, bytes) as autoccl names its workloads, a list sorted so,
    from the kernels that carry PyTorch's collective metadata (None where
    none does)."""
    comm, comp = trace_kernels(trace_path)
    if not comm:
        return None
    cu, pu = union([iv for ivs in comm.values() for iv in ivs]), union(comp)
    exposed, busy = uncovered(cu, pu), length(cu)
    lo, hi = min(x[0] for x in cu + pu), max(x[1] for x in cu + pu)
    per = {}
    for (coll, _), ivs in comm.items():
        per.setdefault(coll, []).extend(ivs)
    by_coll = {coll: kernel_overlap(ivs, pu) for coll, ivs in per.items()}
    by_workload = [dict(collective=coll, bytes=b, kernels=len(ivs), **kernel_overlap(ivs, pu))
                   for (coll, b), ivs in sorted(kv for kv in comm.items() if kv[0][1] is not None)]
    return {"span_share": exposed / (hi - lo) if hi > lo else None,
            "exposed_of_comm": exposed / busy if busy > 0 else None, "by_coll": by_coll,
            "by_workload": by_workload or None}


def workload_gaps(acl, torch_wl):
    """Each autoccl workload with an overlap beside torch's for the same
    collective and bytes: {collective, bytes, autoccl, torch, gap}, gap the
    absolute difference; workloads torch's trace did not see are left out.
    None unless both sides have per-workload figures."""
    if not acl or not torch_wl:
        return None
    tw = {(w["collective"], w["bytes"]): w["overlap"] for w in torch_wl if num(w.get("overlap"))}
    out = []
    for w in acl:
        t = tw.get((w.get("collective"), w.get("bytes")))
        if num(w.get("overlap")) and t is not None:
            out.append({"collective": w["collective"], "bytes": w["bytes"], "autoccl": w["overlap"],
                        "torch": t, "gap": abs(w["overlap"] - t)})
    return out


def exposed_share(trace_path):
    """Share of the profiled time in which an NCCL kernel runs with no other
    kernel: the communication compute does not hide."""
    ov = trace_overlap(trace_path)
    return ov["span_share"] if ov else None


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


def num(x):
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def tuner_overlap(st):
    """From the plugin's /api/v1/state document: per collective, the overlap
    of its workloads weighted by their collective time (collective_seconds;
    calls x bytes where it is missing). Workloads without an overlap are
    skipped; None when none has one."""
    if not isinstance(st, dict):
        return None
    acc = {}
    for w in st.get("workloads") or []:
        o = w.get("overlap")
        if not num(o):
            continue
        wt = w.get("collective_seconds")
        if not num(wt) or wt <= 0:
            wt = (w.get("calls") or 0) * (w.get("bytes") or 0)
        if wt <= 0:
            continue
        s = acc.setdefault(w.get("collective") or "other", [0.0, 0.0])
        s[0] += o * wt
        s[1] += wt
    return {c: s[0] / s[1] for c, s in acc.items()} or None


def nccl_runtime_version():
    """The NCCL this process runs: the preloaded library where one is given
    (torch.cuda.nccl.version() says the one PyTorch was built with)."""
    try:
        import ctypes
        v = ctypes.c_int(0)
        if ctypes.CDLL("libnccl.so.2").ncclGetVersion(ctypes.byref(v)) == 0 and v.value > 0:
            return "%d.%d.%d" % (v.value // 10000, v.value % 10000 // 100, v.value % 100)
    except (OSError, AttributeError):
        pass
    import torch
    return ".".join(map(str, torch.cuda.nccl.version()))


def share_between(a, b):
    """The exposed share between two readings of the same counters (dicts
    with collective_seconds and exposed_seconds): the growth of the exposed
    seconds over that of the collective seconds; None unless both readings
    have them and collective time passed."""
    if not (isinstance(a, dict) and isinstance(b, dict)):
        return None
    c0, c1, e0, e1 = (x.get(k) for k in ("collective_seconds", "exposed_seconds") for x in (a, b))
    if not all(num(v) for v in (c0, c1, e0, e1)) or c1 - c0 <= 0:
        return None
    return min(max((e1 - e0) / (c1 - c0), 0.0), 1.0)


def tail_share(mid, end):
    """The plugin's job-level exposed share over the steps between two
    /api/v1/state documents; None unless both have it and time passed."""
    if not (isinstance(mid, dict) and isinstance(end, dict)):
        return None
    return share_between(mid.get("job"), end.get("job"))


def workload_key(w):
    """A workload of an /api/v1/state document, the same in two readings."""
    return (w.get("comm"), w.get("rank"), w.get("collective"), w.get("bytes"))


def tail_overlaps(acl_wl, mid, end):
    """tuner_overlap_by_workload's list with each workload's overlap and
    exposed share over the steps between mid and end added (overlap_tail,
    exposed_share_tail; null without collective time in between)."""
    if not acl_wl or not isinstance(mid, dict) or not isinstance(end, dict):
        return acl_wl
    before = {workload_key(w): w for w in mid.get("workloads") or []}
    after = {workload_key(w): w for w in end.get("workloads") or []}
    out = []
    for w in acl_wl:
        share = share_between(before.get(workload_key(w)), after.get(workload_key(w)))
        out.append(dict(w, exposed_share_tail=share,
                        overlap_tail=None if share is None else 1.0 - share))
    return out


def tuner_overlap_by_workload(st):
    """From the plugin's /api/v1/state document: each workload with an
    overlap, with what it ran and how long (the per-collective figure is
    their weighted mean); None when none has one."""
    if not isinstance(st, dict):
        return None
    keys = ("comm", "rank", "collective", "bytes", "calls", "state", "overlap", "exposed_share",
            "collective_seconds", "speedup")
    out = [{k: w.get(k) for k in keys} for w in st.get("workloads") or [] if num(w.get("overlap"))]
    return out or None


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
        # what each workload did, in short: the run's record says it, and
        # where the account's saving and cost came from
        brief = [{k: w.get(k) for k in ("collective", "bytes", "calls", "state", "nccl_seconds",
                                        "speedup", "source", "budget_wait_calls",
                                        "net_saved_seconds", "exploration_cost_seconds",
                                        "retunes", "retune_cause", "clock_offset_us")}
                 for w in wls]
        return (rep.get("totals") or {}).get("net_saved_seconds"), unsampled, brief
    except (OSError, ValueError, AttributeError):
        return None, None, None


def reports_by_rank(rdir):
    """Every local rank's job report in rdir (report-<rank>.json), each rank's
    own account: [{rank, net_saved_seconds, workloads}] by rank, the
    workloads in short as report_account gives them; None when there is
    none. A rank that arrives first waits in its kernels for the others, so
    the ranks' accounts can differ; the record's time_saved_s is rank 0's."""
    out = []
    for name in os.listdir(rdir) if os.path.isdir(rdir) else []:
        m = re.fullmatch(r"report-(\d+)\.json", name)
        if not m:
            continue
        saved, _, brief = report_account(os.path.join(rdir, name))
        if brief is not None:
            out.append({"rank": int(m.group(1)), "net_saved_seconds": saved, "workloads": brief})
    return sorted(out, key=lambda r: r["rank"]) or None


EARLY_SHARE = 0.3  # the run's share of steps by which a workload should measure


def waiting_early(early, end):
    """The workloads of UNSAMPLED_MIN_CALLS calls or more at the end of the
    run (/api/v1/state document end) that had not begun measuring when rank 0
    read the state at EARLY_SHARE of the run's steps (document early): not
    seen yet, or in a waiting-* state with no time of its own (neither a
    baseline nor a best time; one exploring waits for its budget between
    candidates). Each with its collective, bytes, state then, the calls
    its budget still needed (budget_wait_calls) and what for
    (budget_wait_for). None unless both documents are known."""
    if not (isinstance(early, dict) and isinstance(end, dict)):
        return None
    then = {workload_key(w): w for w in early.get("workloads") or []}
    out = []
    for w in end.get("workloads") or []:
        if (w.get("calls") or 0) < UNSAMPLED_MIN_CALLS:
            continue
        e = then.get(workload_key(w)) or {}
        state = e.get("state")
        timed = e.get("baseline_seconds") is not None or e.get("best_seconds") is not None
        if state is None or (str(state).startswith("waiting") and not timed):
            out.append({"collective": w.get("collective"), "bytes": w.get("bytes"),
                        "state": state, "calls": e.get("calls"),
                        "budget_wait_calls": e.get("budget_wait_calls"),
                        "budget_wait_for": e.get("budget_wait_for")})
    return out


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
    port = int(os.environ.get("AUTOCCL_HTTP_PORT") or 0) if rank == 0 else 0
    mid = None  # the plugin's state before the last quarter of the steps
    early = None  # and at EARLY_SHARE of the run's steps, warm-up included
    early_i = max(math.ceil(EARLY_SHARE * (args.warmup + args.steps)) - args.warmup, 0)
    for i in range(args.steps):
        if port and i == early_i:
            early = tuner_state(port)  # between steps, outside their times
        if port and i == args.steps * 3 // 4:
            mid = tuner_state(port)
        t0 = time.perf_counter()
        step()
        torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
    # slowest rank per step: what the job waits for
    tt = torch.tensor(times, device="cuda", dtype=torch.float64)
    dist.all_reduce(tt, op=dist.ReduceOp.MAX)
    times = tt.tolist()
    ov = None
    if args.overlap_steps > 0:
        from torch.profiler import ProfilerActivity, profile
        # CPU too: PyTorch copies a collective's metadata (sizes, dtype)
        # from its CPU op onto its kernels, which names the workload
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            # the profiler starts on each rank at its own pace, and a rank
            # ahead waits in every collective of the steps that follow (on
            # one H100 some launches' DDP steps held 35-66 ms of NCCL
            # kernels, others 11-12 ms): the ranks start together, and each
            # step runs as the timed ones do, synchronized
            dist.barrier()
            torch.cuda.synchronize()
            for _ in range(args.overlap_steps):
                step()
                torch.cuda.synchronize()
        if rank == 0:
            with tempfile.TemporaryDirectory() as d:
                p = os.path.join(d, "trace.json")
                prof.export_chrome_trace(p)
                ov = trace_overlap(p)
                if args.torch_trace:
                    keep = os.path.join(args.torch_trace,
                                        "torch-trace-%s-r%d.json.gz" % (args.mode, args.rep))
                    with open(p, "rb") as fi, gzip.open(keep, "wb", compresslevel=3) as fo:
                        shutil.copyfileobj(fi, fo)
    st = tuner_state(port) if port else None
    saved, acl_share, unsampled = tuner_account(st)
    acl_overlap = tuner_overlap(st)
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
        acl_wl = tail_overlaps(tuner_overlap_by_workload(st), mid, st)
        gaps = workload_gaps(acl_wl, ov["by_workload"] if ov else None)
        rec = {"kind": "torch_step_run", "mode": args.mode, "rep": args.rep, "wrap": args.wrap,
               "median_step_s": statistics.median(times), "steps": len(times),
               "step_s": times, "time_saved_s": saved,
               "exposed_comm_share": ov["span_share"] if ov else None,
               "torch_exposed_of_comm": ov["exposed_of_comm"] if ov else None,
               "torch_overlap_by_coll":
                   {c: v["overlap"] for c, v in ov["by_coll"].items()} if ov else None,
               "torch_comm_s_by_coll":
                   {c: v["comm_s"] for c, v in ov["by_coll"].items()} if ov else None,
               "autoccl_exposed_share": acl_share,
               "autoccl_exposed_share_tail": tail_share(mid, st),
               "autoccl_overlap_by_coll": acl_overlap,
               "autoccl_overlap_by_workload": acl_wl,
               "torch_overlap_by_workload": ov["by_workload"] if ov else None,
               "overlap_gap_by_workload": gaps,
               "workload_overlap_gap_max": max((g["gap"] for g in gaps), default=None)
               if gaps is not None else None,
               "autoccl_profiler": st.get("profiler") if isinstance(st, dict) else None,
               "workloads_unsampled": unsampled if known else None,
               "early_step": args.warmup + early_i if early is not None else None,
               "workloads_waiting_early": waiting_early(early, st),
               "workloads": brief,
               "overlap_steps": args.overlap_steps if ov else None,
               "ranks_per_gpu": args.ranks_per_gpu,
               "world": world, "torch": torch.__version__,
               "nccl_version": nccl_runtime_version(), "model": cfg}
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
    if args.torch_trace:
        cmd += ["--torch-trace", args.torch_trace]
    t0 = time.time()
    limit = launch_limit(args)
    p = subprocess.Popen(cmd, env=env)
    was_hung = False
    try:
        p.wait(timeout=limit)
    except subprocess.TimeoutExpired:
        hung(p, mode, rep, args, out, limit)
        was_hung = True
    rec = None
    by_rank = reports_by_rank(rdir) if mode != "nccl" else None
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
        if not was_hung:
            print("fsdp_llama: %s rep %d failed (exit %s)" % (mode, rep, p.returncode),
                  file=sys.stderr)
        return None
    rec["env"] = mode_env(mode, args)
    rec["wall_s"] = round(time.time() - t0, 1)
    args.walls.append(rec["wall_s"])
    if by_rank:
        rec["reports_by_rank"] = by_rank
    out.write(json.dumps(rec) + "\n")
    out.flush()
    return rec


def launch_limit(args):
    """Seconds a launch may take: --timeout, and once a launch finished,
    --stall-factor times the longest so far (at least 60 s): a launch that
    runs that much longer than its peers has stopped making progress."""
    walls = getattr(args, "walls", [])
    if args.stall_factor > 0 and walls:
        return min(args.timeout, max(60.0, args.stall_factor * max(walls)))
    return args.timeout


def descendants(root):
    """root and every process below it (torchrun's workers may sit in
    sessions of their own)."""
    kids = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open("/proc/%s/stat" % d) as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
                kids.setdefault(ppid, []).append(int(d))
            except (OSError, ValueError, IndexError):
                pass
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo.extend(kids.get(pid, []))
    return sorted(out)


def stacks_of(pids):
    """Every thread's stack of the launch's processes, with whatever this
    machine has: py-spy (Python and native frames), else gdb, else the
    kernel's wait channel per thread."""
    text = []
    for pid in pids:
        try:
            with open("/proc/%d/cmdline" % pid, "rb") as f:
                what = f.read().replace(b"\0", b" ").decode(errors="replace")[:200]
        except OSError:
            continue
        text.append("==== pid %d: %s" % (pid, what))
        if shutil.which("py-spy"):
            cmd = ["py-spy", "dump", "--native", "--pid", str(pid)]
        elif shutil.which("gdb"):
            cmd = ["gdb", "-p", str(pid), "-batch", "-ex", "thread apply all bt"]
        else:
            cmd = None
        if cmd:
            try:
                r = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
                text.append(r.stdout + r.stderr)
            except (OSError, subprocess.TimeoutExpired) as e:
                text.append("%s: %s" % (cmd[0], e))
        for t in sorted(os.listdir("/proc/%d/task" % pid)) if os.path.isdir("/proc/%d/task" % pid) else []:
            try:
                with open("/proc/%d/task/%s/wchan" % (pid, t)) as f:
                    wchan = f.read().strip()
                with open("/proc/%d/task/%s/comm" % (pid, t)) as f:
                    comm = f.read().strip()
                text.append("  thread %s (%s): waiting in %s" % (t, comm, wchan or "-"))
            except OSError:
                pass
    return "\n".join(text) + "\n"


def hung(p, mode, rep, args, out, limit):
    """A launch that ran past its limit: its stacks go next to --out, then
    it is killed and the run goes on; a torch_step_hang line says so."""
    path = "%s.hang-%s-r%d.txt" % (os.path.splitext(args.out)[0], mode, rep)
    pids = descendants(p.pid)
    try:
        with open(path, "w") as f:
            f.write(stacks_of(pids))
    except OSError:
        path = None
    for sig in (15, 9):
        for pid in pids:
            try:
                os.kill(pid, sig)
            except OSError:
                pass
        try:
            p.wait(timeout=10)
            break
        except subprocess.TimeoutExpired:
            pass
    print("fsdp_llama: %s rep %d made no progress within %.0f s (a hang); stacks: %s; killed"
          % (mode, rep, limit, path or "none written"), file=sys.stderr)
    out.write(json.dumps({"kind": "torch_step_hang", "mode": mode, "rep": rep,
                          "wrap": args.wrap, "limit_s": round(limit, 1),
                          "stacks": os.path.basename(path) if path else None}) + "\n")
    out.flush()


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


def tail_median(run):
    """The median step of a launch's last quarter of steps (None without
    its step times)."""
    s = run.get("step_s") or []
    return statistics.median(s[-max(1, len(s) // 4):]) if s else None


def median_of(rs, key):
    """The median of a field over runs, None where no run has it."""
    vals = [r[key] for r in rs if r.get(key) is not None]
    return statistics.median(vals) if vals else None


def median_by_coll(rs, key):
    """Per collective, the median over runs of a {collective: value} field."""
    by = {}
    for r in rs:
        for c, v in (r.get(key) or {}).items():
            if v is not None:
                by.setdefault(c, []).append(v)
    return {c: statistics.median(v) for c, v in sorted(by.items())} or None


def overlap_gap_pp(line):
    """Percentage points between autoccl's exposed share (the job's, as the
    plugin reports it) and torch's, both shares of communication time; None
    unless both are known."""
    a, t = line.get("autoccl_exposed_share"), line.get("torch_exposed_of_comm")
    return 100.0 * abs(a - t) if a is not None and t is not None else None


def summarize(runs, args):
    lines, base = [], None
    for mode in args.modes:
        rs = [r for r in runs if r["mode"] == mode]
        if not rs:
            continue
        med = [r["median_step_s"] for r in rs]
        tails = [t for t in map(tail_median, rs) if t is not None]
        unsampled = [r["workloads_unsampled"] for r in rs
                     if r.get("workloads_unsampled") is not None]
        line = {"kind": "torch_step", "mode": mode, "wrap": args.wrap,
                "median_step_s": statistics.median(med),
                "reps": len(rs), "steps": rs[0]["steps"], "env": mode_env(mode, args),
                "rep_median_step_s": med,
                "tail_step_s": statistics.median(tails) if tails else None,
                "time_saved_s": median_of(rs, "time_saved_s"),
                "exposed_comm_share": median_of(rs, "exposed_comm_share"),
                "torch_exposed_of_comm": median_of(rs, "torch_exposed_of_comm"),
                "autoccl_exposed_share": median_of(rs, "autoccl_exposed_share"),
                "autoccl_exposed_share_tail": median_of(rs, "autoccl_exposed_share_tail"),
                "torch_overlap_by_coll": median_by_coll(rs, "torch_overlap_by_coll"),
                "autoccl_overlap_by_coll": median_by_coll(rs, "autoccl_overlap_by_coll"),
                "workloads_unsampled": max(unsampled) if unsampled else None,
                "ranks_per_gpu": args.ranks_per_gpu,
                "nccl_version": rs[0].get("nccl_version"), "world": rs[0].get("world")}
        line["overlap_gap_pp"] = overlap_gap_pp(line)
        wg = [r["workload_overlap_gap_max"] for r in rs if r.get("workload_overlap_gap_max") is not None]
        line["workload_overlap_gap_max"] = max(wg) if wg else None
        prof = [r["autoccl_profiler"] for r in rs if isinstance(r.get("autoccl_profiler"), dict)]
        line["cupti_backed_off_runs"] = \
            sum(1 for p in prof if p.get("cupti_backed_off")) if prof else None
        rt = [sum(w.get("retunes") or 0 for w in rank.get("workloads") or [])
              for r in rs for rank in (r.get("reports_by_rank") or []) if isinstance(rank, dict)]
        line["retunes_max"] = max(rt) if rt else None
        we = [len(r["workloads_waiting_early"]) for r in rs
              if isinstance(r.get("workloads_waiting_early"), list)]
        line["workloads_waiting_early"] = max(we) if we else None
        if mode == "nccl":
            base = line["median_step_s"]
        lines.append(line)
    base_tail = next((x["tail_step_s"] for x in lines if x["mode"] == "nccl"), None)
    for line in lines:
        line["ratio_vs_nccl"] = base / line["median_step_s"] if base else None
        line["ratio_tail_vs_nccl"] = base_tail / line["tail_step_s"] \
            if base_tail and line["tail_step_s"] else None
        line["ratio_low"], line["ratio_high"] = ratio_interval(runs, line["mode"]) \
            if base and line["mode"] != "nccl" else (None, None)
    return lines


def fmt(x, spec="%.3f"):
    return "-" if x is None else spec % x


def driver(args):
    if any(m != "nccl" for m in args.modes) and not (args.plugin and os.path.isfile(args.plugin)):
        sys.exit("fsdp_llama: modes %s need --plugin PATH (libnccl-tuner-autoccl.so)" % args.modes)
    args.plugin = os.path.abspath(args.plugin) if args.plugin else ""
    runs = []
    args.walls = []
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
        print("%-16s median step %.4f s over %d reps x %d steps  x%s%s vs nccl  "
              "last quarter x%s  saved %s  "
              "exposed %s of the span; of comm time torch %s, autoccl %s, last quarter %s "
              "(gap %s pp)  "
              "workload overlap gap max %s  unsampled %s  re-tunes %s  CUPTI backed off in %s"
              % (line["mode"], line["median_step_s"], line["reps"], line["steps"],
                 "%.3f" % line["ratio_vs_nccl"] if line["ratio_vs_nccl"] else "-", iv,
                 fmt(line["ratio_tail_vs_nccl"]),
                 fmt(line["time_saved_s"], "%+.3f s"), fmt(line["exposed_comm_share"]),
                 fmt(line["torch_exposed_of_comm"]), fmt(line["autoccl_exposed_share"]),
                 fmt(line["autoccl_exposed_share_tail"]), fmt(line["overlap_gap_pp"], "%.1f"),
                 fmt(line["workload_overlap_gap_max"]),
                 fmt(line["workloads_unsampled"], "%d"),
                 fmt(line["retunes_max"], "%d per rank and launch at most"),
                 "-" if line["cupti_backed_off_runs"] is None
                 else "%d of %d launches" % (line["cupti_backed_off_runs"], line["reps"])))
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
    ap.add_argument("--torch-trace", default="", metavar="DIR",
                    help="keep rank 0's torch.profiler trace of the overlap steps in DIR "
                         "(torch-trace-MODE-rREP.json.gz)")
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
    ap.add_argument("--timeout", type=float, default=600,
                    help="seconds a launch may take before it counts as hung (default 600)")
    ap.add_argument("--stall-factor", type=float, default=2.5,
                    help="once a launch finished, one taking this many times the longest so far "
                         "(at least 60 s) counts as hung: its stacks are written next to --out, "
                         "it is killed and the run goes on (0: --timeout alone)")
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
    if a.torch_trace and not a.worker:
        a.torch_trace = os.path.abspath(a.torch_trace)
        os.makedirs(a.torch_trace, exist_ok=True)
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
