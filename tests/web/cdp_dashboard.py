#!/usr/bin/env python3
"""Drives headless Chromium over the DevTools protocol (stdlib-only
WebSocket client) against the dashboard: rows rendered, trajectory drawn,
live updates from SSE, row selection, no JS exceptions, screenshot; then
stops the server and expects the "stream disconnected" banner.

usage: cdp_dashboard.py CHROMIUM_PROFILE_DIR URL FIXTURE_PID OUT_DIR
(Chromium is already running with --remote-debugging-port=0 and that
--user-data-dir; its DevToolsActivePort file tells the port.)
"""
import base64
import json
import os
import signal
import socket
import struct
import sys
import time
import urllib.request

PROFILE = URL = OUT = None  # set from the command line (cdp_host.py imports this file)
FIX_PID = 0
if __name__ == "__main__":
    PROFILE, URL, FIX_PID, OUT = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]


class WS:
    def __init__(self, url):
        assert url.startswith("ws://")
        hostport, path = url[5:].split("/", 1)
        host, port = hostport.split(":")
        self.s = socket.create_connection((host, int(port)), timeout=30)
        key = base64.b64encode(os.urandom(16)).decode()
        self.s.sendall((f"GET /{path} HTTP/1.1\r\nHost: {hostport}\r\nUpgrade: websocket\r\n"
                        f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\n"
                        "Sec-WebSocket-Version: 13\r\n\r\n").encode())
        resp = b""
        while b"\r\n\r\n" not in resp:
            resp += self.s.recv(1)
        if b" 101 " not in resp.split(b"\r\n")[0]:
            raise RuntimeError(f"websocket handshake: {resp[:100]!r}")
        self.next_id = 0
        self.events = []

    def _recv_exact(self, n):
        b = b""
        while len(b) < n:
            k = self.s.recv(n - len(b))
            if not k:
                raise RuntimeError("devtools connection closed")
            b += k
        return b

    def _frame(self):
        msg = b""
        while True:
            h = self._recv_exact(2)
            fin, op, ln = h[0] & 0x80, h[0] & 0x0F, h[1] & 0x7F
            if ln == 126:
                ln = struct.unpack(">H", self._recv_exact(2))[0]
            elif ln == 127:
                ln = struct.unpack(">Q", self._recv_exact(8))[0]
            data = self._recv_exact(ln)
            if op == 8:
                raise RuntimeError("devtools closed the websocket")
            if op in (0, 1, 2):
                msg += data
                if fin:
                    return msg.decode()

    def call(self, method, **params):
        self.next_id += 1
        mid = self.next_id
        payload = json.dumps({"id": mid, "method": method, "params": params}).encode()
        mask = os.urandom(4)
        n = len(payload)
        hdr = bytes([0x81]) + (bytes([0x80 | n]) if n < 126 else
                               bytes([0x80 | 126]) + struct.pack(">H", n) if n < 65536 else
                               bytes([0x80 | 127]) + struct.pack(">Q", n))
        self.s.sendall(hdr + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload)))
        while True:
            m = json.loads(self._frame())
            if m.get("id") == mid:
                if "error" in m:
                    raise RuntimeError(f"{method}: {m['error']}")
                return m["result"]
            self.events.append(m)

    def js(self, expr):
        r = self.call("Runtime.evaluate", expression=expr, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in r:
            raise RuntimeError(f"JS error in {expr!r}: {r['exceptionDetails']}")
        return r["result"].get("value")


def wait_for(ws, expr, what, timeout=20):
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        v = ws.js(expr)
        if v:
            return v
        time.sleep(0.2)
    raise SystemExit(f"FAIL: {what} (waited {timeout}s; {expr})")


def screenshot(ws, name):
    png = base64.b64decode(ws.call("Page.captureScreenshot", format="png")["data"])
    path = os.path.join(OUT, name)
    with open(path, "wb") as f:
        f.write(png)
    if png[:8] != b"\x89PNG\r\n\x1a\n" or len(png) < 5000:
        raise SystemExit(f"FAIL: screenshot {path} looks empty ({len(png)} bytes)")
    print(f"cdp: screenshot {path} ({len(png)} bytes)")


HEADLINE_JS = """(async () => {
  const st = await (await fetch('/api/v1/state', {cache: 'no-store'})).json();
  const ns = document.getElementById('net-saved'), sp = document.getElementById('overall-speedup');
  const cv = document.getElementById('trajectory');
  const w = st.workloads.find((x) => [x.comm, x.rank, x.collective, x.bytes, x.pipe_ops].join('|')
                                     === cv.dataset.workload);
  return {st: st, exposed: document.getElementById('exposed').dataset.value,
          exposedText: document.getElementById('exposed-detail').textContent,
          net: ns.dataset.value, netText: ns.textContent, sp: sp.dataset.value,
          spText: sp.textContent, ymin: Number(cv.dataset.ymin), ymax: Number(cv.dataset.ymax),
          bws: w ? w.trajectory.filter((p) => typeof p.busbw === 'number').map((p) => p.busbw) : [],
          saved: [...document.querySelectorAll('#workloads tbody tr.workload')].map(
              (tr) => tr.children[9].textContent)};
})()"""


def check_headline_and_axis(ws):
    """The headline's net time saved (per rank, as the job report: the sum
    over the state's rows divided by its ranks) and overall speedup are what
    the state document implies, and the trajectory axis fits the data."""
    # The fixture keeps publishing: compare within one render (retry a few
    # times so the page's state and our fetch agree).
    for _ in range(20):
        ws.js("refresh()")
        h = ws.js(HEADLINE_JS)
        wl = h["st"]["workloads"]
        net = sum(w["time_saved_seconds"] for w in wl if w.get("time_saved_seconds") is not None)
        net /= max(1, h["st"]["job"].get("ranks") or len(set(w["rank"] for w in wl)))
        num = sum(w["calls"] * w["baseline_seconds"] * w["speedup"] for w in wl
                  if w["speedup"] is not None and w["baseline_seconds"] and w["calls"])
        den = sum(w["calls"] * w["baseline_seconds"] for w in wl
                  if w["speedup"] is not None and w["baseline_seconds"] and w["calls"])
        if h["net"] and abs(float(h["net"]) - net) <= 1e-9 * max(1, abs(net)):
            break
        time.sleep(0.2)
    print(f"cdp: headline net saved {h['netText']!r} (state sum {net:.6g} s), overall speedup "
          f"{h['spText']!r} (state {num / den:.4f})")
    if not h["net"] or abs(float(h["net"]) - net) > 1e-9 * max(1, abs(net)):
        raise SystemExit(f"FAIL: headline net saved {h['net']} != time_saved_seconds per rank {net}")
    job = h["st"]["job"]
    if job["exposed_seconds"] is None or not h["exposed"] or \
            abs(float(h["exposed"]) - job["exposed_seconds"]) > 1e-9 * max(1, job["exposed_seconds"]) \
            or "% of collective time" not in h["exposedText"]:
        raise SystemExit(f"FAIL: headline exposed {h['exposed']!r} ({h['exposedText']!r}) != "
                         f"state job {job}")
    print(f"cdp: headline exposed {float(h['exposed']):.6g} s ({h['exposedText']})")
    if not h["sp"] or abs(float(h["sp"]) - num / den) > 1e-9 or h["spText"] != "%.3f\u00d7" % (num / den):
        raise SystemExit(f"FAIL: overall speedup {h['sp']!r}/{h['spText']!r} != {num / den}")
    if not any(s.startswith("\u2212") for s in h["saved"]) or not any(s.startswith("+") for s in h["saved"]):
        raise SystemExit(f"FAIL: saved column should show gains and losses: {h['saved']}")
    lo, hi, bws = h["ymin"], h["ymax"], h["bws"]
    print(f"cdp: trajectory axis {lo / 1e9:.2f}..{hi / 1e9:.2f} GB/s for data "
          f"{min(bws) / 1e9:.2f}..{max(bws) / 1e9:.2f} GB/s")
    if not bws or not (lo <= min(bws) and hi >= max(bws)):
        raise SystemExit("FAIL: axis does not contain the data")
    if not (lo > 0 and hi - lo <= 2.2 * (max(bws) - min(bws)) + 0.03 * max(bws)):
        raise SystemExit("FAIL: axis does not fit the data (starts at 0 or too wide)")


def check_poll_mode(ws):
    """?poll=1: the page renders and refreshes without ever opening the
    event stream (so headless captures can finish)."""
    ws.call("Page.navigate", url=URL + "?poll=1")
    wait_for(ws, "document.querySelectorAll('#workloads tbody tr.workload').length >= 7",
             "rows with ?poll=1")
    wait_for(ws, "document.getElementById('status')?.textContent === 'polling'", "polling status")
    r0 = int(ws.js("Number(document.body.dataset.rendered)"))
    wait_for(ws, f"Number(document.body.dataset.rendered) >= {r0 + 2}", "poll re-renders", 10)
    if ws.js("performance.getEntriesByType('resource').some((e) => e.name.includes('/api/v1/events'))"):
        raise SystemExit("FAIL: ?poll=1 opened the event stream")
    print("cdp: ?poll=1 renders and refreshes without the event stream")


def devtools(profile):
    """The WebSocket of the page of the Chromium that runs with profile."""
    port_file = os.path.join(profile, "DevToolsActivePort")
    for _ in range(300):
        if os.path.exists(port_file) and open(port_file).read().count("\n") >= 1:
            break
        time.sleep(0.1)
    port = int(open(port_file).read().split("\n")[0])
    pages = []
    for _ in range(100):
        pages = [t for t in json.load(urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=5))
                 if t["type"] == "page"]
        if pages:
            break
        time.sleep(0.1)
    return WS(pages[0]["webSocketDebuggerUrl"])


