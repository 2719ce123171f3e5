#!/usr/bin/env python3
"""examples/fsdp_llama.py without PyTorch or a GPU: it compiles; its
exposed-communication measures (of the span, of communication time, per
collective) are right on hand-made kernel traces, and so is its weighting of
the plugin's overlaps per collective; its
summary reports a mode only from runs that happened, with the ratio to NCCL
as it ships; bad arguments are refused; the driver refuses the autoccl
modes without a plugin and writes nothing; the DDP example (ddp_buckets.py,
beside it) is the same driver with --wrap ddp.

usage: check_fsdp_llama.py PATH/TO/fsdp_llama.py"""
import importlib.util
import json
import os
import py_compile
import subprocess
import sys
import tempfile

path = sys.argv[1]
fails = []


def check(cond, what):
    if not cond:
        fails.append(what)


py_compile.compile(path, doraise=True)
spec = importlib.util.spec_from_file_location("fsdp_llama", path)
ex = importlib.util.module_from_spec(spec)
spec.loader.exec_module(ex)  # PyTorch is imported only by the worker


def trace(kernels):
    f = tempfile.NamedTemporaryFile("w", suffix=".json", delete=False)
    json.dump({"traceEvents": [dict({"cat": "kernel", "name": k[0], "ts": k[1], "dur": k[2]},
                                    **({"args": k[3]} if len(k) > 3 else {})) for k in kernels]
               + [{"cat": "cpu_op", "name": "ncclAllGather", "ts": 0, "dur": 1000}]}, f)
    f.close()
    return f.name


def meta(coll, n_in, n_out, dtype):
    """PyTorch's collective metadata on a kernel, as its profiler writes it."""
    return {"Collective name": coll, "In msg nelems": n_in, "Out msg nelems": n_out,
            "dtype": dtype, "Group size": 2}


# 0..100 compute, 80..130 NCCL (50 us, 30 exposed), 150..160 NCCL alone, 160..200 compute
p = trace([("gemm", 0, 100), ("ncclDevKernel_AllGather", 80, 50), ("ncclKernel_x", 150, 10),
           ("gemm2", 160, 40)])
s = ex.exposed_share(p)
check(s is not None and abs(s - 40.0 / 200.0) < 1e-9, "exposed share %s, want 0.2" % s)
os.unlink(p)
p = trace([("gemm", 0, 100), ("ncclDevKernel_AllReduce", 10, 50)])
check(ex.exposed_share(p) == 0.0, "a hidden collective exposes nothing")
os.unlink(p)
p = trace([("gemm", 0, 100)])
check(ex.exposed_share(p) is None, "no NCCL kernel: no figure")
os.unlink(p)

def near(x, want):
    return x is not None and abs(x - want) < 1e-9


# exposed over communication time, and per collective: an AllGather half
# covered by compute (0..100 compute, 50..150 AllGather)
p = trace([("gemm", 0, 100), ("ncclDevKernel_AllGather_RING_LL(int, float)", 50, 100)])
ov = ex.trace_overlap(p)
os.unlink(p)
check(ov is not None and near(ov["exposed_of_comm"], 0.5), "half exposed AllGather: %s" % ov)
check(ov is not None and near(ov["span_share"], 50.0 / 150.0), "span share %s" % ov)
ag = (ov or {}).get("by_coll", {}).get("AllGather", {})
check(near(ag.get("overlap"), 0.5) and near(ag.get("comm_s"), 100e-6),
      "AllGather half overlapped: %s" % ag)
check(set((ov or {}).get("by_coll", {})) == {"AllGather"}, "one collective: %s" % ov)
# three collectives, each its own figure: AllGather 80..120 half under compute,
# ReduceScatter 200..220 alone (and a second kernel of it on another stream,
# 205..215, counted once), AllReduce 310..330 under compute
p = trace([("gemm", 0, 100), ("ncclDevKernel_AllGather_RING_LL(x)", 80, 40),
           ("ncclKernel_ReduceScatter_RING_SIMPLE_Sum_bf16", 200, 20),
           ("ncclKernel_ReduceScatter_RING_SIMPLE_Sum_bf16", 205, 10),
           ("gemm2", 300, 100), ("ncclDevKernel_AllReduce_Sum_f32_RING_LL", 310, 20)])
