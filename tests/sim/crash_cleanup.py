#!/usr/bin/env python3
"""autoccl-sim leaves nothing behind however it ends: its
parent killed with SIGKILL, a rank killed with SIGKILL, and the leftovers
of a run killed together with its guardian, removed at the next start.
Checks the feed segment, the decision-log directory and the ranks'
consensus segments (found in the ranks' /proc/PID/maps). Bounded: ~20 s.

usage: crash_cleanup.py SIM PLUGIN
"""
import glob
import os
import signal
import subprocess
import sys
import tempfile
import time

SIM, PLUGIN = sys.argv[1], sys.argv[2]
problems = []
uid = os.getuid()


def children(pid):
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(x) for x in f.read().split()]
    except OSError:
        return []


def segments_of(pids):
    segs = set()
    for p in pids:
        try:
            with open(f"/proc/{p}/maps") as f:
                for line in f:
                    path = line.split()[-1] if len(line.split()) >= 6 else ""
                    if path.startswith("/dev/shm/autoccl-"):
                        segs.add(path)
        except OSError:
            pass
    return segs


def start(tmp):
    env = dict(os.environ, TMPDIR=tmp, AUTOCCL_HTTP_PORT="")
    p = subprocess.Popen([SIM, "--plugin", PLUGIN, "--ranks", "2", "--duration", "30", "--quiet",
                          "--workload", "tp"], env=env,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 10
    feed, logs, segs, ranks = [], [], set(), []
    while time.monotonic() < deadline:
        feed = glob.glob(f"/dev/shm/autoccl-sim-{p.pid}-*")
        logs = glob.glob(os.path.join(tmp, "autoccl-sim.*"))
        kids = children(p.pid)
        # rank processes map a consensus segment (the guardian maps none)
        ranks = [k for k in kids
                 if any(not s.startswith("/dev/shm/autoccl-sim") for s in segments_of([k]))]
        segs = {s for s in segments_of(ranks) if not s.startswith("/dev/shm/autoccl-sim")}
        if feed and logs and len(ranks) == 2 and segs:
            break
        time.sleep(0.1)
    if not (feed and logs and segs):
        problems.append(f"run did not start as expected: feed {feed}, logs {logs}, segments {segs}")
    return p, feed, logs, segs, ranks


def left(what, paths, within=5.0):
    deadline = time.monotonic() + within
    while time.monotonic() < deadline and any(os.path.exists(x) for x in paths):
        time.sleep(0.1)
    rest = [x for x in paths if os.path.exists(x)]
    if rest:
        problems.append(f"{what}: left behind after {within:.0f} s: {rest}")
        for x in rest:  # tidy up for the next case
            subprocess.run(["rm", "-rf", x])
    else:
        print(f"crash-cleanup: {what}: nothing left ({len(paths)} paths removed)")


with tempfile.TemporaryDirectory() as tmp:
    # 1. The parent is killed: ranks die with it, the guardian cleans up.
    p, feed, logs, segs, ranks = start(tmp)
    time.sleep(0.5)
    p.send_signal(signal.SIGKILL)
    p.wait(10)
    left("parent killed with SIGKILL", feed + logs + sorted(segs))

    # 2. A rank is killed: the parent reports it and cleans up.
    p, feed, logs, segs, ranks = start(tmp)
    time.sleep(0.5)
    if ranks:
        os.kill(ranks[0], signal.SIGKILL)
    rc = p.wait(30)
    if rc == 0:
        problems.append("a rank killed with SIGKILL, yet the run exited 0")
    left("a rank killed with SIGKILL", feed + logs + sorted(segs))

    # 3. A run killed together with its guardian: the next start reaps it.
    dead = subprocess.Popen(["true"])
    dead.wait()
    stale_feed = f"/dev/shm/autoccl-sim-{dead.pid}-deadbeef"
    fd = os.open(stale_feed, os.O_CREAT | os.O_EXCL | os.O_RDWR, 0o600)
    os.close(fd)
    stale_dir = os.path.join(tmp, f"autoccl-sim.{dead.pid}.AbCdEf")
    os.mkdir(stale_dir, 0o700)
    open(os.path.join(stale_dir, "rank0.log"), "wb").write(b"x" * 4096)
    r = subprocess.run([SIM, "--plugin", PLUGIN, "--ranks", "2", "--steps", "5", "--quiet",
                        "--workload", "tp"], env=dict(os.environ, TMPDIR=tmp, AUTOCCL_HTTP_PORT=""),
                       capture_output=True, timeout=60)
    if r.returncode != 0:
        problems.append(f"the next run failed: {r.stderr.decode()[-500:]}")
    left("leftovers of a run killed with its guardian, at the next start", [stale_feed, stale_dir], 1.0)

for x in problems:
    print("crash-cleanup: PROBLEM:", x)
sys.exit(1 if problems else 0)
