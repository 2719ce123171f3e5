#!/usr/bin/env python3
"""Integration test of autoccl-top: the real binary in a real tmux, against
the loopback fixture server (fixture.py). Every wait is bounded.

  tmux_test.py AUTOCCL_TOP FIXTURE_PY

Set ACL_TOP_SCREEN_OUT=path to save the 160x48 capture (docs/autoccl-top-screen.txt)."""
import json
import os
import re
import select
import subprocess
import sys
import time
import urllib.request

TOP = FIXTURE = None  # set by main(), or by a test importing this module
SOCK = "acltop%d" % os.getpid()
ENV = dict(os.environ, LANG="C.UTF-8", LC_ALL="C.UTF-8")
for k in ("NO_COLOR", "http_proxy", "HTTP_PROXY", "all_proxy", "ALL_PROXY"):
    ENV.pop(k, None)
COLW = [16, 5, 13, 9, 10, 11, 18, 18, 8, 9, 8, 11, 9]
COLS = ["COMM", "RANK", "COLLECTIVE", "SIZE", "STATE", "SUBSPACE", "CANDIDATE", "BEST",
        "SPEEDUP", "SAVED", "OVERLAP", "BUSBW", "CALLS"]
KEEP80 = ["COMM", "RANK", "COLLECTIVE", "SIZE", "STATE", "SPEEDUP"]
failures = []
fixtures = []


def check(name, cond, detail=""):
    print(("ok   - " if cond else "FAIL - ") + name + ("" if cond else ": " + str(detail)),
          flush=True)
    if not cond:
        failures.append(name)
    return cond


# ---- fixture servers -------------------------------------------------------
def start_fixture(*args, port=0, cmd=None):
    cmd = cmd or [sys.executable, FIXTURE]
    p = subprocess.Popen([*cmd, "--port", str(port), *args], stdout=subprocess.PIPE, env=ENV)
    fixtures.append(p)
    r, _, _ = select.select([p.stdout], [], [], 10)
    if not r:
        raise SystemExit("fixture did not start")
    port = int(p.stdout.readline().split()[-1])  # "N" or "PORT N"
    return p, port


def stop_fixture(p):
    p.terminate()
    try:
        p.wait(5)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()


def get_state(port):
    with urllib.request.urlopen("http://127.0.0.1:%d/api/v1/state" % port, timeout=5) as r:
        return json.load(r)


# ---- tmux ------------------------------------------------------------------
def tmux(*args, check_rc=True):
    r = subprocess.run(["tmux", "-u", "-L", SOCK, "-f", "/dev/null", *args],
                       capture_output=True, text=True, env=ENV, timeout=10)
    if check_rc and r.returncode != 0:
        raise RuntimeError("tmux %s: %s" % (args, r.stderr))
    return r


def session(name, cmd, w=160, h=48):
    tmux("new-session", "-d", "-s", name, "-x", str(w), "-y", str(h), cmd)


def capture(name, escapes=False):
    args = ["capture-pane", "-p", "-t", name] + (["-e"] if escapes else [])
    return tmux(*args).stdout


def keys(name, *k):
    tmux("send-keys", "-t", name, *k)


def wait_for(name, pred, timeout=10.0):
    """Polls the screen until pred(screen) is true; returns the last screen."""
    end = time.monotonic() + timeout
    scr = ""
    while time.monotonic() < end:
        scr = capture(name)
        if pred(scr):
            return scr
        time.sleep(0.1)
    return scr


def has(text):
    return lambda s: text in s


# ---- the same formatting rules, written again for the cross-check ----------
def fmt_bytes(b):
    if b is None:
        return "-"
    units = ["B", "KiB", "MiB", "GiB", "TiB"]
    v, u = float(b), 0
    while v >= 1024 and u < 4:
        v /= 1024
        u += 1
    return "%.0f %s" % (v, units[u]) if u == 0 or v == int(v) else "%.1f %s" % (v, units[u])


def fmt_bw(x):
    return "-" if x is None else "%.1f GB/s" % (x / 1e9) if x >= 1e9 else "%.1f MB/s" % (x / 1e6)


