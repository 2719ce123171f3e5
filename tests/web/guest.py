#!/usr/bin/env python3
"""A hostile neighbour against a running loopback endpoint:
slow senders (slowloris) from one and from several loopback addresses,
the header deadline, per-address event streams and the Host check. Every
wait is bounded; the whole run takes about 30 s.

usage: guest.py PORT
"""
import selectors
import socket
import sys
import threading
import time

PORT = int(sys.argv[1])
problems = []


def dial(src="127.0.0.1", timeout=5.0):
    s = socket.socket()
    s.settimeout(timeout)
    s.bind((src, 0))
    s.connect(("127.0.0.1", PORT))
    return s


def exchange(data, src="127.0.0.1", timeout=5.0):
    """Status of one raw request; None when refused or reset."""
    try:
        s = dial(src, timeout)
        s.sendall(data)
        out = b""
        while True:
            k = s.recv(65536)
            if not k:
                break
            out += k
        s.close()
    except OSError:
        return None
    return int(out.split(b" ", 2)[1]) if out.startswith(b"HTTP/1.") else None


def request(path="/healthz", host=None, src="127.0.0.1", timeout=5.0):
    """Status and seconds taken; status None when refused or reset."""
    host = host or f"127.0.0.1:{PORT}"
    t0 = time.monotonic()
    st = exchange(f"GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n".encode(),
                  src, timeout)
    return st, time.monotonic() - t0


