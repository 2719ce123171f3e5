#!/usr/bin/env python3
"""Small run of the tuner benchmark: the JSON contract (last stdout line,
required keys, sane values) and a clear error on bad arguments."""
import json
import subprocess
import sys

exe = sys.argv[1]
p = subprocess.run([exe, "--json", "--landscapes", "20", "--h200-reps", "2", "--seed", "3"],
                   capture_output=True, text=True, timeout=100)
if p.returncode not in (0, 1):  # 1 = a target missed on this tiny sample
    sys.exit("bench failed rc=%d: %s" % (p.returncode, p.stderr))
last = p.stdout.strip().splitlines()[-1]
d = json.loads(last)
for k in ("final_over_oracle_median", "final_over_oracle_p5", "calls_to_converge_median",
          "exploration_overhead", "final_over_baseline_min"):
    assert k in d, "missing key " + k
# Bounds with room around what this run measured (seed 3, 20 landscapes, 2
# H200 repetitions, at the commit that set them): a search that lost its way
# fails them, noise between compilers does not.
#   final/oracle median 0.995, p5 0.948; calls to converge 9,779;
#   exploration overhead 0.022; final/baseline min 0.935; not converged 0 + 3
assert 0.98 <= d["final_over_oracle_median"] <= 1.0 + 1e-9, d
assert 0.90 <= d["final_over_oracle_p5"] <= d["final_over_oracle_median"], d
# Exploration is paid from a share of the time so far: small collectives
# take thousands of calls to converge, large ones a hundred.
assert 1000 <= d["calls_to_converge_median"] <= 30000, d
# The budget is 3 % of the time so far (AUTOCCL_EXPLORE_BUDGET's default):
# the overhead stays below it, and exploring costs something.
assert 0.0 < d["exploration_overhead"] < 0.03, d
assert d["final_over_baseline_min"] >= 0.90, d
for part in ("h200", "synthetic"):
    x = d[part]
    assert x["final_over_oracle_min"] <= x["final_over_oracle_p5"] <= x["final_over_oracle_median"] \
        <= 1.0 + 1e-9, (part, x)
    assert x["final_over_oracle_median"] >= 0.98, (part, x)
    assert x["oracle_over_baseline_median"] >= x["final_over_baseline_median"] - 1e-9, (part, x)
    assert x["not_converged"] <= x["runs"] // 100, (part, x)       # measured 0 and 3
    assert x["below_baseline_runs"] <= max(1, x["runs"] // 100), (part, x)  # measured 1 and 1
assert d["synthetic"]["runs"] == 20 * 5 * 10 and d["h200"]["runs"] == 2 * 5 * 10, d
assert (d["targets_met"] is True) == (p.returncode == 0), d
assert "synthetic landscapes" in p.stderr, "progress goes to stderr"
# Same seed, same result (deterministic).
q = subprocess.run([exe, "--json", "--landscapes", "20", "--h200-reps", "2", "--seed", "3"],
                   capture_output=True, text=True, timeout=100)
e = json.loads(q.stdout.strip().splitlines()[-1])
d.pop("seconds"); e.pop("seconds")
assert d == e, "not deterministic"
# Bad input: clear message, exit 2, nothing on stdout.
for bad in (["--landscapes", "many"], ["--noise", "-1"], ["--seed", "-5"], ["--frobnicate"]):
    b = subprocess.run([exe] + bad, capture_output=True, text=True, timeout=10)
    assert b.returncode == 2, (bad, b.returncode)
    assert b.stdout == "", bad
    assert bad[0] in b.stderr or bad[-1] in b.stderr, (bad, b.stderr)
print("ok")
