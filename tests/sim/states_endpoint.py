#!/usr/bin/env python3
"""The states /api/v1/state shows are the search's real ones: autoccl-sim
drives the real plugin at the default exploration budget, and the endpoints of
both rank processes are polled while it runs. Over the run it must show a waiting
state (the budget holds the search back), a decided one, only names of the
state table, and `decided` true exactly for the decided states; a workload's
overlap is the one its exposed time says. Bounded: the sim runs 6 s.

usage: states_endpoint.py SIM PLUGIN
"""
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request

SIM, PLUGIN = sys.argv[1], sys.argv[2]
KNOWN = {"warmup", "baseline", "exploring", "converged", "retuning", "disabled",
         "waiting-budget", "waiting-samples", "validating", "refining", "paused"}
DECIDED = {"converged", "validating", "refining", "paused"}
WAITING = {"waiting-budget", "waiting-samples", "paused"}


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


port = free_port()
while port + 1 > 65535:
    port = free_port()
env = dict(os.environ)
env.pop("AUTOCCL_EXPLORE_BUDGET", None)
env["AUTOCCL_HTTP_PORT"] = ""
sim = subprocess.Popen([SIM, "--plugin", PLUGIN, "--json", "--quiet", "--ranks", "2",
                        "--duration", "6", "--workload", "tp", "--port", str(port),
                        # ranks overlap compute differently: rank 0 at 0.6, rank 1 not at all
                        "--interference", "0-=0.6", "--overlap-spread", "1"],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
seen, problems, docs, overlaps = {}, [], 0, 0
deadline = time.monotonic() + 30
while sim.poll() is None and time.monotonic() < deadline:
    # rank process r serves port + r: the overlap is checked on both
    wls = []
    for p in (port, port + 1):
        try:
            with urllib.request.urlopen("http://127.0.0.1:%d/api/v1/state" % p, timeout=2) as r:
                wls += json.load(r).get("workloads", [])
                docs += 1
        except (OSError, ValueError):
            pass
    if not wls:
        time.sleep(0.05)
        continue
    for w in wls:
        st, dec = w.get("state"), w.get("decided")
        seen[st] = seen.get(st, 0) + 1
        if st not in KNOWN:
            problems.append("unknown state %r" % st)
        if dec is not (st in DECIDED):
            problems.append("state %r with decided %r" % (st, dec))
        # the overlap shown is the one this process measured: what its
        # exposed time says (not the search's, the fastest rank's)
        cs, es, ov = w.get("collective_seconds"), w.get("exposed_seconds"), w.get("overlap")
        if isinstance(cs, (int, float)) and cs > 0 and isinstance(es, (int, float)):
            overlaps += 1
            if not isinstance(ov, (int, float)) or abs(ov - (1.0 - es / cs)) > 1e-3:
                problems.append("%s %s: overlap %r, exposed %.6g of %.6g s" %
                                (w.get("collective"), w.get("bytes"), ov, es, cs))
    time.sleep(0.02)
if sim.poll() is None:
    sim.kill()
    problems.append("autoccl-sim ran past 30 s")
out, err = sim.communicate()
if sim.returncode not in (0, None):
    problems.append("autoccl-sim exit status %d: %s" % (sim.returncode, err[-2000:]))
print("documents read: %d; states seen (workload x document): %s" % (docs, json.dumps(seen)))
if docs == 0:
    problems.append("no state document read")
if overlaps == 0:
    problems.append("no workload with an exposed time to check its overlap against")
if not WAITING & set(seen):
    problems.append("no waiting state seen")
if not DECIDED & set(seen):
    problems.append("no decided state seen")
for p in sorted(set(problems)):
    print("FAIL:", p)
sys.exit(1 if problems else 0)
