"""autoccl-sim with the real plugin, each rank recording AUTOCCL_TRACE: the
one way the simulator tests that read the plugin's traces start it."""
import glob, json, os, subprocess, sys


def run(sim, plugin, args, tmp, timeout=60):
    """Runs SIM --plugin PLUGIN ARGS --json --quiet with the traces in tmp
    (t-<rank>.jsonl.gz) and returns (its JSON report, the trace paths,
    sorted). Exits 77 where the simulator was built without zlib, and fails
    the test when it exits non-zero."""
    env = dict(os.environ, AUTOCCL_TRACE=os.path.join(tmp, "t-%r.jsonl.gz"), AUTOCCL_HTTP_PORT="")
    p = subprocess.run([sim, "--plugin", plugin] + list(args) + ["--json", "--quiet"],
                       capture_output=True, text=True, timeout=timeout, env=env)
    if p.returncode == 2 and "without zlib" in p.stderr:
        print("SKIP: built without zlib")
        sys.exit(77)
    if p.returncode != 0:
        sys.exit("FAIL: sim exited %d\n%s\n%s" % (p.returncode, p.stdout[-2000:], p.stderr[-2000:]))
    rep = json.loads(p.stdout.strip().splitlines()[-1])
    return rep, sorted(glob.glob(os.path.join(tmp, "t-*.jsonl.gz")))
