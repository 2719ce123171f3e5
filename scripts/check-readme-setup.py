#!/usr/bin/env python3
"""Runs the README's set-up commands as written, with `sudo` absent from PATH.

  check-readme-setup.py [--real-apt | --with-sudo | --both] [--keep] [--timeout S]

What it does, bounded in time:
- extracts the "Set-up" block of README.md and checks it holds exactly two
  commands;
- copies the tracked and unignored files of this checkout into a fresh
  directory (no build/ there), and runs command 1 there with `bash -c`, as
  written, under a PATH that has every command of the current PATH except
  `sudo` (so a bare `sudo` in the line fails with 127, as on a root-only
  Debian image);
- apt-get: with --real-apt (by hand, as root) the real one runs. Without
  it (the meson test) a recording stand-in takes its place, checks it was
  asked for `update` and for `install -y` with exactly .ci/packages, and that
  every one of those packages is installed here (dpkg-query), then succeeds;
- --with-sudo: the other case, a user with sudo: a recording stand-in
  `sudo` is on PATH (it runs its arguments); both apt-get calls must go
  through it;
- --both (the meson test): root's case on the fresh copy, then a user's
  with sudo on the same copy. The line is the same after apt-get, so the
  second run finds build/ configured and built (meson setup says so and
  exits 0, the compile has nothing to do) and checks the sudo route and the
  demo again, without building the tree a second time (its demo gets the
  Ctrl-C once it serves workloads: the first run saw them converge);
- the build (`meson setup build && meson compile -C build`) runs for real;
- the demo (`build/sim/autoccl-sim --demo`) runs until its endpoint on
  127.0.0.1:9464 serves workloads that converged, then gets a Ctrl-C (SIGINT
  to the command's process group, as a terminal sends it) and must stop
  cleanly with its report, rc 0, no divergent decision, having printed where
  to watch (the dashboard URL, the autoccl-top path that exists);
- runs in a private network namespace (unshare) when it can, so port 9464
  is its own; otherwise it needs 9464 free (else SKIP, 77). --real-apt needs
  the network, so it runs on the host's, with 9464 free, and fails on any
  apt fetch error (apt-get update exits 0 even when offline);
- command 2 (`meson test -C build ...`) is checked to be the test suite but
  not run from here: the suite is what calls this script, and .ci/run runs
  command 2 itself.
It does not start from a fresh machine image (no container here): the
stand-in apt-get checks the package list against what is installed, and
.ci/run, which starts from one, runs the real apt-get as root.

Exit: 0 passed, 1 failed, 77 skipped (a needed tool is missing).
"""
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PORT = 9464


def fail(msg):
    print("FAIL: " + msg, flush=True)
    sys.exit(1)


def skip(msg):
    print("SKIP: " + msg, flush=True)
    sys.exit(77)


def readme_commands():
    # ACL_README: another README to check (the checker's own negative test).
    text = open(os.environ.get("ACL_README") or os.path.join(ROOT, "README.md"),
                encoding="utf-8").read()
    m = re.search(r"^## Set-up[^\n]*\n+```sh\n(.*?)\n```", text, re.S | re.M)
    if not m:
        fail("README.md has no '## Set-up' section with a ```sh block")
    cmds = [l for l in m.group(1).split("\n") if l.strip() and not l.lstrip().startswith("#")]
    if len(cmds) != 2:
        fail("README set-up block should hold exactly two commands, found %d: %r" % (len(cmds), cmds))
    return cmds


def copy_tree(dst):
    out = subprocess.run(["git", "-C", ROOT, "ls-files", "-co", "--exclude-standard", "-z"],
                         capture_output=True, check=True).stdout.decode()
    n = 0
    for rel in filter(None, out.split("\0")):
        src = os.path.join(ROOT, rel)
        if not os.path.isfile(src) or os.path.islink(src):
            continue  # deleted in the worktree, or a link (none expected)
        d = os.path.join(dst, rel)
        os.makedirs(os.path.dirname(d), exist_ok=True)
        shutil.copy2(src, d)
        n += 1
    return n