def fmt_seconds(s):
    a = abs(s)
    if a == 0:
        return "0 s"
    if a < 1e-6:
        return "%.0f ns" % (s * 1e9)
    if a < 1e-3:
        return "%.1f us" % (s * 1e6)
    if a < 1.0:
        return "%.1f ms" % (s * 1e3)
    return "%.2f s" % s


def fmt_signed_seconds(s):
    if s is None:
        return "-"
    return ("-" if s < 0 else "+" if s > 0 else "") + fmt_seconds(abs(s))


def fmt_cand(c):
    if not c or not c.get("algo"):
        return "-"
    if c["algo"] == "NCCL" and not c.get("channels"):
        return "NCCL"
    s = c["algo"] + ("/" + c["proto"] if c.get("proto") else "")
    return s + ("/%dch" % c["channels"] if c.get("channels") else "")


def fmt_state(s):
    return s or "-"  # the plugin's names, unchanged (acl_phase_name)


def label_of(state, comm_id):
    for c in state["communicators"]:
        if c["id"] == comm_id and c.get("name") and c["name"] != comm_id:
            return c["name"]
    return comm_id[:10]


def shown_columns(hdr_line):
    """The columns the header line shows, in order (sort marks stripped)."""
    return [re.sub("[\u25b2\u25bc]$", "", t) for t in hdr_line.split()]


def table(scr):
    """Rows of the main table: (selected, {column: text}), for the columns
    the header shows (narrow terminals drop some)."""
    lines = scr.split("\n")
    hdr = next((i for i, l in enumerate(lines) if "COLLECTIVE" in l and "SIZE" in l), None)
    rows = []
    if hdr is None:
        return rows
    shown = shown_columns(lines[hdr])
    cols = [(n, w) for n, w in zip(COLS, COLW) if n in shown]
    for l in lines[hdr + 1:]:
        if not l.strip() or "trajectory:" in l or l.startswith("row "):
            break
        cells, x = {}, 2
        for name, w in cols:
            cells[name] = l[x:x + w].strip()
            x += w + 1
        rows.append((l.startswith(">"), cells))
    return rows


def pane_title(scr):
    m = re.search(r"trajectory: (\S+) rank (\S+) (\S+) (\S+ \S+)", scr)
    return m.groups() if m else None