ov = ex.trace_overlap(p)
os.unlink(p)
bc = (ov or {}).get("by_coll", {})
check(set(bc) == {"AllGather", "ReduceScatter", "AllReduce"}, "collectives %s" % sorted(bc))
check(near(bc.get("AllGather", {}).get("overlap"), 0.5), "AllGather overlap %s" % bc)
check(near(bc.get("ReduceScatter", {}).get("overlap"), 0.0)
      and near(bc.get("ReduceScatter", {}).get("comm_s"), 20e-6), "ReduceScatter %s" % bc)
check(near(bc.get("AllReduce", {}).get("overlap"), 1.0), "AllReduce overlap %s" % bc)
check(ov is not None and near(ov["exposed_of_comm"], 40.0 / 80.0),
      "exposed of comm %s, want 0.5" % (ov or {}).get("exposed_of_comm"))
check(ov is not None and near(ov["span_share"], 40.0 / 400.0), "span share %s" % ov)
p = trace([("gemm", 0, 100)])
check(ex.trace_overlap(p) is None, "no NCCL kernel: no overlap figures")
os.unlink(p)
for name, want in (("ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)", "AllGather"),
                   ("ncclDevKernel_Reduce_Sum_f32_RING_LL", "Reduce"),
                   ("ncclKernel_ReduceScatter_RING_SIMPLE", "ReduceScatter"),
                   ("ncclDevKernel_Broadcast_RING_LL(x)", "Broadcast"),
                   ("ncclDevKernel_SendRecv(x)", "SendRecv"),
                   ("ncclDevKernel_Generic_1(x)", "other"), ("ncclKernel", "other")):
    check(ex.nccl_collective(name) == want, "%s: %s, want %s" % (name, ex.nccl_collective(name), want))
# per workload, from PyTorch's metadata on the kernels: an AllReduce of 1,000
# floats (4,000 bytes) twice, once under compute (0..100) and once alone;
# an AllGather of 500 -> 1,000 bf16 (2,000 bytes, its output) under
# compute; a ReduceScatter kernel without metadata (in by_coll, not here)
p = trace([("gemm", 0, 100),
           ("ncclDevKernel_AllReduce_Sum_f32_RING_LL(x)", 10, 20, meta("allreduce", 1000, 1000, "Float")),
           ("ncclDevKernel_AllReduce_Sum_f32_RING_LL(x)", 200, 20, meta("allreduce", 1000, 1000, "Float")),
           ("ncclDevKernel_AllGather_RING_LL(x)", 40, 10, meta("_allgather_base", 500, 1000, "BFloat16")),
           ("ncclKernel_ReduceScatter_RING_SIMPLE", 300, 10)])
ov = ex.trace_overlap(p)
os.unlink(p)
bw = (ov or {}).get("by_workload") or []
check([(w["collective"], w["bytes"], w["kernels"]) for w in bw] == [("AllGather", 2000, 1), ("AllReduce", 4000, 2)],
      "torch per workload %s" % bw)
check(len(bw) == 2 and near(bw[0]["overlap"], 1.0) and near(bw[1]["overlap"], 0.5)
      and near(bw[1]["comm_s"], 40e-6), "torch per-workload overlap %s" % bw)
check(set((ov or {}).get("by_coll", {})) == {"AllGather", "AllReduce", "ReduceScatter"},
      "by_coll keeps kernels without metadata: %s" % (ov or {}).get("by_coll"))
p = trace([("gemm", 0, 100), ("ncclDevKernel_AllReduce_Sum_f32_RING_LL(x)", 10, 20),
           ("ncclDevKernel_AllGather_RING_LL(x)", 40, 10, meta("x", 5, 10, "Complex32"))])
ov = ex.trace_overlap(p)
os.unlink(p)
check(ov is not None and ov["by_workload"] is None, "no usable metadata: by_workload null, %s" % ov)
check(ex.kernel_bytes(meta("reduce_scatter", 2048, 1024, '"BFloat16"')) == 4096,
      "ReduceScatter counts its input, a quoted dtype too")
