#!/usr/bin/env python3
"""GPU check through PyTorch (its own NCCL 2.28.9), one process per GPU.

  allreduce: all-reduces of several sizes; writes a digest of every result so
             that a run with the plugin can be compared bit for bit with one
             without it (the plugin switches algorithms mid-run).
  train:     data-parallel training steps of a Llama-style model built from a
             config with random weights (nothing downloaded); prints the
             median step time.

Usage: torch_check.py allreduce|train --out FILE [--iters N] [--single]
"""
import argparse, hashlib, json, os, statistics, sys, time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def allreduce(rank, world, args):
    sizes = [64 << 10, 1 << 20, 16 << 20, 64 << 20]
    h = hashlib.sha256()
    g = torch.Generator(device="cpu").manual_seed(1234 + rank)
    for it in range(args.iters):
        for s in sizes:
            n = s // 4
            # Integers in float32 sum exactly in any order: any algorithm
            # must give identical bits.
            x = torch.randint(-1000, 1000, (n,), generator=g).float().cuda(rank)
            dist.all_reduce(x)
            if it % 10 == 0 or it == args.iters - 1:
                h.update(x.cpu().numpy().tobytes())
    torch.cuda.synchronize()
    return {"digest": h.hexdigest()}


class Block(torch.nn.Module):
    def __init__(self, d, heads, ff):
        super().__init__()
        self.n1 = torch.nn.RMSNorm(d)
        self.attn = torch.nn.MultiheadAttention(d, heads, batch_first=True, bias=False)
        self.n2 = torch.nn.RMSNorm(d)
        self.w1 = torch.nn.Linear(d, ff, bias=False)
        self.w3 = torch.nn.Linear(d, ff, bias=False)
        self.w2 = torch.nn.Linear(ff, d, bias=False)

    def forward(self, x):
        y = self.n1(x)
        x = x + self.attn(y, y, y, need_weights=False)[0]
        y = self.n2(x)
        return x + self.w2(torch.nn.functional.silu(self.w1(y)) * self.w3(y))


def train(rank, world, args):
    cfg = dict(vocab=32000, d=2048, heads=16, ff=5632, layers=8, seq=1024, batch=4)
    torch.manual_seed(0)
    layers = [torch.nn.Embedding(cfg["vocab"], cfg["d"])]
    layers += [Block(cfg["d"], cfg["heads"], cfg["ff"]) for _ in range(cfg["layers"])]
    layers += [torch.nn.Linear(cfg["d"], cfg["vocab"], bias=False)]
    model = torch.nn.Sequential(*layers).cuda(rank).to(torch.bfloat16)
    model = torch.nn.parallel.DistributedDataParallel(model, device_ids=[rank])
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    times = []
    for it in range(args.iters):
        tok = torch.randint(0, cfg["vocab"], (cfg["batch"], cfg["seq"]), device=rank)
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        out = model(tok)
        loss = torch.nn.functional.cross_entropy(out.view(-1, cfg["vocab"]).float(), tok.view(-1))
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
    warm = times[len(times) // 4:]
    return {"step_median_s": statistics.median(warm), "step_mean_all_s": statistics.mean(times),
            "params": sum(p.numel() for p in model.parameters()), "config": cfg}


def worker(rank, world, args, q):
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", str(args.port))
    os.environ["LOCAL_RANK"] = str(rank)
    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", rank=rank, world_size=world)
    res = allreduce(rank, world, args) if args.mode == "allreduce" else train(rank, world, args)
    dist.barrier()
    dist.destroy_process_group()
    q.put((rank, res))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("mode", choices=["allreduce", "train"])
    ap.add_argument("--out", required=True)
    ap.add_argument("--iters", type=int, default=200)
    ap.add_argument("--port", type=int, default=29511)
    ap.add_argument("--gpus", type=int, default=torch.cuda.device_count())
    args = ap.parse_args()
    world = args.gpus
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    procs = [ctx.Process(target=worker, args=(r, world, args, q)) for r in range(world)]
    for p in procs:
        p.start()
    res = dict(q.get(timeout=900) for _ in procs)
    for p in procs:
        p.join(timeout=60)
    bad = [p.exitcode for p in procs if p.exitcode != 0]
    out = {"mode": args.mode, "world": world, "plugin": os.environ.get("NCCL_TUNER_PLUGIN", ""),
           "nccl": ".".join(map(str, torch.cuda.nccl.version())), "ranks": res}
    with open(args.out, "w") as f:
        json.dump(out, f, indent=1)
    print(json.dumps(out))
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