# ---- tests -----------------------------------------------------------------
def test_cli(port, url):
    r = subprocess.run([TOP, "--url", "http://127.0.0.1:1", "--once"], capture_output=True,
                       text=True, timeout=20, env=ENV)
    check("unreachable URL at start exits non-zero", r.returncode == 1, r.returncode)
    check("unreachable URL message",
          r.stderr.strip() == "autoccl-top: cannot reach http://127.0.0.1:1: Connection refused",
          r.stderr)
    r = subprocess.run([TOP, "--url", "http://127.0.0.1:1", "-b", "-n", "1"],
                       capture_output=True, text=True, timeout=20, env=ENV)
    check("unreachable URL in batch mode exits non-zero",
          r.returncode == 1 and "cannot reach" in r.stderr, r.stderr)
    r = subprocess.run([TOP, "-d", "0"], capture_output=True, text=True, timeout=10, env=ENV)
    check("bad delay is a usage error", r.returncode == 2 and "bad delay '0'" in r.stderr,
          r.stderr)
    r = subprocess.run([TOP, "--version"], capture_output=True, text=True, timeout=10)
    check("--version", r.returncode == 0 and r.stdout.startswith("autoccl-top "), r.stdout)
    r = subprocess.run([TOP, "--help"], capture_output=True, text=True, timeout=10)
    check("--help lists the keys and flags",
          r.returncode == 0 and "--delay" in r.stdout and "reverse" in r.stdout, r.stdout)
    r = subprocess.run([TOP, "--url", url], capture_output=True, text=True, timeout=10,
                       env=ENV, stdin=subprocess.DEVNULL)
    check("interactive mode without a terminal says so",
          r.returncode == 2 and "not a terminal" in r.stderr, r.stderr)

    v2, p2 = start_fixture("--version", "2")
    r = subprocess.run([TOP, "--url", "127.0.0.1:%d" % p2, "--once"], capture_output=True,
                       text=True, timeout=20, env=ENV)
    check("wrong schema version is refused with a clear message",
          r.returncode == 1 and "unsupported schema version 2" in r.stderr, r.stderr)
    stop_fixture(v2)

    st = get_state(port)
    t0 = time.monotonic()
    r = subprocess.run([TOP, "--url", url, "-b", "-n", "2", "-d", "0.2"], capture_output=True,
                       text=True, timeout=30, env=ENV)
    out = r.stdout.split("\n")
    iters = [l for l in out if l.startswith("autoccl-top ") and "iteration" in l]
    rows = [l for l in out if re.match(r"^(dp|0x[0-9a-f]{8})\s", l)]
    check("batch -n 2 prints two tables", r.returncode == 0 and len(iters) == 2, r.stdout[-500:])
    check("batch tables hold every workload",
          len(rows) == 2 * len(st["workloads"]), "%d rows" % len(rows))
    check("batch -n 2 -d 0.2 finishes quickly", time.monotonic() - t0 < 10)

    r = subprocess.run([TOP, "--url", url, "--once", "--json"], capture_output=True, text=True,
                       timeout=20, env=ENV)
    try:
        doc = json.loads(r.stdout)
    except ValueError as e:
        doc = {}
        check("--once --json is JSON", False, e)
    wl = doc.get("workloads", [])
    check("--once --json has every workload", len(wl) == len(st["workloads"]), len(wl))
    check("--once --json workloads carry their source URL",
          all(w.get("source") == url for w in wl))
    by_key = {(w["comm"], w["collective"], w["bytes"]): w for w in st["workloads"]}
    same = all(by_key[(w["comm"], w["collective"], w["bytes"])]["speedup"] == w["speedup"] and
               by_key[(w["comm"], w["collective"], w["bytes"])]["busbw"] == w["busbw"]
               for w in wl)
    check("--once --json values match /api/v1/state (nulls kept)", same)

    f2, port2 = start_fixture("--rank", "1")
    url2 = "http://127.0.0.1:%d" % port2
    r = subprocess.run([TOP, "--url", url, "--url", url2, "--once", "--json"],
                       capture_output=True, text=True, timeout=20, env=ENV)
    doc = json.loads(r.stdout) if r.returncode == 0 else {}
    wl = doc.get("workloads", [])
    check("two URLs: workloads of both ranks",
          len(wl) == 2 * len(st["workloads"]) and
          sum(w["source"] == url2 for w in wl) == len(st["workloads"]), len(wl))
    comms = doc.get("communicators", [])
    want_wait = 2 * sum(c["consensus_wait_seconds"] for c in st["communicators"])
    check("two URLs: merged by communicator",
          len(comms) == len(st["communicators"]) and all(c["sources"] == 2 for c in comms),
          comms)
    check("two URLs: consensus wait summed",
          abs(doc.get("summary", {}).get("consensus_wait_seconds", 0) - want_wait) < 1e-9)
    # The merged table groups rows of one communicator together.
    labels = [w["comm_name"] for w in wl]
    check("two URLs: rows grouped by communicator",
          labels == sorted(labels), labels)
    stop_fixture(f2)


