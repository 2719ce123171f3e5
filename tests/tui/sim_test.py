#!/usr/bin/env python3
"""autoccl-top against autoccl-sim: the real plugin, loaded by simulated
ranks (one process each), serving the endpoint on ports P, P+1, ...; all of
them are watched at once and merged by communicator. Bounded in time.

  sim_test.py AUTOCCL_TOP AUTOCCL_SIM"""
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tmux_test as t  # noqa: E402


def free_base(n=8):
    """A base port with n free ports above it (loopback)."""
    for _ in range(50):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        base = s.getsockname()[1]
        s.close()
        if base + n > 65535:
            continue
        ok = True
        for p in range(base, base + n):
            c = socket.socket()
            try:
                c.bind(("127.0.0.1", p))
            except OSError:
                ok = False
            finally:
                c.close()
        if ok:
            return base
    raise SystemExit("no free port range")


def up(port):
    try:
        with urllib.request.urlopen("http://127.0.0.1:%d/api/v1/state" % port, timeout=1):
            return True
    except OSError:
        return False


def main():
    t.TOP, sim = sys.argv[1], sys.argv[2]
    base = free_base()
    t0 = time.monotonic()
    proc = subprocess.Popen([sim, "--port", str(base), "--duration", "40", "--realtime", "-q"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            start_new_session=True)
    try:
        end = time.monotonic() + 20
        while time.monotonic() < end and not up(base) and proc.poll() is None:
            time.sleep(0.2)
        if not t.check("autoccl-sim serves the endpoint", up(base),
                       proc.stderr.read().decode()[-500:] if proc.poll() is not None else ""):
            return 1
        time.sleep(1)
        ports = [p for p in range(base, base + 8) if up(p)]
        urls = ["http://127.0.0.1:%d" % p for p in ports]
        args = sum((["--url", u] for u in urls), [])
        r = subprocess.run([t.TOP, *args, "--once", "--json"], capture_output=True, text=True,
                           timeout=30, env=t.ENV)
        t.check("--once --json over every rank process", r.returncode == 0, r.stderr)
        doc = json.loads(r.stdout) if r.returncode == 0 else {}
        states = [t.get_state(p) for p in ports]
        comm_ids = {c["id"] for s in states for c in s["communicators"]}
        comms = doc.get("communicators", [])
        t.check("communicators merged across ranks",
                sorted(c["id"] for c in comms) == sorted(comm_ids) and
                all(c["sources"] == sum(any(x["id"] == c["id"] for x in s["communicators"])
                                        for s in states) for c in comms), comms)
        # the first samples come after the warm-up calls (a few seconds)
        end = time.monotonic() + 20
        while True:
            states = [t.get_state(p) for p in ports]
            exposed = [w["exposed_seconds"] for s in states for w in s["workloads"]
                       if w.get("exposed_seconds") is not None]
            if (exposed and all(s["job"]["exposed_seconds"] is not None for s in states)) or \
                    time.monotonic() > end:
                break
            time.sleep(0.5)
        r = subprocess.run([t.TOP, *args, "--once", "--json"], capture_output=True, text=True,
                           timeout=30, env=t.ENV)
        doc = json.loads(r.stdout) if r.returncode == 0 else {}
        t.check("the simulator shows overlap and exposed time by default",
                exposed and all(0 <= e for e in exposed) and
                any(w.get("overlap") is not None for s in states for w in s["workloads"]) and
                all(s["job"]["exposed_seconds"] is not None for s in states) and
                doc.get("summary", {}).get("exposed_seconds") is not None,
                [s.get("job") for s in states])
        wl = doc.get("workloads", [])
        t.check("workloads of every rank, each with its source",
                {w["source"] for w in wl} == set(urls) and
                len(wl) >= sum(len(s["workloads"]) for s in states) * 0.5, len(wl))
        t.session("sim", "%s %s -d 0.5" % (t.TOP, " ".join(args)))
        scr = t.wait_for("sim", lambda s: s.count("connected (stream)") == min(len(urls), 3))
        t.check("every rank's stream followed", scr.count("connected (stream)") >= min(len(urls), 3),
                scr[:600])
        scr = t.wait_for("sim", lambda s: len(t.table(s)) > 0)
        t.check("rows on screen", len(t.table(scr)) > 0, scr[:600])
        t.keys("sim", "q")
        # One URL for the host: --local-ranks N finds every rank process.
        one = [t.TOP, "--url", urls[0], "--local-ranks", str(len(ports))]
        r1 = subprocess.run(one + ["--once", "--json"], capture_output=True, text=True,
                            timeout=30, env=t.ENV)
        doc1 = json.loads(r1.stdout) if r1.returncode == 0 else {}
        t.check("one URL with --local-ranks %d: workloads of every rank process" % len(ports),
                r1.returncode == 0 and len(ports) == 4 and
                {w["source"] for w in doc1.get("workloads", [])} == set(urls), r1.stderr[-300:])
        t.session("one", " ".join(one + ["-d", "0.5"]))

        def ranks_on(scr):
            return {c.get("RANK", "").strip() for _, c in t.table(scr)}
        scr = t.wait_for("one", lambda s: len(ranks_on(s) - {""}) >= 4)
        t.check("the screen shows the 4 ranks from one URL",
                ranks_on(scr) >= {"0", "1", "2", "3"}, scr[:800])
        t.keys("one", "q")
    finally:
        t.tmux("kill-server", check_rc=False)
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
    t.check("finished within the time bound", time.monotonic() - t0 < 110)
    print("%d failure(s)" % len(t.failures))
    return 1 if t.failures else 0


if __name__ == "__main__":
    sys.exit(main())