# beside autoccl's workloads: matched by collective and bytes, the unmatched left out
acl = [{"collective": "AllReduce", "bytes": 4000, "overlap": 0.42},
       {"collective": "AllReduce", "bytes": 8000, "overlap": 0.9},
       {"collective": "AllGather", "bytes": 2000, "overlap": 0.95}]
gaps = ex.workload_gaps(acl, bw) or []
check([(g["collective"], g["bytes"]) for g in gaps] == [("AllReduce", 4000), ("AllGather", 2000)]
      and near(gaps[0]["gap"], 0.08) and near(gaps[1]["gap"], 0.05) and near(gaps[0]["torch"], 0.5),
      "workload gaps %s" % gaps)
check(ex.workload_gaps(acl, None) is None and ex.workload_gaps(None, bw) is None,
      "one side without per-workload figures: null")

# the plugin's overlap per collective, weighted by collective time, else calls x bytes
st = {"workloads": [
    {"collective": "AllGather", "overlap": 0.2, "collective_seconds": 1.0, "calls": 1, "bytes": 1},
    {"collective": "AllGather", "overlap": 0.8, "collective_seconds": 3.0, "calls": 1, "bytes": 1},
    {"collective": "AllGather", "overlap": None, "collective_seconds": 9.0},
    {"collective": "ReduceScatter", "overlap": 0.5, "calls": 3, "bytes": 1000},
    {"collective": "ReduceScatter", "overlap": 0.1, "collective_seconds": None, "calls": 1,
     "bytes": 1000},
    {"collective": "AllReduce", "overlap": None, "collective_seconds": 2.0}]}
to = ex.tuner_overlap(st) or {}
check(set(to) == {"AllGather", "ReduceScatter"} and near(to.get("AllGather"), 0.65)
      and near(to.get("ReduceScatter"), 0.4), "tuner overlap by collective %s" % to)
check(ex.tuner_overlap(None) is None and ex.tuner_overlap({"workloads": [st["workloads"][-1]]}) is None,
      "no measured overlap: null")

bw = ex.tuner_overlap_by_workload(st) or []
check([(w["collective"], w["overlap"]) for w in bw] ==
      [("AllGather", 0.2), ("AllGather", 0.8), ("ReduceScatter", 0.5), ("ReduceScatter", 0.1)]
      and set(bw[0]) >= {"bytes", "calls", "state", "exposed_share", "collective_seconds"},
      "tuner overlap by workload %s" % bw)
check(ex.tuner_overlap_by_workload(None) is None
      and ex.tuner_overlap_by_workload({"workloads": [st["workloads"][-1]]}) is None,
      "no measured overlap: null")

a = ex.parse(["--plugin", "/x.so", "--reps", "2"])
runs = [{"mode": m, "rep": k, "median_step_s": t, "steps": 30, "time_saved_s": sv,
         "exposed_comm_share": 0.1}
        for m, k, t, sv in (("nccl", 0, 1.0, None), ("autoccl", 0, 0.98, 0.5),
                            ("nccl", 1, 1.02, None), ("autoccl", 1, 0.99, 0.7))]
lines = {x["mode"]: x for x in ex.summarize(runs, a)}
check(set(lines) == {"nccl", "autoccl"}, "modes without runs get no line: %s" % sorted(lines))
au = lines.get("autoccl", {})
check(au.get("kind") == "torch_step" and au.get("reps") == 2 and au.get("steps") == 30,
      "autoccl line %s" % au)
check(abs(au.get("median_step_s", 0) - 0.985) < 1e-12, "median of the rep medians")
check(abs(au.get("ratio_vs_nccl", 0) - 1.01 / 0.985) < 1e-12, "ratio vs nccl %s" % au.get("ratio_vs_nccl"))
check(au.get("time_saved_s") == 0.6 and lines["nccl"]["time_saved_s"] is None, "time saved")
check("NCCL_TUNER_PLUGIN=/x.so" in au.get("env", []) and lines["nccl"]["env"] == [], "env per mode")
lo, hi = au.get("ratio_low"), au.get("ratio_high")
check(lo is not None and lo < au["ratio_vs_nccl"] < hi, "ratio interval %s-%s" % (lo, hi))
check(lines["nccl"]["ratio_low"] is None, "NCCL's own line has no interval")
check(ex.ratio_interval(runs[:2], "autoccl") == (None, None), "one pair: no interval")
check(au.get("tail_step_s") is None and au.get("ratio_tail_vs_nccl") is None,
      "no step times: no last quarter")
