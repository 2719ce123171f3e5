#!/usr/bin/env python3
"""Warm start, end to end with the real plugin: a cold run writes its
decisions (AUTOCCL_TABLE_OUT), a restarted run reads them (AUTOCCL_TABLE).
For every workload the table covers, the restarted run must run its final
decision from the first call after warm-up (first_decision_call <= warm-up
+ 1), run anything else on at most 2 % of its calls (exploration_calls),
and end on the table's decision; no divergence, no errors. Both formats:
autoccl's text and NCCL's CSV (which cannot say "NCCL's own choice", so
those workloads are not covered there), and two simulated hosts.

usage: warm_start.py SIM PLUGIN WORKDIR
"""
import json
import os
import subprocess
import sys

WARMUP = 5


def run(sim, plugin, env_extra, steps, shape, log=None):
    env = dict(os.environ, AUTOCCL_HTTP_PORT="", AUTOCCL_WARMUP=str(WARMUP))
    env.pop("AUTOCCL_TABLE", None)
    env.pop("AUTOCCL_TABLE_OUT", None)
    env.update(env_extra)
    p = subprocess.run([sim, "--plugin", plugin, "--json", "--quiet", "--steps", str(steps)] + shape,
                       env=env, capture_output=True, text=True, timeout=120)
    if p.returncode != 0:
        sys.exit("FAIL: sim exit %d\n%s\n%s" % (p.returncode, p.stdout[-2000:], p.stderr[-2000:]))
    if log is not None:
        log.append(p.stderr)
    rep = json.loads(p.stdout.strip().splitlines()[-1])
    if rep.get("divergent_decisions") or rep.get("plugin_errors"):
        sys.exit("FAIL: divergent or errors: %s" % p.stdout[-2000:])
    return rep


def key(w):
    return (w["collective"], w["bytes"])


def rules(path):
    """(collective, min, max, algo) of each rule of any of the three formats."""
    out = []
    if path.endswith(".json"):
        doc = json.load(open(path))
        return [(r["collective"].replace("_", "").lower(), r["min_bytes"], r["max_bytes"],
                 r["algo"].upper()) for r in doc["rules"]]
    for line in open(path):
        line = line.split("#")[0].strip()
        if not line:
            continue
        f = [x.strip() for x in line.split(",")] if line.count(",") == 9 else line.split()
        big = 2 ** 64 - 1
        out.append((f[0].replace("_", "").lower(), int(f[1]) if f[1] != "max" else big,
                    int(f[2]) if f[2] != "max" else big, f[3].upper()))
    return out


def covered_by(table, w):
    """The first matching rule decides; NCCL's own is no coverage to check
    for CSV (it has no such rule), but is for autoccl's format."""
    coll = w["collective"].lower()
    for c, lo, hi, algo in table:
        if c in (coll, "*", "-1") and lo <= w["bytes"] <= hi:
            return True
    return False


def refused_elsewhere(sim, plugin, work, table, ext, shape, cold_final):
    """The same table, recorded with another NCCL version: refused with one
    warning per process, and every workload it covered explores again."""
    text = open(table).read()
    if "2.28.3" not in text:
        print("FAIL: %s: the table does not record the NCCL version (2.28.3)" % ext)
        return 1
    other = os.path.join(work, "other." + ext)
    with open(other, "w") as f:
        f.write(text.replace("2.28.3", "2.27.7"))
    log = []
    rep = run(sim, plugin, {"AUTOCCL_TABLE": other}, 2000, shape, log)
    warns = [l for l in log[0].splitlines() if "recorded with NCCL 2.27.7" in l]
    procs = int(shape[1])
    # the workloads the cold run found by exploring (first decision after
    # warm-up, so not what warm-up runs) must not start on the table's
    # decision again; a run that ends on another decision (NCCL's own, say)
    # ran that one from call 1 and used no table
    explored = [k for k, c in cold_final.items() if c["first_decision_call"] > WARMUP + 1]
    early = ["%s %d: first_decision_call %d on the table's %s" % (w["collective"], w["bytes"],
                                                                  w["first_decision_call"], w["final"])
             for w in rep["workloads"] if key(w) in explored and w["first_decision_call"] <= WARMUP + 1
             and w["final"] == cold_final[key(w)]["final"]]
    print("%s refused (NCCL 2.27.7 table on 2.28.3): %d warnings for %d processes; of %d explored "
          "workloads, on the table's decision from call 1: %s" % (ext, len(warns), procs, len(explored),
                                                                 early or "none"))
    if not explored:
        print("FAIL: %s: the cold run explored nothing to check against" % ext)
        return 1
    if len(warns) != procs or early:
        print("FAIL: a table of another NCCL version must be refused once per process:\n" +
              "\n".join(warns))
        return 1
    return 0


def main():
    sim, plugin, work = sys.argv[1:4]
    os.makedirs(work, exist_ok=True)
    failures = 0
    runs = [("txt", ["--ranks", "2", "--workload", "mixed"]),
            # the JSON document a run exports is a table its restart reads
            ("json", ["--ranks", "2", "--workload", "mixed"]),
            ("csv", ["--ranks", "2", "--workload", "mixed"]),
            # two hosts: the leader host seeds and exports, the other follows
            ("txt", ["--ranks", "4", "--hosts", "2", "--workload", "ddp"])]
    for ext, shape in runs:
        table = os.path.join(work, "table." + ext)
        if os.path.exists(table):
            os.unlink(table)
        cold = run(sim, plugin, {"AUTOCCL_TABLE_OUT": table}, 20000, shape)
        if not os.path.isfile(table):
            sys.exit("FAIL: %s not written at finalize" % table)
        if any(f.startswith("table.%s.tmp" % ext) for f in os.listdir(work)):
            sys.exit("FAIL: temp file left next to %s" % table)
        cold_final = {key(w): w for w in cold["workloads"] if w["state"] == "converged"}
        table_rules = rules(table)
        warm = run(sim, plugin, {"AUTOCCL_TABLE": table}, 5000, shape)
        covered = 0
        for w in warm["workloads"]:
            k = key(w)
            if k not in cold_final or not covered_by(table_rules, w):
                continue
            covered += 1
            c = cold_final[k]
            line = ("%s %s %s: cold first_decision_call %d exploration_calls %d/%d; warm %d, %d/%d"
                    % (ext, " ".join(shape[1::2]), k, c["first_decision_call"], c["exploration_calls"], c["calls"],
                       w["first_decision_call"], w["exploration_calls"], w["calls"]))
            print(line)
            ok = (w["first_decision_call"] <= WARMUP + 1 and
                  w["exploration_calls"] <= 0.02 * w["calls"] and w["final"] == c["final"])
            if not ok:
                print("FAIL:", line, "final", w["final"], "table", c["final"])
                failures += 1
        if covered == 0:
            sys.exit("FAIL: %s: no workload covered by the table" % ext)
        failures += refused_elsewhere(sim, plugin, work, table, ext, shape, cold_final)
    sys.exit(1 if failures else 0)


main()
