#!/usr/bin/env python3
"""CUDA-graph check on two ranks through PyTorch, one process per rank: on two
GPUs, or on one GPU with --ranks-per-gpu 2 (NCCL 2.30.3 or later,
NCCL_MULTI_RANK_GPU_ENABLE=1, under MPS).

  run:     all_reduce of 4 MiB and 256 MiB, eager for --eager calls (with the
           plugin on, its search is exploring by then), then captured into
           one torch.cuda.graph and replayed --replays times. Writes the
           digest of the results (integers in float32 sum exactly in any
           order, so any algorithm gives the same bits) and the median replay
           time per rank, as JSON.
  compare: two run files (plugin off, plugin on): bit-identical digests and
           replay time on >= --min-ratio x off (median over ranks of the
           per-rank medians). Writes the verdict as JSON; exit 1 if it fails.

Usage: cuda_graph.py run --out FILE [--eager N] [--replays N] [--port P] [--ranks-per-gpu K]
       cuda_graph.py compare OFF.json ON.json --out FILE [--min-ratio 0.99]
"""
import argparse, hashlib, json, os, statistics, sys

SIZES = [4 << 20, 256 << 20]


def say(rank, what):
    # progress on stderr: a call cut at its limit shows how far each rank got
    print("cuda_graph: rank %d: %s" % (rank, what), file=sys.stderr, flush=True)


def worker(rank, world, args, q):
    import torch
    import torch.distributed as dist
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", str(args.port))
    os.environ["LOCAL_RANK"] = str(rank)
    dev = rank // args.ranks_per_gpu
    torch.cuda.set_device(dev)
    dist.init_process_group("nccl", rank=rank, world_size=world)
    say(rank, "initialised on cuda:%d" % dev)
    g = torch.Generator(device="cpu").manual_seed(4321 + rank)
    src = [torch.randint(-1000, 1000, (s // 4,), generator=g).float().cuda(dev) for s in SIZES]
    buf = [torch.empty_like(x) for x in src]
    # Eager calls: the tuner sees these workloads and starts exploring.
    for _ in range(args.eager):
        for x, b in zip(src, buf):
            b.copy_(x)
            dist.all_reduce(b)
    torch.cuda.synchronize()
    say(rank, "%d eager calls done" % args.eager)
    # Capture (side-stream warm-up as torch.cuda.graph's documentation asks).
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for x, b in zip(src, buf):
            b.copy_(x)
            dist.all_reduce(b)
    torch.cuda.current_stream().wait_stream(s)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for x, b in zip(src, buf):
            b.copy_(x)
            dist.all_reduce(b)
    torch.cuda.synchronize()
    say(rank, "captured")
    h = hashlib.sha256()
    times = []
    for i in range(args.replays):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        graph.replay()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
        if i in (0, args.replays // 2, args.replays - 1):
            for b in buf:
                h.update(b.cpu().numpy().tobytes())
    say(rank, "%d replays done" % args.replays)
    warm = times[min(10, len(times) // 10):]
    # the result goes out before the teardown, so that a teardown that hangs
    # (seen with two ranks on one GPU) is reported as such, not as a lost run
    q.put((rank, {"digest": h.hexdigest(), "replay_median_ms": statistics.median(warm),
                  "replay_mean_ms": statistics.mean(warm), "replays": args.replays,
                  "eager_calls": args.eager}))
    dist.barrier()
    dist.destroy_process_group()
    say(rank, "torn down")


def run(args):
    import torch
    import torch.multiprocessing as mp
    world = 2
    need = -(-world // args.ranks_per_gpu)
    if torch.cuda.device_count() < need:
        sys.exit("needs %d GPUs at %d ranks per GPU, found %d"
                 % (need, args.ranks_per_gpu, torch.cuda.device_count()))
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    procs = [ctx.Process(target=worker, args=(r, world, args, q)) for r in range(world)]
    for p in procs:
        p.start()
    import queue
    res = {}
    try:
        for _ in procs:
            r, v = q.get(timeout=args.timeout)
            res[r] = v
    except queue.Empty:
        pass
    hung = []
    for p in procs:
        p.join(timeout=10 if len(res) == world else 1)
        if p.is_alive():
            hung.append(p.pid)
            p.kill()
    bad = [p.exitcode for p in procs if p.exitcode != 0]
    if len(res) < world:
        print("cuda_graph: %d of %d ranks reported within %d s" % (len(res), world, args.timeout),
              file=sys.stderr)
    out = {"mode": "run", "world": world, "sizes": SIZES, "ranks_per_gpu": args.ranks_per_gpu,
           "plugin": os.environ.get("NCCL_TUNER_PLUGIN", ""),
           "nccl": ".".join(map(str, torch.cuda.nccl.version())), "ranks": res,
           "teardown_hung": len(hung) > 0 and len(res) == world}
    with open(args.out, "w") as f:
        json.dump(out, f, indent=1)
    print(json.dumps(out))
    # a run whose every rank reported but whose teardown had to be killed
    # still holds its results; the compare step judges them
    sys.exit(1 if len(res) < world or (bad and not hung) else 0)


def compare(args):
    off, on = (json.load(open(p)) for p in (args.off, args.on))
    same = ({r: v["digest"] for r, v in off["ranks"].items()} ==
            {r: v["digest"] for r, v in on["ranks"].items()})
    t_off = statistics.median(v["replay_median_ms"] for v in off["ranks"].values())
    t_on = statistics.median(v["replay_median_ms"] for v in on["ranks"].values())
    ratio = t_off / t_on if t_on > 0 else 0.0
    ok = same and ratio >= args.min_ratio
    out = {"mode": "compare", "identical": same, "replay_median_ms_off": t_off,
           "replay_median_ms_on": t_on, "speed_on_over_off": ratio, "min_ratio": args.min_ratio,
           "pass": ok, "nccl": on.get("nccl")}
    with open(args.out, "w") as f:
        json.dump(out, f, indent=1)
    print(json.dumps(out))
    sys.exit(0 if ok else 1)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--out", required=True)
    r.add_argument("--eager", type=int, default=40)
    r.add_argument("--replays", type=int, default=1000)
    r.add_argument("--port", type=int, default=29621)
    r.add_argument("--ranks-per-gpu", type=int, default=1, choices=(1, 2))
    r.add_argument("--timeout", type=int, default=240,
                   help="seconds to wait for the ranks' results")
    c = sub.add_parser("compare")
    c.add_argument("off")
    c.add_argument("on")
    c.add_argument("--out", required=True)
    c.add_argument("--min-ratio", type=float, default=0.99)
    args = ap.parse_args()
    run(args) if args.cmd == "run" else compare(args)


if __name__ == "__main__":
    main()
