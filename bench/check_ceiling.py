#!/usr/bin/env python3
"""autoccl-bench --compare default,ceiling,autoccl --ceiling N under --fake:
the ceiling mode is NCCL with NCCL_MIN/MAX_NCHANNELS=N and no plugin, the
autoccl mode gets the ceiling and AUTOCCL_STOCK_CHANNELS, default gets no
channel variable; the record carries what a reader needs to repeat it
(launch, interference, reps, warmup, warmup_s, iters, env per mode,
nccl_version) and autoccl/ceiling ratios; bad --ceiling values are refused;
--help prints no doubled percent sign."""
import json
import subprocess
import sys

bench = sys.argv[1]
fails = []


def check(cond, what):
    if not cond:
        fails.append(what)


def run(*args):
    return subprocess.run([bench, *args], capture_output=True, text=True, timeout=240)


r = run("--fake", "-g", "2", "-b", "64K", "-e", "4M", "-f", "4", "-w", "20", "-n", "5",
        "--compare", "default,ceiling,autoccl", "--ceiling", "32", "--stock-channels", "24",
        "--plugin", __file__, "--reps", "2", "--json", "-q")
check(r.returncode == 0, "compare exit %d: %s" % (r.returncode, r.stderr[-400:]))
d = json.loads(r.stdout.strip().splitlines()[-1]) if r.returncode == 0 else {}
for k in ("launch", "interference", "reps", "warmup", "warmup_s", "iters", "nccl_version"):
    check(k in d, "compare record lacks %s" % k)
check(d.get("nccl_version", 1) is None, "no NCCL under --fake: nccl_version is null")
modes = d.get("modes", {})
check(list(modes) == ["default", "ceiling", "autoccl"], "modes %s" % list(modes))
env = {m: v.get("env", []) for m, v in modes.items()}
check(not any("NCHANNELS" in e or "PLUGIN" in e for e in env.get("default", [])),
      "default is NCCL as it ships: %s" % env.get("default"))
check("NCCL_MIN_NCHANNELS=32" in env.get("ceiling", []) and
      "NCCL_MAX_NCHANNELS=32" in env.get("ceiling", []), "ceiling env %s" % env.get("ceiling"))
check(not any("PLUGIN" in e or e.startswith("AUTOCCL_") for e in env.get("ceiling", [])),
      "the ceiling mode runs no plugin: %s" % env.get("ceiling"))
check("NCCL_MIN_NCHANNELS=32" in env.get("autoccl", []) and
      "AUTOCCL_STOCK_CHANNELS=24" in env.get("autoccl", []) and
      any(e.startswith("NCCL_TUNER_PLUGIN=") for e in env.get("autoccl", [])),
      "autoccl env %s" % env.get("autoccl"))
for rt in d.get("ratios", []):
    check("autoccl/ceiling" in rt and "ceiling/default" in rt and "default/ceiling" not in rt,
          "ratios at %s: %s" % (rt.get("size"), sorted(rt)))
check(len(d.get("ratios", [])) == 4, "four sizes")
check("over the ceiling alone" in r.stdout, "the text report says what autoccl adds over ceiling")

# Without --ceiling the ceiling mode uses 32 and autoccl runs as it ships.
r = run("--fake", "-g", "2", "-b", "64K", "-e", "64K", "-w", "5", "-n", "5", "--compare",
        "ceiling,autoccl", "--plugin", __file__, "--reps", "1", "--json", "-q")
check(r.returncode == 0, "second compare exit %d" % r.returncode)
if r.returncode == 0:
    m = json.loads(r.stdout.strip().splitlines()[-1])["modes"]
    check("NCCL_MIN_NCHANNELS=32" in m["ceiling"]["env"], "ceiling default 32: %s" % m["ceiling"]["env"])
    check(not any("NCHANNELS" in e or "STOCK" in e for e in m["autoccl"]["env"]),
          "autoccl without --ceiling: %s" % m["autoccl"]["env"])

for bad in (["--ceiling", "24"], ["--ceiling", "0"], ["--ceiling", "65"], ["--stock-channels", "x"]):
    r = run("--fake", "--compare", "ceiling", *bad)
    check(r.returncode == 2, "%s: exit %d, wanted 2" % (bad, r.returncode))
r = run("--help")
check(r.returncode == 0 and "%%" not in r.stdout and "2 % with no size" in r.stdout,
      "--help prints a single percent sign")

for f in fails:
    print("FAIL:", f)
print("%d checks failed" % len(fails) if fails else "ok")
sys.exit(1 if fails else 0)