SUDO_SHIM = r"""#!/bin/sh
# Stand-in for sudo (check-readme-setup.py --with-sudo): records, then runs.
echo "$*" >>"$SUDO_LOG"
exec "$@"
"""

APT_SHIM = r"""#!/bin/sh
# Stand-in for apt-get (check-readme-setup.py): records the call.
echo "uid=$(id -u) $*" >>"$APT_LOG"
exit 0
"""


def path_without_sudo(tmp, shim, sudo_shim=False):
    """A bin directory with links to every command on PATH but sudo."""
    b = os.path.join(tmp, "bin")
    os.makedirs(b)
    for d in os.environ.get("PATH", "").split(":"):
        if not os.path.isdir(d):
            continue
        for name in os.listdir(d):
            p = os.path.join(d, name)
            if name == "sudo" or os.path.exists(os.path.join(b, name)):
                continue
            if os.path.isfile(p) and os.access(p, os.X_OK):
                os.symlink(p, os.path.join(b, name))
    if sudo_shim:
        t = os.path.join(b, "sudo")
        with open(t, "w") as f:
            f.write(SUDO_SHIM)
        os.chmod(t, 0o755)
    if shim:
        for name in ("apt-get",):
            t = os.path.join(b, name)
            if os.path.lexists(t):
                os.unlink(t)
            with open(t, "w") as f:
                f.write(APT_SHIM)
            os.chmod(t, 0o755)
    return b


def in_netns_ok():
    """Can we get a private loopback (so 9464 is ours)?"""
    base = ["unshare", "-n"] if os.geteuid() == 0 else ["unshare", "-rn"]
    if not shutil.which("unshare") or not shutil.which("ip"):
        return None
    r = subprocess.run(base + ["sh", "-c", "ip link set lo up"], capture_output=True)
    return base if r.returncode == 0 else None


def port_free(port):
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the server; TIME_WAIT is fine
    try:
        s.bind(("127.0.0.1", port))
        return True
    except OSError:
        return False
    finally:
        s.close()


# Runs inside the namespace: brings loopback up, starts the README line in its
# own process group, watches the endpoint, sends Ctrl-C, reports as JSON.
INNER = r"""
import json, os, signal, subprocess, sys, time, urllib.request
line, port, budget = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
served_only = len(sys.argv) > 4 and sys.argv[4] == "served"  # Ctrl-C once it serves
subprocess.run(["ip", "link", "set", "lo", "up"], capture_output=True)
out = open("setup.log", "wb")
p = subprocess.Popen(["bash", "-c", line], stdout=out, stderr=subprocess.STDOUT,
                     start_new_session=True)
t0 = time.monotonic(); res = {"converged": 0, "workloads": 0, "served": False}
def state():
    with urllib.request.urlopen("http://127.0.0.1:%d/api/v1/state" % port, timeout=3) as r:
        return json.load(r)
while time.monotonic() - t0 < budget and p.poll() is None:
    try:
        st = state()
        # Ours, not another process on the same port (host network).
        try:
            if os.readlink("/proc/%d/cwd" % st["pid"]) != os.getcwd():
                res["foreign"] = st["pid"]; time.sleep(1); continue
        except OSError:
            res["foreign"] = st["pid"]; time.sleep(1); continue
        res["served"] = True
        ws = st["workloads"]
        res["workloads"] = len(ws)
        res["converged"] = sum(w["state"] == "converged" for w in ws)
        res["net_known"] = sum(w.get("time_saved_seconds") is not None for w in ws)
        if ws and (served_only or (res["converged"] >= 1 and res["net_known"] >= 1)):
            res["ready_s"] = round(time.monotonic() - t0, 1)
            break
    except Exception:
        pass
    time.sleep(1)
if p.poll() is None:
    os.killpg(p.pid, signal.SIGINT)   # Ctrl-C, as a terminal sends it
    try:
        p.wait(90)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL); p.wait(); res["killed"] = True
res["rc"] = p.returncode
res["elapsed_s"] = round(time.monotonic() - t0, 1)
print(json.dumps(res))
"""