# the last quarter of each launch: a gain that grows over the run
tl_runs = [{"mode": m, "rep": k, "median_step_s": 1.0, "steps": 8, "step_s": st}
           for m, k, st in (("nccl", 0, [1.0] * 8), ("autoccl", 0, [1.0] * 6 + [0.8, 0.9]),
                            ("nccl", 1, [1.2] * 8), ("autoccl", 1, [1.0] * 6 + [0.9, 0.9]))]
tl = {x["mode"]: x for x in ex.summarize(tl_runs, a)}
check(abs((tl["autoccl"].get("tail_step_s") or 0) - 0.875) < 1e-12
      and abs((tl["nccl"].get("tail_step_s") or 0) - 1.1) < 1e-12,
      "last quarter medians %s %s" % (tl["autoccl"].get("tail_step_s"), tl["nccl"].get("tail_step_s")))
check(abs((tl["autoccl"].get("ratio_tail_vs_nccl") or 0) - 1.1 / 0.875) < 1e-12
      and tl["autoccl"].get("ratio_vs_nccl") == 1.0,
      "ratio over the last quarter %s" % tl["autoccl"].get("ratio_tail_vs_nccl"))
# the summary compares the two exposed shares of communication time
ov_runs = [{"mode": m, "rep": k, "median_step_s": 1.0, "steps": 30, "exposed_comm_share": 0.1,
            "torch_exposed_of_comm": te, "autoccl_exposed_share": ae,
            "torch_overlap_by_coll": tb, "autoccl_overlap_by_coll": ab}
           for m, k, te, ae, tb, ab in (
               ("nccl", 0, 0.4, None, {"AllGather": 0.3}, None),
               ("autoccl", 0, 0.5, 0.65, {"AllGather": 0.4, "ReduceScatter": 0.9},
                {"AllGather": 0.2}),
               ("nccl", 1, 0.6, None, {"AllGather": 0.5}, None),
               ("autoccl", 1, 0.7, 0.75, {"AllGather": 0.6}, {"AllGather": 0.4}))]
ol = {x["mode"]: x for x in ex.summarize(ov_runs, a)}
oa, on = ol.get("autoccl", {}), ol.get("nccl", {})
check(near(oa.get("torch_exposed_of_comm"), 0.6) and near(oa.get("autoccl_exposed_share"), 0.7),
      "medians of the exposed shares %s" % oa)
check(near(oa.get("overlap_gap_pp"), 10.0), "overlap gap %s pp, want 10" % oa.get("overlap_gap_pp"))
tb = oa.get("torch_overlap_by_coll") or {}
check(set(tb) == {"AllGather", "ReduceScatter"} and near(tb.get("AllGather"), 0.5)
      and near(tb.get("ReduceScatter"), 0.9), "torch overlap per collective %s" % tb)
check(near((oa.get("autoccl_overlap_by_coll") or {}).get("AllGather"), 0.3),
      "autoccl overlap per collective %s" % oa.get("autoccl_overlap_by_coll"))
check(on.get("overlap_gap_pp") is None and on.get("autoccl_overlap_by_coll") is None
      and near(on.get("torch_exposed_of_comm"), 0.5), "nccl line: no autoccl figures %s" % on)
check(lines["autoccl"].get("overlap_gap_pp") is None, "no torch figure: no gap")
wg_runs = [dict(r, workload_overlap_gap_max=g) for r, g in zip(ov_runs, (None, 0.04, None, 0.12))]
wl = {x["mode"]: x for x in ex.summarize(wg_runs, a)}
check(near(wl["autoccl"].get("workload_overlap_gap_max"), 0.12)
      and wl["nccl"].get("workload_overlap_gap_max") is None,
      "workload gap: the largest over launches %s" % wl["autoccl"].get("workload_overlap_gap_max"))