class Slow:
    """n sockets per source address that send a request line and then one
    header line a second, never the end; a socket the server closes is
    opened again at the next drip, so n stay held for as long as the server
    lets them. (A flood that reconnects at once from the very address of the
    victim is another attack: nothing tells it from the victim.)"""

    def __init__(self, sources, n):
        self.sources, self.n = sources, n
        self.stop = threading.Event()
        self.reopened = 0
        self.t = threading.Thread(target=self.run, daemon=True)

    def open(self, sel, src):
        try:
            s = dial(src, 2.0)
            s.sendall(b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n")
            s.setblocking(False)
            sel.register(s, selectors.EVENT_READ, src)
            return s
        except OSError:
            return None

    def run(self):
        sel = selectors.DefaultSelector()
        socks = []
        for src in self.sources:
            for _ in range(self.n):
                socks.append((self.open(sel, src), src))
        last = time.monotonic()
        while not self.stop.is_set():
            for key, _ in sel.select(0.1):
                try:
                    d = key.fileobj.recv(4096)
                except OSError:
                    d = b""
                if not d:  # closed by the server: another at the next drip
                    sel.unregister(key.fileobj)
                    key.fileobj.close()
                    socks = [(None if s is key.fileobj else s, src) for (s, src) in socks]
            if time.monotonic() - last >= 1.0:
                last = time.monotonic()
                self.reopened += sum(1 for s, _ in socks if not s)
                socks = [(s if s else self.open(sel, src), src) for (s, src) in socks]
                for s, _ in socks:
                    try:
                        s and s.send(b"X-Drip: x\r\n")
                    except OSError:
                        pass
        for s, _ in socks:
            if s:
                s.close()

    def __enter__(self):
        self.t.start()
        time.sleep(1.5)
        return self

    def __exit__(self, *a):
        self.stop.set()
        self.t.join(10)


retried = 0


def probe(what, src="127.0.0.1", n=8):
    """n probes, each 200 within 1 s. A probe from the slow senders' own
    address may be reset once: it can arrive amid their burst of reconnects
    (the server makes room by closing the oldest connection of the address
    still sending its headers, and nothing tells the probe from them until
    its request is read); a second reset, or a slow answer, fails."""
    global retried
    worst = 0.0
    for _ in range(n):
        st, dt = request("/healthz", src=src, timeout=3.0)
        if st is None and dt < 1.0:
            retried += 1
            st, dt2 = request("/healthz", src=src, timeout=3.0)
            dt += dt2
        worst = max(worst, dt)
        if st != 200 or dt >= 1.0:
            problems.append(f"{what}: /healthz from {src} gave {st} in {dt:.2f} s (want 200 in < 1 s)")
            break
        time.sleep(0.2)
    print(f"guest: {what}: /healthz from {src} worst {worst:.3f} s")


with Slow(["127.0.0.1"], 64) as sl:
    probe("64 slow senders from 127.0.0.1")
    probe("64 slow senders from 127.0.0.1", src="127.0.0.9")
print(f"guest: (slow sockets reopened after the server closed them: {sl.reopened}; "
      f"probes reset once and retried: {retried})")
with Slow(["127.0.0.2", "127.0.0.3", "127.0.0.4", "127.0.0.5"], 16) as sl:
    probe("16 slow senders from each of 4 addresses")
    probe("16 slow senders from each of 4 addresses", src="127.0.0.2")

# The header deadline: a sender that drips a line a second is cut off,
# although it is never idle for the 10 s idle timeout.
s = dial()
s.sendall(b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n")
t0 = time.monotonic()
closed_after = None
s.settimeout(1.0)
while time.monotonic() - t0 < 12:
    try:
        d = s.recv(4096)
        if not d:
            closed_after = time.monotonic() - t0
            break
    except socket.timeout:
        pass
    except OSError:
        closed_after = time.monotonic() - t0
        break
    try:
        s.send(b"X-Drip: x\r\n")
    except OSError:
        closed_after = time.monotonic() - t0
        break
s.close()
print(f"guest: a dripping sender was closed after {closed_after if closed_after is None else round(closed_after, 1)} s")
if closed_after is None or closed_after > 8:
    problems.append(f"header deadline: a sender dripping one line a second stayed {closed_after} s (want <= 8 s)")

# Event streams: one address holds at most a share; another still gets one.
def stream(src):
    try:
        s = dial(src, 3.0)
        s.sendall(f"GET /api/v1/events HTTP/1.1\r\nHost: 127.0.0.1:{PORT}\r\n\r\n".encode())
        head = s.recv(64)
        ok = head.startswith(b"HTTP/1.1 200")
        if not ok:
            s.close()
        return s if ok else None
    except OSError:
        return None

mine = [stream("127.0.0.1") for _ in range(16)]
got = sum(1 for x in mine if x)
other = stream("127.0.0.7")
print(f"guest: event streams: 16 asked from 127.0.0.1, {got} granted; another address {'granted' if other else 'refused'}")
if got > 8 or got < 1:
    problems.append(f"one address holds {got} of the 16 event streams (want a share, at most 8)")
if not other:
    problems.append("another address got no event stream while one address held them")
for x in mine + [other]:
    if x:
        x.close()

# Host names (DNS rebinding): loopback names and addresses only.
for host, want in [("evil.example", 421), ("evil.example:%d" % PORT, 421), ("127.0.0.1.evil.example", 421),
                   ("localhost:%d" % PORT, 200), ("LOCALHOST", 200), ("127.0.0.1:%d" % PORT, 200),
                   ("127.1.2.3", 200), ("[::1]:%d" % PORT, 200), ("app.localhost", 200), ("10.0.0.1", 421)]:
    for path in ("/healthz", "/api/v1/state"):
        st, _ = request(path, host=host)
        if st != want:
            problems.append(f"Host: {host} on {path}: HTTP {st}, want {want}")


# Exactly one Host (RFC 9112 3.2): two let the check read one name and a
# proxy use the other; HTTP/1.1 without one is malformed.
for what, data, want in [
        ("two Host headers", b"GET /healthz HTTP/1.1\r\nHost: localhost\r\nHost: evil.com\r\n"
         b"Connection: close\r\n\r\n", 400),
        ("two Host headers, evil first", b"GET /api/v1/state HTTP/1.1\r\nHost: evil.com\r\n"
         b"host: localhost\r\nConnection: close\r\n\r\n", (400, 421)),
        ("HTTP/1.1 without Host", b"GET /healthz HTTP/1.1\r\nConnection: close\r\n\r\n", 400),
        ("HTTP/1.0 without Host", b"GET /healthz HTTP/1.0\r\n\r\n", 200)]:
    st = exchange(data)
    if st != want and not (isinstance(want, tuple) and st in want):
        problems.append(f"{what}: HTTP {st}, want {want}")
print("guest: Host header checks done")

for p in problems:
    print("guest: PROBLEM:", p)
sys.exit(1 if problems else 0)
