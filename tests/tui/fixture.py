#!/usr/bin/env python3
"""A small stand-in for an autoccl endpoint (docs/api.md, schema 1) for the
autoccl-top tests: GET /api/v1/state and the /api/v1/events SSE stream, on
loopback. Prints the port it listens on as the first line of stdout.

  fixture.py [--port P] [--rank R] [--no-sse] [--version V] [--evolve]
             [--state-file F]

--rank R changes rank, pid and bandwidths so several fixtures look like
several ranks of the same communicators; --evolve makes call counts grow;
--no-sse answers 404 on /api/v1/events (autoccl-top must fall back to
polling); --version V serves another schema version; --state-file serves a
file verbatim."""
import argparse
import json
import os
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

START = time.monotonic()
DP = "0x1a2b3c4d5e6f7081"
TP = "0x99aabbccddeeff00"


def cand(a, p, c):
    return {"algo": a, "proto": p, "channels": c}


NCCL = cand("NCCL", None, 0)


def traj(points):
    out = []
    for i, (a, p, c, bw, ov) in enumerate(points):
        out.append({"step": i, "algo": a, "proto": p, "channels": c, "busbw": bw,
                    "overlap": ov})
    return out


def workloads(rank, evolve):
    f = 1.0 + 0.01 * rank
    grow = int((time.monotonic() - START) * 10) if evolve else 0
    w = []

    def add(comm, coll, nbytes, state, sub, c, best, bs, bests, sp, bw, ov, calls, tr,
            ev=0, ctc=None, retunes=0, net=(None, None)):
        # exposed time as the plugin estimates it: calls at the best time,
        # the share the overlap leaves (unknown with the overlap)
        coll_s = None if ov is None or bests is None else (calls + grow) * bests
        w.append({"comm": comm, "rank": rank, "collective": coll, "bytes": nbytes,
                  "pipe_ops": 1, "state": state, "subspace": sub, "candidate": c,
                  "best": best, "baseline": NCCL, "baseline_seconds": bs,
                  "best_seconds": bests, "speedup": sp,
                  "busbw": None if bw is None else bw * f, "overlap": ov,
                  "time_saved_seconds": net[0], "exploration_cost_seconds": net[1],
                  "collective_seconds": coll_s,
                  "exposed_seconds": None if coll_s is None else coll_s * (1.0 - ov),
                  "exposed_share": None if coll_s is None else 1.0 - ov,
                  "candidates_evaluated": ev, "calls_to_converge": ctc,
                  "retunes": retunes, "calls": calls + grow,
                  "bytes_total": (calls + grow) * nbytes, "trajectory": tr})

    add(DP, "AllReduce", 33554432, "exploring", "RING/SIMPLE", cand("RING", "SIMPLE", 16),
        cand("RING", "SIMPLE", 24), 0.000410, 0.000371, 1.105, 1.6e11, 0.12, 412,
        traj([("NCCL", None, 0, 1.45e11, 0.10), ("RING", "SIMPLE", 8, 1.38e11, 0.10),
              ("RING", "SIMPLE", 16, 1.52e11, 0.11), ("RING", "SIMPLE", 24, 1.60e11, 0.12),
              ("RING", "SIMPLE", 32, 1.55e11, 0.12), ("RING", "LL128", 16, 1.21e11, 0.09),
              ("RING", "LL128", 24, 1.30e11, 0.09), ("TREE", "SIMPLE", 16, 1.41e11, 0.13),
              ("TREE", "SIMPLE", 24, 1.49e11, 0.12), ("RING", "SIMPLE", 16, 1.53e11, 0.12)]),
        ev=9, net=(-0.00042, 0.00042))
    add(DP, "AllGather", 4194304, "converged", "RING/LL128", cand("RING", "LL128", 8),
        cand("RING", "LL128", 8), 0.000050, 0.0000417, 1.20, 9.5e10, 0.05, 2000,
        traj([("NCCL", None, 0, 7.9e10, 0.05), ("RING", "LL128", 8, 9.5e10, 0.05)]),
        ev=14, ctc=180, net=(0.0123, 0.0009))
    add(DP, "ReduceScatter", 65536, "converged", "RING/LL", cand("RING", "LL", 4),
        cand("RING", "LL", 4), 0.000020, 0.0000148, 1.35, 2.0e10, None, 5000,
        traj([("NCCL", None, 0, 1.5e10, None), ("RING", "LL", 4, 2.0e10, None)]),
        ev=11, ctc=150, net=(0.0251, 0.0005))
    # NCCL's choice kept after 10 candidates: the exploration is a net loss.
    add(DP, "AllReduce", 65536, "converged", None, NCCL, NCCL, 0.0000256, 0.0000256, 1.0,
        4.1e9, None, 3000, traj([("NCCL", None, 0, 4.1e9, None), ("RING", "LL", 8, 3.2e9, None)]),
        ev=10, ctc=90, net=(-0.000191, 0.000191))
    add(DP, "AllReduce", 1024, "warmup", None, NCCL, None, None, None, None, None, None,
        3, [])
    add(DP, "ReduceScatter", 1073741824, "baseline", None, NCCL, None, 0.0061, None, None,
        1.7e11, 0.30, 8, traj([("NCCL", None, 0, 1.7e11, 0.30)]))
    add(TP, "AllReduce", 268435456, "retuning", "TREE/SIMPLE", cand("TREE", "SIMPLE", 32),
        cand("RING", "SIMPLE", 32), 0.0028, 0.00275, 1.02, 1.8e11, 0.40, 120,
        traj([("NCCL", None, 0, 1.75e11, 0.4), ("RING", "SIMPLE", 32, 1.8e11, 0.4),
              ("TREE", "SIMPLE", 32, 1.7e11, 0.4)]), ev=6, ctc=40, retunes=1,
        net=(0.0041, 0.0012))
    add(TP, "Broadcast", 8388608, "disabled", None, NCCL, None, None, None, None, 1.2e11,
        None, 50, [])
    return w