# how many launches ended with the plugin's CUPTI backed off (another client took it)
bo_runs = [dict(r, autoccl_profiler=pr) for r, pr in zip(ov_runs, (
    None, {"cupti_backed_off": False}, None, {"cupti_backed_off": True}))]
bo = {x["mode"]: x for x in ex.summarize(bo_runs, a)}
check(bo["autoccl"].get("cupti_backed_off_runs") == 1
      and bo["nccl"].get("cupti_backed_off_runs") is None
      and ol["autoccl"].get("cupti_backed_off_runs") is None,
      "CUPTI backed off in %s launches (want 1; none known without a profiler block)"
      % bo["autoccl"].get("cupti_backed_off_runs"))
# the most re-tunes one rank's workloads made in one launch, from the job reports
rt_runs = [dict(r, reports_by_rank=rb) for r, rb in zip(bo_runs, (
    None, [{"rank": 0, "workloads": [{"retunes": 1}, {"retunes": 2}]},
           {"rank": 1, "workloads": [{"retunes": 0}, {"retunes": None}]}],
    None, [{"rank": 0, "workloads": [{"retunes": 1}]}]))]
rl = {x["mode"]: x for x in ex.summarize(rt_runs, a)}
check(rl["autoccl"].get("retunes_max") == 3 and rl["nccl"].get("retunes_max") is None
      and bo["autoccl"].get("retunes_max") is None,
      "re-tunes at most %s per rank and launch (want 3; none known without reports)"
      % rl["autoccl"].get("retunes_max"))
# the printed summary names both exposed figures
import contextlib
import io
with tempfile.TemporaryDirectory() as d:
    plug = os.path.join(d, "p.so")
    open(plug, "w").close()
    da = ex.parse(["--plugin", plug, "--reps", "2", "--modes", "nccl,autoccl",
                   "--out", os.path.join(d, "t.jsonl")])
    it = iter([r for k in (0, 1) for r in rt_runs if r["rep"] == k])
    real, ex.launch = ex.launch, lambda mode, rep, args, out: dict(next(it))
    buf = io.StringIO()
    try:
        with contextlib.redirect_stdout(buf):
            rc = ex.driver(da)
    finally:
        ex.launch = real
    txt = buf.getvalue()
    check(rc == 0 and "of comm time torch 0.600, autoccl 0.700, last quarter - (gap 10.0 pp)" in txt
          and "CUPTI backed off in 1 of 2 launches" in txt
          and "re-tunes 3 per rank and launch at most" in txt,
          "printed summary: %s" % txt.strip())
# every launch's record carries the new figures (the worker runs only on GPUs)
import ast
rec_keys = set()
for n in ast.walk(ast.parse(open(path).read())):
    if isinstance(n, ast.Dict) and any(isinstance(v, ast.Constant) and v.value == "torch_step_run"
                                       for v in n.values):
        rec_keys = {k.value for k in n.keys if isinstance(k, ast.Constant)}
want = {"exposed_comm_share", "torch_exposed_of_comm", "torch_overlap_by_coll",
        "autoccl_exposed_share", "autoccl_exposed_share_tail", "autoccl_overlap_by_coll",
        "overlap_steps", "torch_comm_s_by_coll",
        "torch_overlap_by_workload",
        "overlap_gap_by_workload", "workload_overlap_gap_max",
        "early_step", "workloads_waiting_early"}
check(want <= rec_keys, "torch_step_run lacks %s" % sorted(want - rec_keys))
# the profiled steps start together and run as the timed ones (each synchronized)
src = open(path).read()
blk = src[src.index("with profile("):]
blk = blk[:blk.index("if rank == 0:")]
head, loop = blk.split("for _ in range(args.overlap_steps):", 1)
ind = len(head) - len(head.rstrip(" "))  # the for line's indent
body = []
for ln in loop.splitlines()[1:]:
    if ln.strip() and len(ln) - len(ln.lstrip(" ")) <= ind:
        break
    body.append(ln.strip())
check("dist.barrier()" in head, "the profiled steps begin after a barrier:\n" + blk)
check(body[:2] == ["step()", "torch.cuda.synchronize()"],
      "each profiled step is synchronized, as the timed ones: %s" % body)
