#!/usr/bin/env python3
"""The states /api/v1/state shows are the search's real ones: autoccl-sim
drives the real plugin at the default exploration budget, and the endpoint of
rank process 0 is polled while it runs. Over the run it must show a waiting
state (the budget holds the search back), a decided one, only names of the
state table, and `decided` true exactly for the decided states. Bounded: the
sim runs 6 s.

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
env = dict(os.environ)
env.pop("AUTOCCL_EXPLORE_BUDGET", None)
env["AUTOCCL_HTTP_PORT"] = ""
sim = subprocess.Popen([SIM, "--plugin", PLUGIN, "--json", "--quiet", "--ranks", "2",
                        "--duration", "6", "--workload", "tp", "--port", str(port)],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
seen, problems, docs = {}, [], 0
deadline = time.monotonic() + 30
while sim.poll() is None and time.monotonic() < deadline:
    try:
        with urllib.request.urlopen("http://127.0.0.1:%d/api/v1/state" % port, timeout=2) as r:
            doc = json.load(r)
    except (OSError, ValueError):
        time.sleep(0.05)
        continue
    docs += 1
    for w in doc.get("workloads", []):
        st, dec = w.get("state"), w.get("decided")
        seen[st] = seen.get(st, 0) + 1
        if st not in KNOWN:
            problems.append("unknown state %r" % st)
        if dec is not (st in DECIDED):
            problems.append("state %r with decided %r" % (st, dec))
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
if not WAITING & set(seen):
    problems.append("no waiting state seen")
if not DECIDED & set(seen):
    problems.append("no decided state seen")
for p in sorted(set(problems)):
    print("FAIL:", p)
sys.exit(1 if problems else 0)