def test_tui(port, url):
    st = get_state(port)
    name = "main"
    session(name, "%s --url %s -d 0.5" % (TOP, url))
    scr = wait_for(name, has("connected (stream)"))
    check("connects and follows the SSE stream", "connected (stream)" in scr, scr[:400])
    scr = wait_for(name, lambda s: len(table(s)) == len(st["workloads"]))
    rows = table(scr)
    check("one row per workload", len(rows) == len(st["workloads"]), len(rows))
    conv = sum(w["state"] == "converged" for w in st["workloads"])
    check("header: converged / total",
          "converged %d/%d" % (conv, len(st["workloads"])) in scr, scr.split("\n")[0])
    num = den = 0.0
    for w in st["workloads"]:
        if w["speedup"] is not None and w["baseline_seconds"] and w["calls"]:
            num += w["calls"] * w["baseline_seconds"] * w["speedup"]
            den += w["calls"] * w["baseline_seconds"]
    check("header: time-weighted speedup", "speedup %.2fx" % (num / den) in scr,
          scr.split("\n")[0])
    wait = sum(c["consensus_wait_seconds"] for c in st["communicators"])
    check("header: consensus wait", "consensus wait %.1f ms" % (wait * 1e3) in scr,
          scr.split("\n")[0])
    check("header: profiler source", "profiler sim" in scr)
    net = sum(w["time_saved_seconds"] for w in st["workloads"]
              if w.get("time_saved_seconds") is not None)
    nranks = len(set(w["rank"] for w in st["workloads"]))
    want_net = "net saved %s per rank" % fmt_signed_seconds(net / nranks) + (
        " (total %s, %d ranks)" % (fmt_signed_seconds(net), nranks) if nranks > 1 else "")
    check("header: net time saved per rank, the host's sum labelled a total",
          want_net in scr, (want_net, scr.split("\n")[0]))
    exp = [w["exposed_seconds"] for w in st["workloads"] if w.get("exposed_seconds") is not None]
    check("header: exposed time (sim overlap)", bool(exp) and
          "exposed %s" % fmt_seconds(sum(exp)) in scr, scr.split("\n")[0])
    check("a workload that kept NCCL's choice says how many were tried",
          "NCCL, 10 tried" in scr, scr)
    mism = []
    for w in st["workloads"]:
        key = (label_of(st, w["comm"]), str(w["rank"]), w["collective"], fmt_bytes(w["bytes"]))
        row = [c for _, c in rows if (c["COMM"], c["RANK"], c["COLLECTIVE"], c["SIZE"]) == key]
        if len(row) != 1:
            mism.append(("missing", key))
            continue
        c = row[0]
        want = {"STATE": fmt_state(w["state"]), "BEST": fmt_cand(w["best"]),
                "CANDIDATE": fmt_cand(w["candidate"]),
                "SPEEDUP": "-" if w["speedup"] is None else "%.2fx" % w["speedup"],
                "BUSBW": fmt_bw(w["busbw"]),
                "OVERLAP": "-" if w["overlap"] is None else "%.0f%%" % (w["overlap"] * 100),
                "CALLS": str(w["calls"]), "SUBSPACE": w["subspace"] or "-",
                "SAVED": fmt_signed_seconds(w.get("time_saved_seconds"))}
        if (w["best"] or {}).get("algo") == "NCCL" and w["state"] == "converged" and \
                w["candidates_evaluated"]:
            want["BEST"] = "NCCL, %d tried" % w["candidates_evaluated"]
        for k, v in want.items():
            if c[k] != v:
                mism.append((key, k, c[k], v))
    check("rows match /api/v1/state (nulls shown as -)", not mism, mism)
    if os.environ.get("ACL_TOP_SCREEN_OUT"):
        with open(os.environ["ACL_TOP_SCREEN_OUT"], "w") as f:
            f.write("\n".join(l.rstrip() for l in scr.rstrip("\n").split("\n")) + "\n")

    # Sorting: s cycles COMM -> ... -> SPEEDUP (8 presses), r reverses.
    check("default sort: communicator, ascending", "COMM\u25b2" in scr, scr.split("\n")[2])
    desc = {"SIZE", "SPEEDUP", "SAVED", "OVERLAP", "BUSBW", "CALLS"}
    marked = []
    for col in COLS[1:9]:
        keys(name, "s")
        mark = col + ("\u25bc" if col in desc else "\u25b2")
        scr = wait_for(name, has(mark), 5)
        if mark not in scr:
            marked.append(col)
    check("s cycles the sort column, marked in the header", not marked, marked)
    sp = [c["SPEEDUP"] for _, c in table(scr)]
    known = [float(x[:-1]) for x in sp if x != "-"]
    check("s sorts by speedup, high first, unknown last",
          "SPEEDUP\u25bc" in scr and known == sorted(known, reverse=True) and
          sp[len(known):] == ["-"] * (len(sp) - len(known)) and len(known) >= 2, sp)
    keys(name, "r")
    scr = wait_for(name, has("SPEEDUP\u25b2"))
    sp = [c["SPEEDUP"] for _, c in table(scr)]
    known = [float(x[:-1]) for x in sp if x != "-"]
    check("r reverses, unknown still last",
          "SPEEDUP\u25b2" in scr and known == sorted(known) and
          sp[len(known):] == ["-"] * (len(sp) - len(known)), sp)
    keys(name, "F6")
    scr = wait_for(name, has("SAVED\u25b2"))
    check("F6 moves to the next sort column", "SAVED\u25b2" in scr, scr.split("\n")[3])

    # Selection: g = first, j/k move; the pane follows the selected row.
    def selected_and_title(s):
        rows = table(s)
        sel = [i for i, (on, _) in enumerate(rows) if on]
        return rows, sel, pane_title(s)

    def pane_matches(s, idx):
        rows, sel, title = selected_and_title(s)
        if sel != [idx] or not title:
            return False
        c = rows[idx][1]
        return title == (c["COMM"], c["RANK"], c["COLLECTIVE"], c["SIZE"])

    keys(name, "g")
    scr = wait_for(name, lambda s: pane_matches(s, 0))
    check("g selects the first row; pane shows it", pane_matches(scr, 0),
          selected_and_title(scr)[1:])
    keys(name, "j")
    keys(name, "j")
    scr = wait_for(name, lambda s: pane_matches(s, 2))
    check("j moves the highlight down; pane follows", pane_matches(scr, 2),
          selected_and_title(scr)[1:])
    keys(name, "k")
    scr = wait_for(name, lambda s: pane_matches(s, 1))
    check("k moves it up", pane_matches(scr, 1), selected_and_title(scr)[1:])
    keys(name, "Down")
    scr = wait_for(name, lambda s: pane_matches(s, 2))
    check("arrow Down works too", pane_matches(scr, 2))
    # The history lists the selected workload's last trajectory point.
    rows, sel, title = selected_and_title(scr)
    c = rows[2][1]
    w = next(w for w in st["workloads"] if (label_of(st, w["comm"]), w["collective"],
                                            fmt_bytes(w["bytes"])) ==
             (c["COMM"], c["COLLECTIVE"], c["SIZE"]))
    if w["trajectory"]:
        t = w["trajectory"][-1]
        pat = r"%d\s+%s\s+%s" % (t["step"], re.escape(fmt_cand(t)), re.escape(fmt_bw(t["busbw"])))
        check("candidate history shows the selected trajectory", re.search(pat, scr), pat)
        check("trajectory plot legend names the subspaces", "o NCCL" in scr, scr[-800:])
    else:
        check("empty trajectory says so", "no trajectory points yet" in scr)

    # Help overlay.
    keys(name, "h")
    scr = wait_for(name, has("autoccl-top keys"))
    check("h opens the help overlay", "autoccl-top keys" in scr and "reverse" in scr)
    keys(name, "x")
    scr = wait_for(name, lambda s: "autoccl-top keys" not in s)
    check("any key closes it", "autoccl-top keys" not in scr)
    keys(name, "?")
    scr = wait_for(name, has("autoccl-top keys"))
    check("? opens it too", "autoccl-top keys" in scr)
    keys(name, "Escape")
    wait_for(name, lambda s: "autoccl-top keys" not in s)

    # Resize: smaller, tiny, back.
    tmux("resize-window", "-t", name, "-x", "100", "-y", "30")
    scr = wait_for(name, lambda s: len(table(s)) == len(st["workloads"]) and
                   max(len(l) for l in s.split("\n")) <= 100 and "trajectory:" in s and
                   len(s.rstrip("\n").split("\n")) <= 30 and "row " in s and "converged" in s)
    check("resize to 100x30 keeps header, table and pane",
          "converged" in scr and "trajectory:" in scr and "row " in scr, scr)
    # 80x24: the identifying columns and SPEEDUP stay (others dropped first),
    # every row is distinct, header and pane title are whole (nothing cut).
    tmux("resize-window", "-t", name, "-x", "80", "-y", "24")
    scr = wait_for(name, lambda s: max(len(l) for l in s.split("\n")) <= 80 and
                   "trajectory:" in s and "row " in s and len(table(s)) >= 3)
    lines = scr.split("\n")
    hdr = next((l for l in lines if "COLLECTIVE" in l and "SIZE" in l), "")
    shown = shown_columns(hdr)
    check("80x24: COMM, RANK, COLLECTIVE, SIZE, STATE, SPEEDUP kept",
          all(c in shown for c in KEEP80), shown)
    check("80x24: SAVED still fits", "SAVED" in shown, shown)
    rows80 = [tuple(c.get(k) for k in KEEP80[:4]) for _, c in table(scr)]
    check("80x24: rows are distinct (rank shown)", len(rows80) == len(set(rows80)) and
          all(r[1] not in (None, "") for r in rows80), rows80)
    top = lines[0].rstrip()
    check("80x24: header not cut (ends with a whole part)",
          top.startswith("converged") and "net saved" in top and
          re.search(r"(\(time-weighted\)|net saved [+-]?[0-9.]+ [mun]?s per rank( \(total [+-]?[0-9.]+ [mun]?s, "
                    r"[0-9]+ ranks\))?|profiler \S+|"
                    r"exposed [0-9.]+ [mun]?s \([0-9.]+%\)|"
                    r"consensus wait [0-9.]+ [mun]?s)$", top) is not None, top)
    title = next((l for l in lines if "trajectory:" in l), "")
    check("80x24: trajectory title not cut",
          re.search(r"trajectory: \S+ rank \S+ \S+ \S+ \S+( best \S+ \S+x| \S+x)( \(http\S+\))? [\u2500-]+$",
                    title.rstrip()) is not None, title)
    if os.environ.get("ACL_TOP_SCREEN80_OUT"):
        with open(os.environ["ACL_TOP_SCREEN80_OUT"], "w") as f:
            f.write("\n".join(l.rstrip() for l in scr.rstrip("\n").split("\n")) + "\n")
    tmux("resize-window", "-t", name, "-x", "20", "-y", "5")
    scr = wait_for(name, has("terminal too small"))
    check("20x5 shows 'terminal too small'", "terminal too small" in scr, scr)
    tmux("resize-window", "-t", name, "-x", "160", "-y", "48")
    scr = wait_for(name, lambda s: len(table(s)) == len(st["workloads"]) and "trajectory:" in s)
    check("back to 160x48 restores the view", len(table(scr)) == len(st["workloads"]))

    # Lost connection, then recovery on the same port.
    stop_fixture(fixtures[0])
    scr = wait_for(name, has("disconnected \u2014 retrying"), 15)
    check("killing the server shows 'disconnected \u2014 retrying'",
          "disconnected \u2014 retrying" in scr, scr[:600])
    check("rows stay on screen while disconnected", len(table(scr)) == len(st["workloads"]))
    fixtures[0], _ = start_fixture(port=port)
    scr = wait_for(name, has("connected (stream)"), 20)
    check("restarting the server recovers",
          "connected (stream)" in scr and "disconnected" not in scr, scr[:600])

    esc = capture(name, escapes=True)
    check("colours are used by default", re.search(r"\x1b\[[0-9;]*3[1-6]m", esc) is not None)
    keys(name, "q")
    end = time.monotonic() + 5
    while time.monotonic() < end and tmux("has-session", "-t", name, check_rc=False).returncode == 0:
        time.sleep(0.1)
    check("q quits", tmux("has-session", "-t", name, check_rc=False).returncode != 0)