# the last quarter: the growth of the exposed and collective seconds between two states
mid = {"job": {"collective_seconds": 10.0, "exposed_seconds": 6.0},
       "workloads": [{"comm": "0x1", "rank": 0, "collective": "AllReduce", "bytes": 64,
                      "collective_seconds": 8.0, "exposed_seconds": 5.0},
                     {"comm": "0x1", "rank": 0, "collective": "AllReduce", "bytes": 32,
                      "collective_seconds": 2.0, "exposed_seconds": 1.0}]}
end = {"job": {"collective_seconds": 14.0, "exposed_seconds": 7.0},
       "workloads": [{"comm": "0x1", "rank": 0, "collective": "AllReduce", "bytes": 64,
                      "collective_seconds": 12.0, "exposed_seconds": 6.0, "overlap": 0.5},
                     {"comm": "0x1", "rank": 0, "collective": "AllReduce", "bytes": 32,
                      "collective_seconds": 2.0, "exposed_seconds": 1.0, "overlap": 0.5}]}
check(near(ex.tail_share(mid, end), 0.25), "last quarter's share %s, want 1/4" % ex.tail_share(mid, end))
check(ex.tail_share(None, end) is None and ex.tail_share(end, end) is None,
      "no earlier state, or no time between: none")
tw = ex.tail_overlaps(ex.tuner_overlap_by_workload(end), mid, end)
check(near(tw[0]["overlap_tail"], 0.75) and near(tw[0]["overlap"], 0.5)
      and tw[1]["overlap_tail"] is None, "per workload over the last quarter: %s" % tw)
check(near(ex.overlap_gap_pp({"autoccl_exposed_share": 0.7, "autoccl_exposed_share_tail": 0.62,
                              "torch_exposed_of_comm": 0.6}), 10.0),
      "the gap is the job's share as the plugin reports it")
# still waiting at 30 % of the steps: a waiting-* state or not yet seen, >= 200 calls at the end
wl = lambda b, st, calls, wait=None: {"comm": "0x1", "rank": 0, "collective": "AllGather",
                                       "bytes": b, "state": st, "calls": calls,
                                       "budget_wait_calls": wait}
early = {"workloads": [wl(1, "exploring", 90), wl(2, "waiting-budget", 30, 512),
                       wl(3, "waiting-samples", 90), wl(5, "converged", 60),
                       dict(wl(6, "waiting-budget", 80, 40), baseline_seconds=1e-3)]}
end = {"workloads": [wl(1, "converged", 600), wl(2, "converged", 200), wl(3, "converged", 199),
                     wl(4, "converged", 300), wl(5, "waiting-budget", 400),
                     wl(6, "converged", 300)]}
we = ex.waiting_early(early, end)
check([(w["bytes"], w["state"], w["budget_wait_calls"]) for w in we]
      == [(2, "waiting-budget", 512), (4, None, None)],
      "waiting at 30 %%: %s" % we)
check(ex.waiting_early(None, end) is None, "no early state: unknown")
we_runs = [dict(r, workloads_waiting_early=w) for r, w in zip(bo_runs, (None, we, None, []))]
check({x["mode"]: x for x in ex.summarize(we_runs, a)}["autoccl"]["workloads_waiting_early"] == 2,
      "the mode's line keeps the most of its launches")
# the plugin's account: unsampled = >= 200 calls with neither a baseline nor a best time
st = {"job": {"exposed_share": 0.3},
      "workloads": [{"calls": 3200, "baseline_seconds": 0.01, "best_seconds": None,
                     "time_saved_seconds": 0.25},
                    {"calls": 200, "baseline_seconds": None, "best_seconds": None},
                    {"calls": 199, "baseline_seconds": None, "best_seconds": None}]}