def main():
    args = sys.argv[1:]
    real = "--real-apt" in args
    both = "--both" in args
    with_sudo = "--with-sudo" in args
    if real + with_sudo + both > 1:
        fail("--real-apt, --with-sudo and --both exclude each other")
    keep = "--keep" in args
    budget = 420.0
    if "--timeout" in args:
        budget = float(args[args.index("--timeout") + 1])
    for tool in ("git", "bash", "meson", "ninja"):
        if not shutil.which(tool):
            skip("%s not found" % tool)
    if real and os.geteuid() != 0:
        skip("--real-apt needs root (it checks the root case: no sudo)")
    cmds = readme_commands()
    line1, line2 = cmds
    print("README command 1: " + line1)
    print("README command 2: " + line2)
    if not line2.startswith("meson test -C build"):
        fail("command 2 should run the test suite: %r" % line2)
    if "--demo" not in line1 or "build/sim/autoccl-sim" not in line1:
        fail("command 1 should end in the demo (build/sim/autoccl-sim --demo)")
    ns = None if real else in_netns_ok()
    if not ns and not port_free(PORT):
        skip("no private network namespace and port %d is in use" % PORT)
    tmp = tempfile.mkdtemp(prefix="readme-setup.")
    try:
        work = os.path.join(tmp, "autoccl")
        n = copy_tree(work)
        print("fresh tree: %d files in %s (no build/)" % (n, work))
        if not both:
            return run_case(tmp, work, line1, ns, budget, real, with_sudo)
        rc = run_case(os.path.join(tmp, "root"), work, line1, ns, budget, real, False)
        if rc == 0:
            print("the same line as a user with sudo, on the tree built above", flush=True)
            rc = run_case(os.path.join(tmp, "user"), work, line1, ns, budget, real, True,
                          served_only=True)
        return rc
    finally:
        if keep:
            print("kept " + tmp)
        else:
            shutil.rmtree(tmp, ignore_errors=True)


