#!/usr/bin/env python3
"""autoccl-top against autoccl-sim: the real plugin, loaded by simulated
ranks (one process each), serving the endpoint on ports P, P+1, ...; all of
them are watched at once and merged by communicator; one URL finds the
host's other local ranks (its /api/v1/host), a local rank that does not
answer is shown as such while the others still show, and at 80 columns the
connection lines are cut at a field or word, marked. Bounded in time.

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


def get_host(port):
    with urllib.request.urlopen("http://127.0.0.1:%d/api/v1/host" % port, timeout=5) as r:
        return json.load(r)


def words(text):
    """Words with digits blanked (timings in error texts vary by run)."""
    return ["".join("0" if c.isdigit() else c for c in w) for w in text.split()]


def check_host_view(urls, ports, ranks_on):
    # The host list: every local rank with its pid and port.
    host = get_host(ports[0])
    procs = host.get("processes", [])
    t.check("/api/v1/host lists the 4 local ranks and their ports",
            [p["local_rank"] for p in procs] == [0, 1, 2, 3] and
            [p["port"] for p in procs] == ports and
            all(get_host(p)["processes"] == procs for p in ports[1:]), host)
    # One URL, no --local-ranks: the endpoint names its siblings.
    r = subprocess.run([t.TOP, "--url", urls[0], "--once", "--json"], capture_output=True,
                       text=True, timeout=30, env=t.ENV)
    doc = json.loads(r.stdout) if r.returncode == 0 else {}
    t.check("one URL without --local-ranks: every local rank's workloads",
            r.returncode == 0 and [x["url"] for x in doc.get("sources", [])] == urls and
            {w["source"] for w in doc.get("workloads", [])} == set(urls), r.stderr[-300:])
    # Local rank 3 stops answering (stopped; its port still accepts).
    stopped = procs[3]["pid"]
    os.kill(stopped, signal.SIGSTOP)
    try:
        r = subprocess.run([t.TOP, "--url", urls[0], "--once", "--json"], capture_output=True,
                           text=True, timeout=30, env=t.ENV)
        doc = json.loads(r.stdout) if r.returncode == 0 else {}
        src = {x["url"]: x for x in doc.get("sources", [])}
        err3 = (src.get(urls[3]) or {}).get("error") or ""
        t.check("a silent local rank: absent, the others shown, exit 0",
                r.returncode == 0 and src.get(urls[3], {}).get("status", "").startswith("no answer")
                and err3 and {w["source"] for w in doc.get("workloads", [])} == set(urls[:3]),
                (r.returncode, r.stderr[-300:], src.get(urls[3])))
        t.session("w80", "%s --url %s -d 0.5" % (t.TOP, urls[0]), w=80, h=30)
        scr = t.wait_for("w80", lambda s: "no answer" in s and len(ranks_on(s) - {""}) >= 3, 15)
        t.check("80 columns: rows of the 3 answering ranks, none of the silent one",
                ranks_on(scr) - {""} == {"0", "1", "2"}, scr[:800])
        lines = [ln.rstrip() for ln in scr.split("\n") if ln.startswith("http://")]
        ok = [ln for ln in lines if "connected (stream)" in ln or "connected (polling)" in ln]
        silent = [ln for ln in lines if "no answer" in ln]
        t.check("80 columns: answering lines end on a whole field",
                len(ok) == 3 and all(ln.split()[-2] == "pid" and ln.split()[-1].isdigit()
                                     for ln in ok), lines)
        full = words(urls[3] + "  no answer \u2014 retrying  " + err3)
        cut = silent[0][:-1].rstrip() if silent and silent[0].endswith("\u2026") else None
        t.check("80 columns: the silent line is cut at a word and marked with an ellipsis",
                cut is not None and len(silent[0]) <= 80 and
                words(cut) == full[:len(words(cut))], (silent, err3))
    finally:
        os.kill(stopped, signal.SIGCONT)
    scr = t.wait_for("w80", lambda s: len(ranks_on(s) - {""}) >= 4, 15)
    t.check("the local rank answers again: its rows come back", ranks_on(scr) >= {"0", "1", "2", "3"},
            scr[:800])
    t.keys("w80", "q")


def main():
    t.TOP, sim = sys.argv[1], sys.argv[2]
    base = free_base()
    t0 = time.monotonic()
    proc = subprocess.Popen([sim, "--ranks", "4", "--port", str(base), "--duration", "70",
                             "--realtime", "-q"],
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
        check_host_view(urls, ports, ranks_on)
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
