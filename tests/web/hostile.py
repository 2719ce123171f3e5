#!/usr/bin/env python3
"""Hostile clients against a running endpoint: very long URL, huge headers,
garbage, a slow client that sends half a request, 200 connections at once,
a large body. After each, the server must still answer /healthz, and the
process must still be alive.

usage: hostile.py PORT PID
"""
import os
import socket
import sys
import threading
import time

PORT, PID = int(sys.argv[1]), int(sys.argv[2])
problems = []


def conn(timeout=5.0):
    s = socket.create_connection(("127.0.0.1", PORT), timeout=timeout)
    s.settimeout(timeout)
    return s


def exchange(data, timeout=5.0):
    """Sends data, returns what came back before close/timeout ('' if reset)."""
    s = conn(timeout)
    try:
        try:
            s.sendall(data)
        except (BrokenPipeError, ConnectionResetError):
            pass
        out = b""
        while True:
            try:
                k = s.recv(65536)
            except (ConnectionResetError, socket.timeout):
                break
            if not k:
                break
            out += k
        return out.decode("latin-1")
    finally:
        s.close()


def status(resp):
    if not resp.startswith("HTTP/1."):
        return None
    return int(resp.split(" ", 2)[1])


def healthy(what):
    if not os.path.exists(f"/proc/{PID}"):
        problems.append(f"server process gone after {what}")
        return
    t0 = time.monotonic()
    r = exchange(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
    dt = time.monotonic() - t0
    if status(r) != 200 or not r.endswith("ok\n"):
        problems.append(f"/healthz failed after {what}: {r[:80]!r}")
    elif dt > 1.0:
        problems.append(f"/healthz took {dt:.2f}s after {what}")


def expect_reject(what, data, ok=(400, 413, 414, 431, None)):
    r = exchange(data)
    st = status(r)
    if st not in ok:
        problems.append(f"{what}: HTTP {st}, expected one of {ok}")
    print(f"hostile: {what}: {'closed' if st is None else st}")
    healthy(what)


expect_reject("URL of 200 KB", b"GET /" + b"a" * 200_000 + b" HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
expect_reject("URL of 40 KB on a real route", b"GET /metrics?" + b"q" * 40_000 + b" HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
expect_reject("2000 headers", b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n" +
              b"".join(b"X-H%d: %s\r\n" % (i, b"v" * 90) for i in range(2000)) + b"\r\n")
expect_reject("one 1 MB header", b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: " + b"b" * 1_000_000 + b"\r\n\r\n")
expect_reject("binary garbage", bytes(range(256)) * 40 + b"\r\n\r\n")
expect_reject("header without colon", b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nnonsense\r\n\r\n", ok=(400, None))
expect_reject("HTTP/9.9", b"GET / HTTP/9.9\r\nHost: 127.0.0.1\r\n\r\n", ok=(400, 505, None))
expect_reject("absurd Content-Length", b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 99999999999999999999999\r\n\r\n",
              ok=(400, 413, None))
expect_reject("bogus chunked body", b"POST /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
              ok=(400, 405, None))
expect_reject("10 MB POST body", b"POST /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 10000000\r\n\r\n" + b"x" * 10_000_000,
              ok=(405, 413, None))

# Slow clients: half a request each, held open. Others are served meanwhile,
# and the server closes the slow ones after its idle timeout (10 s).
slow = []
for _ in range(5):
    s = conn(timeout=30)
    s.sendall(b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
    slow.append(s)
healthy("5 half requests held open")
t0 = time.monotonic()
closed = 0
for s in slow:
    try:
        s.settimeout(max(0.1, 25 - (time.monotonic() - t0)))
        s.recv(1024)  # EOF or a 408: either way the server ended it
        closed += 1
    except socket.timeout:
        pass
    except ConnectionResetError:
        closed += 1
    s.close()
dt = time.monotonic() - t0
print(f"hostile: half requests closed by the server: {closed}/5 after {dt:.1f}s")
if closed != 5 or dt > 20:
    problems.append(f"slow clients not timed out: {closed}/5 in {dt:.1f}s")
healthy("slow clients")

# 200 connections at once, each asking /healthz.
results = []
lock = threading.Lock()
barrier = threading.Barrier(200)


def one():
    try:
        s = socket.socket()
        s.settimeout(10)
        barrier.wait(timeout=10)
        s.connect(("127.0.0.1", PORT))
        s.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        out = b""
        while True:
            k = s.recv(4096)
            if not k:
                break
            out += k
        s.close()
        r = "ok" if out.startswith(b"HTTP/1.1 200") else "refused"
    except Exception as e:  # reset or refused beyond the limits is fine
        r = type(e).__name__
    with lock:
        results.append(r)


ts = [threading.Thread(target=one) for _ in range(200)]
for t in ts:
    t.start()
for t in ts:
    t.join(30)
ok = results.count("ok")
print(f"hostile: 200 simultaneous connections: {ok} served, {len(results) - ok} refused or reset")
if len(results) != 200 or ok < 32:
    problems.append(f"200 connections: only {ok} served ({len(results)} finished)")
healthy("200 connections")

for p in problems:
    print("hostile: PROBLEM:", p)
sys.exit(1 if problems else 0)