def run_case(tmp, work, line1, ns, budget, real, with_sudo, served_only=False):
    """Runs command 1 in work with the PATH of one case (its stand-ins and
    logs under tmp) and checks what it did; 0 when every check held.
    served_only: Ctrl-C as soon as the demo serves workloads, without
    waiting for one to converge (a run of the same build already showed
    that)."""
    os.makedirs(tmp, exist_ok=True)
    b = path_without_sudo(tmp, shim=not real, sudo_shim=with_sudo)
    env = dict(os.environ, PATH=b, APT_LOG=os.path.join(tmp, "apt.log"),
               SUDO_LOG=os.path.join(tmp, "sudo.log"))
    env.pop("MESON_TESTTHREADS", None)
    r = subprocess.run(["bash", "-c", "command -v sudo"], env=env, capture_output=True)
    if (r.returncode == 0) != with_sudo:
        fail("sudo %s the PATH built for this case" % ("missing from" if with_sudo else "still on"))
    cmd = (ns or []) + [sys.executable, "-c", INNER, line1, str(PORT), str(budget),
                        "served" if served_only else "converged"]
    print("running command 1 (%s, apt-get %s)" %
          ("private network namespace" if ns else "host network",
           "real" if real else "stand-in") + (", stand-in sudo" if with_sudo else
                                               ", no sudo"), flush=True)
    r = subprocess.run(cmd, cwd=work, env=env, capture_output=True, text=True,
                       timeout=budget + 150)
    log = open(os.path.join(work, "setup.log"), errors="replace").read()
    try:
        res = json.loads(r.stdout.strip().split("\n")[-1])
    except (ValueError, IndexError):
        print(log[-3000:])
        fail("runner gave no result: %s %s" % (r.stdout[-500:], r.stderr[-500:]))
    print("result: " + json.dumps(res))
    ok = True

    def check(name, cond, detail=""):
        nonlocal ok
        print(("ok   - " if cond else "FAIL - ") + name + ("" if cond else ": " + str(detail)))
        ok &= bool(cond)

    check("no 'sudo: command not found'", "sudo: command not found" not in log
          and "sudo: not found" not in log, log[-800:])
    if real:
        errs = [l for l in log.split("\n") if l.startswith(("Err:", "W:", "E:"))]
        # An image without gpgv (stock Debian has it: apt depends on it)
        # cannot verify the lists; that is the image, not the README.
        nogpg = [l for l in errs if l.startswith("W:") and "gpgv" in l and "installed" in l]
        other = [l for l in errs if l.startswith(("W:", "E:")) and l not in nogpg and
                 not l.startswith("W: Some index files failed to download")]
        if nogpg and not other:
            print("WARN - apt-get update could not verify its lists: gpgv is not installed "
                  "on this image; the install used the lists already there")
        else:
            check("apt-get update fetched its lists (no Err:/W:/E:)", not errs, errs[:5])
    if not real:
        calls = open(env["APT_LOG"]).read().split("\n") if os.path.exists(env["APT_LOG"]) else []
        calls = [c for c in calls if c]
        pk = [l.strip() for l in open(os.path.join(ROOT, ".ci/packages"))
              if l.strip() and not l.startswith("#")]
        check("apt-get update, then install -y of .ci/packages",
              len(calls) == 2 and calls[0].endswith(" update") and
              calls[1].split()[1:3] == ["install", "-y"] and
              sorted(calls[1].split()[3:]) == sorted(pk), calls)
        if shutil.which("dpkg-query"):
            q = subprocess.run(["dpkg-query", "-W", "-f", "${Package} ${Status}\\n"] + pk,
                               capture_output=True, text=True)
            missing = [l for l in q.stdout.split("\n") if l and "install ok installed" not in l]
            check("every package of .ci/packages is installed here", q.returncode == 0 and
                  not missing, (missing, q.stderr[-300:]))
    if with_sudo:
        su = open(env["SUDO_LOG"]).read().split("\n") if os.path.exists(env["SUDO_LOG"]) else []
        su = [c for c in su if c]
        check("a user with sudo: both apt-get calls go through sudo",
              len(su) == 2 and su[0] == "apt-get update" and su[1].startswith("apt-get install -y "),
              su)
    check("the build produced the demo and autoccl-top",
          os.path.exists(os.path.join(work, "build/sim/autoccl-sim")) and
          os.path.exists(os.path.join(work, "build/tui/autoccl-top")), log[-1500:])
    check("the demo served /api/v1/state on port %d" % PORT, res.get("served"), log[-1500:])
    if not served_only:
        check("workloads converged and net value known before Ctrl-C",
              res.get("converged", 0) >= 1 and res.get("net_known", 0) >= 1, res)
    check("it prints the dashboard URL", "http://127.0.0.1:%d/" % PORT in log, log[:1500])
    check("it prints the autoccl-top command with its real path",
          "build/tui/autoccl-top --url http://127.0.0.1:%d" % PORT in log, log[:1500])
    check("it tells what it runs for and how to stop it",
          "Ctrl-C" in log and "second terminal" in log, log[:1500])
    check("Ctrl-C stops it cleanly: rc 0 and the report",
          res.get("rc") == 0 and not res.get("killed") and "autoccl-sim report" in log,
          (res, log[-1500:]))
    check("no divergent decision", "divergent decisions: 0" in log, log[-600:])
    if not ok:
        print("---- command 1 output (tail) ----")
        print(log[-4000:])
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
