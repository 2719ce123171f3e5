#!/usr/bin/env python3
"""The dashboard's host view against autoccl-sim --ranks 4 (the real
plugin in 4 rank processes, ports P..P+3), driven in headless Chromium over
DevTools: one URL (local rank 0's) shows the 4 local ranks' workloads and
the host's totals; a local rank that stops answering reads "no answer"
while the others still show; it comes back when it resumes.

usage: cdp_host.py CHROMIUM_PROFILE_DIR URL OUT_DIR"""
import json
import os
import signal
import sys
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cdp_dashboard as cdp  # noqa: E402

PROFILE, URL, OUT = sys.argv[1], sys.argv[2], sys.argv[3]

VIEW_JS = """(() => {
  const rows = [...document.querySelectorAll('#workloads tbody tr.workload')];
  const procs = [...document.querySelectorAll('#host tbody tr.proc')].map((tr) => ({
      lr: Number(tr.dataset.localRank), text: tr.children[3].textContent,
      workloads: tr.children[4].textContent}));
  return {ranks: [...new Set(rows.map((tr) => tr.children[1].textContent))].sort(),
          nrows: rows.length, procs: procs, net: document.getElementById('net-saved').dataset.value,
          proc: document.getElementById('proc').textContent,
          answering: Number(document.getElementById('host').dataset.answering)};
})()"""

HOST_JS = """(() => {
  const sts = procs.filter((p) => p.ok).map((p) => p.state);
  const sum = (f) => sts.reduce((a, s) => a + (f(s) || 0), 0);
  return {pids: sts.map((s) => s.pid), n: sum((s) => s.workloads.length),
          rows: document.querySelectorAll('#workloads tbody tr.workload').length,
          exposed: sum((s) => s.job.exposed_seconds),
          shown: Number(document.getElementById('exposed').dataset.value),
          net: sts.some((s) => s.job.time_saved_seconds !== null)
               ? sum((s) => s.job.time_saved_seconds) : null,
          ranks: sum((s) => s.job.ranks),
          netShown: document.getElementById('net-saved').dataset.value,
          netTotal: document.getElementById('net-saved').dataset.total,
          netText: document.getElementById('net-detail').textContent};
})()"""


def get(url):
    with urllib.request.urlopen(url, timeout=5) as r:
        return json.load(r)


def fail(msg):
    raise SystemExit("FAIL: " + msg)


def main():
    ws = cdp.devtools(PROFILE)
    ws.call("Runtime.enable")
    ws.call("Page.enable")
    ws.call("Emulation.setDeviceMetricsOverride", width=1400, height=1300, deviceScaleFactor=1,
            mobile=False)
    ws.call("Page.navigate", url=URL + "?poll=1")
    cdp.wait_for(ws, "Number(document.getElementById('host')?.dataset.answering) === 4 && "
                     "new Set([...document.querySelectorAll('#workloads tbody tr.workload')]"
                     ".map((tr) => tr.children[1].textContent)).size === 4",
                 "4 local ranks answering, rows of 4 ranks", 30)
    host = get(URL + "api/v1/host")
    v = ws.js(VIEW_JS)
    print(f"cdp-host: {v['nrows']} rows of ranks {v['ranks']}; {v['proc']!r}")
    if v["ranks"] != ["0", "1", "2", "3"] or [p["lr"] for p in v["procs"]] != [0, 1, 2, 3]:
        fail(f"expected the 4 local ranks: {v}")
    if any(p["text"] != "answering" for p in v["procs"]) or "4 of 4 local ranks" not in v["proc"]:
        fail(f"every local rank should answer: {v}")
    # Host totals: the headline is the sum over the 4 documents the page
    # read, one from each port (checked by pid against the host list).
    cdp.wait_for(ws, "Number(document.getElementById('exposed')?.dataset.value) > 0",
                 "exposed time measured", 30)
    # a decision saving time, so that per rank and total differ
    cdp.wait_for(ws, "Math.abs(Number(document.getElementById('net-saved')?.dataset.total)) > 0",
                 "a net saving known", 60)
    for _ in range(25):  # a refresh may be half-way (states read, not yet rendered)
        t = ws.js(HOST_JS)
        same_net = t["net"] is None or (t["netTotal"] != "" and abs(
            float(t["netTotal"]) - t["net"]) <= 1e-9 * max(1, abs(t["net"])))
        if abs(t["shown"] - t["exposed"]) <= 1e-9 * t["exposed"] and t["rows"] == t["n"] and \
                same_net:
            break
        time.sleep(0.2)
    print(f"cdp-host: host totals: {t['rows']} rows for {t['n']} workloads, exposed "
          f"{t['shown']:.4g} s (sum {t['exposed']:.4g} s), net saved {t['netShown'] or '—'}")
    if sorted(t["pids"]) != sorted(p["pid"] for p in host["processes"]) or t["rows"] != t["n"]:
        fail(f"the rows are not those of the 4 processes of the host list: {t} {host}")
    if not (t["exposed"] > 0 and abs(t["shown"] - t["exposed"]) <= 1e-9 * t["exposed"]):
        fail(f"headline exposed time is not the host total: {t}")
    if (t["net"] is None) != (t["netShown"] == ""):
        fail(f"net saved shown when absent, or absent when known: {t}")
    # "Saved" per rank, as the job report; the host's sum labelled a total.
    if t["net"] is not None:
        if t["ranks"] != 4 or abs(float(t["netShown"]) - t["net"] / 4) > 1e-9 * max(1, abs(t["net"])):
            fail(f"headline net saved is not the host's sum per rank (4 ranks): {t}")
        if abs(float(t["netTotal"]) - t["net"]) > 1e-9 * max(1, abs(t["net"])) or \
                "total " not in t["netText"] or "over 4 ranks" not in t["netText"]:
            fail(f"the host's total is not labelled a total: {t}")
    cdp.OUT = OUT
    cdp.screenshot(ws, "dashboard-host.png")
    # Local rank 3 stops answering: "no answer", the 3 others still shown.
    pid = host["processes"][3]["pid"]
    os.kill(pid, signal.SIGSTOP)
    try:
        cdp.wait_for(ws, "Number(document.getElementById('host')?.dataset.answering) === 3", "3 answering", 20)
        v = ws.js(VIEW_JS)
        silent = [p for p in v["procs"] if p["lr"] == 3]
        print(f"cdp-host: local rank 3 stopped: {silent[0]['text']!r}, rows of ranks {v['ranks']}")
        if not silent or not silent[0]["text"].startswith("no answer") or silent[0]["workloads"] != "—":
            fail(f"the silent local rank should read 'no answer' with no figures: {v['procs']}")
        if v["ranks"] != ["0", "1", "2"] or "3 of 4 local ranks" not in v["proc"]:
            fail(f"the 3 others should still show, and only they: {v}")
        cdp.screenshot(ws, "dashboard-host-silent.png")
    finally:
        os.kill(pid, signal.SIGCONT)
    cdp.wait_for(ws, "Number(document.getElementById('host')?.dataset.answering) === 4", "4 again", 20)
    exc = [e for e in ws.events if e.get("method") == "Runtime.exceptionThrown"]
    if exc:
        fail(f"JS exceptions: {exc[:2]}")
    print("cdp-host: local rank 3 answers again")


if __name__ == "__main__":
    main()
