#!/usr/bin/env python3
"""autoccl-sim --port P while another process serves P:
the simulator must neither advertise P nor read that process's figures as
its own; it says its endpoint is off. Bounded: the sim runs 3 s.
A demo (--demo, 600 s by default) on a busy port stops at once instead,
with a message that names the port and suggests --port.

usage: port_taken.py SIM PLUGIN
"""
import http.server
import json
import os
import socket
import subprocess
import sys
import threading
import time

SIM, PLUGIN = sys.argv[1], sys.argv[2]
FOREIGN = 999.5  # the other process's consensus wait: must not show up


class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = json.dumps({"version": 1, "pid": os.getpid(), "communicators": [
            {"id": "0x1", "consensus_wait_seconds": FOREIGN}], "workloads": []}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *a):
        pass


def free_pair():
    for _ in range(50):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        p = s.getsockname()[1]
        s.close()
        t = socket.socket()
        try:
            t.bind(("127.0.0.1", p + 1))
            t.close()
            return p
        except OSError:
            t.close()
    raise SystemExit("no free port pair")


port = free_pair()
srv = http.server.ThreadingHTTPServer(("127.0.0.1", port), H)
threading.Thread(target=srv.serve_forever, daemon=True).start()
env = dict(os.environ, AUTOCCL_HTTP_PORT="")
r = subprocess.run([SIM, "--plugin", PLUGIN, "--json", "--ranks", "2", "--duration", "3",
                    "--workload", "tp", "--port", str(port)],
                   capture_output=True, text=True, timeout=60, env=env)
problems = []
t0 = time.monotonic()
d = subprocess.run([SIM, "--plugin", PLUGIN, "--demo", "--port", str(port)],
                   capture_output=True, text=True, timeout=60, env=env)
took = time.monotonic() - t0
srv.shutdown()
if d.returncode != 2 or took > 5:
    problems.append(f"--demo on busy port {port}: exit status {d.returncode} after {took:.1f} s, "
                    "want 2 within 5 s")
if f"port {port} is in use" not in d.stderr or "--port P" not in d.stderr:
    problems.append(f"--demo on a busy port: the message does not name port {port} and --port")
print(f"port-taken: --demo on a busy port: exit {d.returncode} after {took:.2f} s: "
      f"{d.stderr.splitlines()[0] if d.stderr else ''}")
if r.returncode != 0:
    problems.append(f"exit status {r.returncode}")
lines = [l for l in r.stdout.splitlines() if l.startswith("{")]
rep = json.loads(lines[-1]) if lines else {}
if not rep:
    problems.append("no JSON report")
if (rep.get("consensus_wait_seconds") or 0) >= FOREIGN:
    problems.append("the report shows the other process's consensus wait as its own")
if rep.get("consensus_wait_source") != "getcollinfo":
    problems.append(f"consensus_wait_source={rep.get('consensus_wait_source')}, want getcollinfo")
if not rep.get("endpoint_off"):
    problems.append("the report does not say the endpoint is off")
if f"http://127.0.0.1:{port}" in r.stderr + r.stdout:
    problems.append(f"the banner advertises port {port}, which another process serves")
if "endpoint off" not in r.stderr:
    problems.append("the banner does not say the endpoint is off")
for p in problems:
    print("port-taken: PROBLEM:", p)
if problems:
    print("--- stdout ---\n" + r.stdout[-2000:] + "\n--- stderr ---\n" + r.stderr[-2000:])
    sys.exit(1)
print("port-taken: ok:", rep.get("endpoint_off"))
