#!/usr/bin/env python3
"""autoccl-sim leaves nothing behind however it ends: its
parent killed with SIGKILL, a rank killed with SIGKILL, and the leftovers
of a run killed together with its guardian, removed at the next start.
Checks the feed segment, the decision-log directory and the ranks'
consensus segments (found in the ranks' /proc/PID/maps). A run that ends
normally leaves no directory either, and its copy of AUTOCCL_REPORT names
files as the plugin does (%h the host, %p the pid, %r the local rank) and
never writes through a planted symbolic link or opens a planted FIFO.
Bounded: ~25 s.

usage: crash_cleanup.py SIM PLUGIN
"""
import glob
import json
import os
import signal
import socket
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

    # 4. Normal ends, with the user's AUTOCCL_REPORT copied by the simulator.
    def run_copy(tmpl, extra=()):
        env = dict(os.environ, TMPDIR=tmp, AUTOCCL_HTTP_PORT="", AUTOCCL_REPORT=tmpl)
        try:
            r = subprocess.run([SIM, "--plugin", PLUGIN, "--ranks", "2", "--steps", "5", "--quiet",
                                "--workload", "tp", *extra], env=env, capture_output=True, timeout=20)
        except subprocess.TimeoutExpired:
            problems.append(f"AUTOCCL_REPORT={tmpl}: the run did not end within 20 s")
            return None
        rest = glob.glob(os.path.join(tmp, "autoccl-sim.*"))
        if rest:
            problems.append(f"a run that ended normally left {rest}")
            subprocess.run(["rm", "-rf", *rest])
        return r

    out = os.path.join(tmp, "out")
    os.mkdir(out)
    r = run_copy(os.path.join(out, "r-%h-%p-%r.json"))
    host = socket.gethostname()
    if r is not None:
        names = sorted(os.listdir(out))
        reports = [json.load(open(os.path.join(out, n))) for n in names if n.endswith(".json")]
        want = sorted(f"r-{x['host']}-{x['pid']}-{x['local_rank']}.json{t}"
                      for x in reports for t in ("", ".txt"))
        if len(reports) != 2 or names != want or any(x["host"] != host for x in reports) or \
                sorted(x["local_rank"] for x in reports) == [0, 0]:
            problems.append(f"report copies named {names}, expected r-{host}-<pid>-<local rank> "
                            f"for 2 processes (exit {r.returncode}: {r.stderr.decode()[-300:]})")
        else:
            print(f"crash-cleanup: report copies named as the plugin names them: {names}")
    # A planted link to a file of someone else's, and a planted FIFO.
    victim = os.path.join(tmp, "victim")
    with open(victim, "w") as f:
        f.write("precious\n")
    os.chmod(victim, 0o600)
    os.symlink(victim, os.path.join(out, "p.json"))
    os.mkfifo(os.path.join(out, "p.json.1"))
    r = run_copy(os.path.join(out, "p.json"))
    if r is not None:
        err = r.stderr.decode()
        if open(victim).read() != "precious\n":
            problems.append("the report copy wrote through a planted symbolic link")
        if "symbolic link" not in err or "FIFO" not in err:
            problems.append(f"planted link and FIFO not refused with a message: {err[-400:]}")
        else:
            print("crash-cleanup: planted link and FIFO refused: " +
                  " / ".join(l for l in err.splitlines() if "AUTOCCL_REPORT" in l))

for x in problems:
    print("crash-cleanup: PROBLEM:", x)
sys.exit(1 if problems else 0)