check(ex.tuner_account(st) == (0.25, 0.3, 1), "tuner account %s" % (ex.tuner_account(st),))
check(ex.tuner_account(None) == (None, None, None), "no state document: nothing known")
with tempfile.TemporaryDirectory() as d:
    rp = os.path.join(d, "report-0.json")
    with open(rp, "w") as f:
        json.dump({"totals": {"net_saved_seconds": 0.125},
                   "workloads": [{"calls": 3200, "nccl_seconds": 0.5, "net_saved_seconds": 0.2,
                                  "exploration_cost_seconds": 0.05, "retunes": 1,
                                  "retune_cause": "overlap", "clock_offset_us": 2.31},
                                 {"calls": 200, "nccl_seconds": None},
                                 {"calls": 10, "nccl_seconds": None}]}, f)
    saved, unsampled, brief = ex.report_account(rp)
    check((saved, unsampled) == (0.125, 1), "report account %s" % (ex.report_account(rp),))
    check([w["calls"] for w in brief] == [3200, 200, 10] and brief[1]["nccl_seconds"] is None,
          "each workload in short: %s" % (brief,))
    check((brief[0]["net_saved_seconds"], brief[0]["exploration_cost_seconds"]) == (0.2, 0.05),
          "each workload's share of the account: %s" % (brief[0],))
    check((brief[0]["retunes"], brief[0]["retune_cause"]) == (1, "overlap"),
          "each workload's re-tunes and why: %s" % (brief[0],))
    check((brief[0]["clock_offset_us"], brief[1]["clock_offset_us"]) == (2.31, None),
          "each workload's clock offset: %s" % (brief,))
    check(ex.report_account(os.path.join(d, "none.json")) == (None, None, None),
          "no report: unknown")
    # every rank's own account, by rank (rank 0's is in time_saved_s)
    with open(os.path.join(d, "report-1.json"), "w") as f:
        json.dump({"totals": {"net_saved_seconds": -0.25},
                   "workloads": [{"calls": 3200, "nccl_seconds": 0.5,
                                  "exploration_cost_seconds": 0.3}]}, f)
    with open(os.path.join(d, "report-1.json.txt"), "w") as f:
        f.write("text")
    br = ex.reports_by_rank(d)
    check([(r["rank"], r["net_saved_seconds"]) for r in br or []] == [(0, 0.125), (1, -0.25)]
          and br[1]["workloads"][0]["exploration_cost_seconds"] == 0.3,
          "reports by rank: %s" % (br,))
    check(ex.reports_by_rank(os.path.join(d, "none")) is None, "no report folder: none")
one = ex.parse(["--nproc", "2", "--ranks-per-gpu", "2"])
check("NCCL_MULTI_RANK_GPU_ENABLE=1" in ex.mode_env("nccl", one), "two ranks on a GPU: env")
check(ex.mode_env("nccl", a) == [], "one rank per GPU: NCCL as it ships")
ce = ex.mode_env("autoccl_ceiling", a)
check("NCCL_MIN_NCHANNELS=32" in ce and "AUTOCCL_STOCK_CHANNELS=24" in ce, "ceiling env %s" % ce)
# The minimum raises the channels; the maximum only lowers (docs/channels.md).
check(not any(e.startswith("NCCL_MAX_NCHANNELS") for e in ce), "ceiling sets a maximum: %s" % ce)

for bad in (["--modes", "nccl,fast"], ["--modes", ""], ["--ceiling", "24"], ["--reps", "x"],
            ["--nproc", "3", "--ranks-per-gpu", "2"], ["--nccl-lib", "/nonexistent/libnccl.so.2"],
            ["--wrap", "zero"]):
    r = subprocess.run([sys.executable, path] + bad, capture_output=True, text=True)
    check(r.returncode == 2, "%s: exit %d, wanted 2" % (bad, r.returncode))
with tempfile.TemporaryDirectory() as d:
    out = os.path.join(d, "t.jsonl")
    r = subprocess.run([sys.executable, path, "--modes", "nccl,autoccl", "--out", out],
                       capture_output=True, text=True)
    check(r.returncode != 0 and "--plugin" in r.stderr and not os.path.exists(out),
          "autoccl without a plugin: exit %d, %s" % (r.returncode, r.stderr.strip()))

# The worker runs only on GPUs; statically: nothing uses the process group
# (dist.*) after dist.destroy_process_group() (one GPU run lost every launch
# to a dist.get_world_size() placed after it).
import ast
tree = ast.parse(open(path).read())
wfn = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "worker")
dist_calls = sorted((n.lineno, n.func.attr) for n in ast.walk(wfn)
                    if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
                    and isinstance(n.func.value, ast.Name) and n.func.value.id == "dist")