def state(args):
    return {
        "version": args.version, "host": "fixture-%d" % args.rank, "pid": 4242 + args.rank,
        "local_rank": args.rank, "mode": "online",
        "uptime_seconds": round(time.monotonic() - START, 3),
        "profiler": {"source": "sim", "cupti_available": False, "cupti_backed_off": False,
                     "records": 120, "records_dropped": 0, "samples": 118, "ambiguous": 0,
                     "mismatches": 0, "sample_latency_seconds": None},
        "communicators": [
            {"id": DP, "name": "dp", "rank": args.rank, "nranks": 4, "nnodes": 1,
             "role": "decider", "consensus_wait_seconds": 0.0012, "blocks_published": 37,
             "lock_acquisitions": 40},
            {"id": TP, "name": TP, "rank": args.rank, "nranks": 2, "nnodes": 1,
             "role": "follower", "consensus_wait_seconds": 0.0030, "blocks_published": 0,
             "lock_acquisitions": 12}],
        "workloads": workloads(args.rank, args.evolve),
        "workloads_truncated": False,
    }


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def send_body(self, code, body, ctype):
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        args = self.server.args
        if self.path == "/api/v1/state":
            if args.state_file:
                with open(args.state_file, "rb") as f:
                    body = f.read()
            else:
                body = json.dumps(state(args)).encode()
            self.send_body(200, body, "application/json")
        elif self.path == "/api/v1/events" and not args.no_sse:
            self.events()
        else:
            self.send_body(404, b'{"error": "not found"}\n', "application/json")

    def events(self):
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        step = 0
        last_hb = time.monotonic()
        try:
            while not self.server.stopping:
                w = workloads(self.server.args.rank, self.server.args.evolve)[0]
                ev = {"comm": w["comm"], "rank": w["rank"], "collective": w["collective"],
                      "bytes": w["bytes"], "state": w["state"], "step": step,
                      "candidate": w["candidate"], "best": w["best"], "busbw": w["busbw"],
                      "overlap": w["overlap"], "speedup": w["speedup"]}
                # CRLF line ends on purpose: clients must accept them.
                self.wfile.write(("event: sample\r\ndata: %s\r\n\r\n" % json.dumps(ev)).encode())
                if time.monotonic() - last_hb >= 5:
                    self.wfile.write(b": heartbeat\n\n")
                    last_hb = time.monotonic()
                self.wfile.flush()
                step += 1
                time.sleep(0.5)
        except (BrokenPipeError, ConnectionResetError):
            pass


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--rank", type=int, default=0)
    ap.add_argument("--version", type=int, default=1)
    ap.add_argument("--no-sse", action="store_true")
    ap.add_argument("--evolve", action="store_true")
    ap.add_argument("--state-file")
    args = ap.parse_args()
    ThreadingHTTPServer.allow_reuse_address = True
    ThreadingHTTPServer.daemon_threads = True
    srv = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    srv.args = args
    srv.stopping = False
    print(srv.server_address[1], flush=True)
    try:
        srv.serve_forever(poll_interval=0.1)
    except KeyboardInterrupt:
        pass
    finally:
        srv.stopping = True


if __name__ == "__main__":
    main()