def test_polling_and_no_color():
    f, port = start_fixture("--no-sse")
    session("poll", "env NO_COLOR=1 %s --url 127.0.0.1:%d -d 0.3" % (TOP, port))
    scr = wait_for("poll", has("connected (polling)"))
    check("no SSE: falls back to polling", "connected (polling)" in scr, scr[:300])
    esc = capture("poll", escapes=True)
    check("NO_COLOR: no colour escapes", re.search(r"\x1b\[[0-9;]*3[1-6]m", esc) is None)
    session("nocolor", "%s --no-color --url 127.0.0.1:%d" % (TOP, port))
    wait_for("nocolor", has("connected"))
    esc = capture("nocolor", escapes=True)
    check("--no-color: no colour escapes", re.search(r"\x1b\[[0-9;]*3[1-6]m", esc) is None)
    tmux("kill-session", "-t", "nocolor")
    tmux("kill-session", "-t", "poll")
    stop_fixture(f)


def main():
    global TOP, FIXTURE
    TOP, FIXTURE = sys.argv[1], sys.argv[2]
    deadline = time.monotonic() + 240
    try:
        p, port = start_fixture()
        url = "http://127.0.0.1:%d" % port
        test_cli(port, url)
        test_tui(port, url)
        test_polling_and_no_color()
    finally:
        tmux("kill-server", check_rc=False)
        for f in fixtures:
            if f.poll() is None:
                stop_fixture(f)
    check("finished within the time bound", time.monotonic() < deadline)
    print("%d failure(s)" % len(failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