gone = [ln for ln, a in dist_calls if a == "destroy_process_group"]
check(len(gone) == 1, "worker destroys its process group once: %s" % gone)
late = [(ln, a) for ln, a in dist_calls if gone and ln > gone[0]]
check(not late, "dist used after destroy_process_group: %s" % late)

# the DDP example is the same driver with --wrap ddp
ddp = os.path.join(os.path.dirname(os.path.abspath(path)), "ddp_buckets.py")
py_compile.compile(ddp, doraise=True)
r = subprocess.run([sys.executable, ddp, "--modes", "nccl", "--wrap", "zero"], capture_output=True,
                   text=True)
check(r.returncode == 2, "ddp_buckets.py --wrap zero: exit %d, wanted 2" % r.returncode)
with tempfile.TemporaryDirectory() as d:
    out = os.path.join(d, "t.jsonl")
    r = subprocess.run([sys.executable, ddp, "--modes", "nccl,autoccl", "--out", out],
                       capture_output=True, text=True)
    check(r.returncode != 0 and "--plugin" in r.stderr and not os.path.exists(out),
          "ddp_buckets.py without a plugin: exit %d, %s" % (r.returncode, r.stderr.strip()))

# a launch that stops making progress (the plugin's CUPTI under PyTorch's
# profiler once hung a launch until it was killed, and the run with it):
# its stacks are written, it and its children are killed, a
# torch_step_hang line says so, and the run goes on
import time
with tempfile.TemporaryDirectory() as d:
    fake = os.path.join(d, "torchrun")
    with open(fake, "w") as f:
        f.write("""#!%s
import json, subprocess, sys, time
a = sys.argv
mode, rep, res = a[a.index("--mode") + 1], int(a[a.index("--rep") + 1]), a[a.index("--result") + 1]
if mode == "nccl":
    with open(res, "w") as f:
        json.dump({"kind": "torch_step_run", "mode": mode, "rep": rep, "median_step_s": 0.1,
                   "steps": 3, "step_s": [0.1] * 3}, f)
    sys.exit(0)
subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)", "hung-worker-%%d" %% rep])
time.sleep(300)
""" % sys.executable)
    os.chmod(fake, 0o755)
    plug = os.path.join(d, "p.so")
    open(plug, "w").close()
    out = os.path.join(d, "t.jsonl")
    t0 = time.time()
    try:
        r = subprocess.run([sys.executable, path, "--modes", "nccl,autoccl", "--reps", "1",
                            "--plugin", plug, "--torchrun", fake, "--timeout", "3", "--out", out],
                           capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired as e:
        r = subprocess.CompletedProcess(e.cmd, -1, "", "the driver itself hung")
    took = time.time() - t0
    lines = [json.loads(x) for x in open(out)] if os.path.exists(out) else []
    hang = [x for x in lines if x.get("kind") == "torch_step_hang"]
    check(len(hang) == 1 and hang[0]["mode"] == "autoccl" and hang[0]["limit_s"] == 3.0,
          "hang line %s; stderr %s" % (hang, r.stderr.strip()))
    check("made no progress within 3 s" in r.stderr, "the hang is said: %s" % r.stderr.strip())
    st = os.path.join(d, hang[0]["stacks"]) if hang and hang[0].get("stacks") else ""
    check(st and os.path.exists(st) and "==== pid" in open(st).read(), "stacks written: %s" % st)
    check(any(x.get("kind") == "torch_step_run" and x["mode"] == "nccl" for x in lines),
          "the launch before the hang kept: %s" % lines)
    left = []
    for pid in os.listdir("/proc"):
        try:
            with open("/proc/%s/cmdline" % pid, "rb") as f:
                if b"hung-worker-0" in f.read():
                    left.append(pid)
        except OSError:
            pass
    check(not left, "the hung launch's child is still running: %s" % left)
    for pid in left:
        os.kill(int(pid), 9)
    check(took < 120, "the hang took %.0f s to handle" % took)

for f in fails:
    print("FAIL:", f)
print("%d checks failed" % len(fails) if fails else "ok")
sys.exit(1 if fails else 0)
