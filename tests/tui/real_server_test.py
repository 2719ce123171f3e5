#!/usr/bin/env python3
"""autoccl-top against the real endpoint (web/server.c + observe/render.c) as
served by tests/web's acl-web-fixture: the state it renders must parse, the
rows must match it, the SSE stream must be followed, and a restart on the
same port must be recovered from. Bounded in time.

  real_server_test.py AUTOCCL_TOP ACL_WEB_FIXTURE"""
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tmux_test as t  # noqa: E402


def main():
    t.TOP, server = sys.argv[1], sys.argv[2]
    cmd = [server, "--interval-ms", "200"]
    t0 = time.monotonic()
    try:
        p, port = t.start_fixture(cmd=cmd)
        url = "http://127.0.0.1:%d" % port
        st = t.get_state(port)
        r = subprocess.run([t.TOP, "--url", url, "--once", "--json"], capture_output=True,
                           text=True, timeout=20, env=t.ENV)
        t.check("--once --json against the real server", r.returncode == 0, r.stderr)
        doc = json.loads(r.stdout) if r.returncode == 0 else {}
        wl = doc.get("workloads", [])
        t.check("every workload of the real state is there",
                len(wl) == len(st["workloads"]) and all(w["source"] == url for w in wl),
                (len(wl), len(st["workloads"])))
        keys = sorted((w["comm"], w["collective"], w["bytes"]) for w in st["workloads"])
        t.check("same workloads", sorted((w["comm"], w["collective"], w["bytes"]) for w in wl)
                == keys)
        t.check("same communicators",
                sorted(c["id"] for c in doc.get("communicators", [])) ==
                sorted(c["id"] for c in st["communicators"]))

        t.session("real", "%s --url %s -d 0.5" % (t.TOP, url))
        scr = t.wait_for("real", t.has("connected (stream)"))
        t.check("follows the real SSE stream", "connected (stream)" in scr, scr[:400])
        scr = t.wait_for("real", lambda s: len(t.table(s)) == len(st["workloads"]))
        rows = [c for _, c in t.table(scr)]
        want = sorted((t.label_of(st, w["comm"]), w["collective"], t.fmt_bytes(w["bytes"]),
                       "-" if w["rank"] is None else str(w["rank"])) for w in st["workloads"])
        got = sorted((c["COMM"], c["COLLECTIVE"], c["SIZE"], c["RANK"]) for c in rows)
        t.check("rows match the real state (labels, sizes, unknown rank as -)", got == want,
                (got, want))
        # Values that the fixture does not move: converged/disabled rows.
        frozen = [w for w in st["workloads"] if w["state"] in ("converged", "disabled")]
        bad = []
        for w in frozen:
            key = (t.label_of(st, w["comm"]), w["collective"], t.fmt_bytes(w["bytes"]))
            c = next((c for c in rows if (c["COMM"], c["COLLECTIVE"], c["SIZE"]) == key), None)
            if not c or c["BEST"] != t.fmt_cand(w["best"]) or \
                    c["STATE"] != t.fmt_state(w["state"]):
                bad.append((key, c))
        t.check("converged/disabled rows show the same best and state", not bad, bad)
        t.stop_fixture(p)
        scr = t.wait_for("real", t.has("disconnected \u2014 retrying"), 15)
        t.check("real server stopped: disconnected \u2014 retrying",
                "disconnected \u2014 retrying" in scr)
        t.fixtures[0], _ = t.start_fixture(cmd=cmd, port=port)
        scr = t.wait_for("real", t.has("connected (stream)"), 20)
        t.check("real server restarted: recovered", "connected (stream)" in scr and
                "disconnected" not in scr, scr[:400])
        t.keys("real", "q")
    finally:
        t.tmux("kill-server", check_rc=False)
        for f in t.fixtures:
            if f.poll() is None:
                t.stop_fixture(f)
    t.check("finished within the time bound", time.monotonic() - t0 < 120)
    print("%d failure(s)" % len(t.failures))
    return 1 if t.failures else 0


if __name__ == "__main__":
    sys.exit(main())