def main():
    ws = devtools(PROFILE)
    ws.call("Runtime.enable")
    ws.call("Page.enable")
    ws.call("Emulation.setDeviceMetricsOverride", width=1400, height=1100, deviceScaleFactor=1, mobile=False)
    ws.call("Page.navigate", url=URL)
    rows = wait_for(ws, "document.querySelectorAll('#workloads tbody tr.workload').length >= 7 && "
                        "document.querySelectorAll('#workloads tbody tr.workload').length", "workload rows")
    pts = int(wait_for(ws, "Number(document.getElementById('trajectory').dataset.points) > 0 && "
                           "document.getElementById('trajectory').dataset.points", "trajectory drawn"))
    wait_for(ws, "document.getElementById('status').textContent === 'live'", "stream live")
    if not ws.js("document.getElementById('banner').hidden"):
        raise SystemExit("FAIL: disconnect banner shown while connected")
    # a workload waiting for its budget says how long and what for
    wait = ws.js("[...document.querySelectorAll('#workloads tbody td.state-waiting-budget')]"
                 ".map((td) => td.title).join('|')")
    if wait != "waits ~975 calls for first-events":
        raise SystemExit(f"FAIL: the waiting row's state says {wait!r}")
    cur = int(ws.js("document.getElementById('trajectory').dataset.current"))
    legend = ws.js("document.querySelectorAll('#legend > span').length")
    print(f"cdp: {rows} workload rows, {pts} trajectory points plotted, current candidate at {cur}, "
          f"{legend} subspaces in the legend")
    if pts < 18 or cur < 0 or legend < 2:
        raise SystemExit("FAIL: trajectory incomplete (points, current mark or legend)")
    # Live: the fixture publishes every 200 ms; the page re-fetches state (throttled).
    r0 = int(ws.js("Number(document.body.dataset.rendered)"))
    p0 = pts
    wait_for(ws, f"Number(document.body.dataset.rendered) >= {r0 + 3}", "live re-render on events", 10)
    p1 = int(ws.js("Number(document.getElementById('trajectory').dataset.points)"))
    print(f"cdp: live updates: {int(ws.js('Number(document.body.dataset.rendered)')) - r0} re-renders, "
          f"points {p0} -> {p1}")
    if p1 <= p0 and p0 < 64:
        raise SystemExit("FAIL: trajectory did not grow with the events")
    # Selecting another row redraws the chart for it.
    ws.js("document.querySelectorAll('#workloads tbody tr.workload')[1].click()")
    wait_for(ws, "document.querySelectorAll('#workloads tbody tr.workload')[1].classList.contains('selected')",
             "row selection")
    sel = ws.js("document.getElementById('trajectory').dataset.workload")
    if "AllGather" not in sel:
        raise SystemExit(f"FAIL: chart shows {sel!r} after selecting the AllGather row")
    ws.js("document.querySelectorAll('#workloads tbody tr.workload')[0].click()")
    check_headline_and_axis(ws)
    screenshot(ws, "dashboard.png")
    exc = [e for e in ws.events if e.get("method") == "Runtime.exceptionThrown"]
    if exc:
        raise SystemExit(f"FAIL: JS exceptions: {exc[:2]}")
    check_poll_mode(ws)
    ws.call("Page.navigate", url=URL)
    wait_for(ws, "document.getElementById('status')?.textContent === 'live'", "stream live again")
    # The server goes away: the banner must say so.
    os.kill(FIX_PID, signal.SIGTERM)
    wait_for(ws, "!document.getElementById('banner').hidden && "
                 "document.getElementById('banner').textContent.includes('stream disconnected')",
             "disconnect banner", 15)
    screenshot(ws, "dashboard-disconnected.png")
    print("cdp: disconnect banner shown after the server stopped")


if __name__ == "__main__":
    main()
