#!/usr/bin/env python3
"""Runs autoccl-sim with --json and checks its report.

usage: run_sim.py [checks] -- SIM [sim args]
checks:
  --exit N            expected exit status (default 0)
  --converged         every workload's state is "converged"
  --measured          every workload of every rank's job report has NCCL's time
                      measured (a baseline: nccl_seconds > 0)
  --min-speedup X     every workload's speedup >= X
  --hosts-match FRAC  the command (with --hosts H) run again with --hosts 1: the job
                      totals' NCCL time and net saved per rank agree within FRAC
                      (0.1: 10 %)
  --account-within F  the job's net saved per rank (the plugin's own account) is
                      within F of what the simulator measured the job saving
                      (true_saved_per_rank_seconds, NCCL's own choice on the same
                      draws), relative to the larger of that saving and 1 % of the
                      NCCL time
  --min-tuned N       at least N workloads whose decision changed during the run
                      (the plugin really tuned: it got samples and explored)
  --divergent-min N   divergent_decisions >= N (default: must be 0 unless --exit 1)
  --errors-min N      plugin_errors >= N
  --fake-out FILE     the fake plugin's summary file: no violations, Coll events
                      equal calls, KernelCh events present (FILE is removed first)
  --fake-overlap N    ... and every rank saw overlap N (thousandths) in the feed
  --expect-stderr S   stderr must contain S (repeatable); with --exit 2 stdout empty
  --timeout S         wall-clock bound for the sim (default 20)
  --expect KEY=VALUE  a top-level report field equals VALUE (compared as text)
  --max-steps N       the run made at most N training steps (--realtime pacing)
  --min-chunked N     at least N workloads whose final decision runs a chunk size
                      other than NCCL's own (--nccl 2.30)
  --churn N           at least N communicator generations (--churn-every), none of
                      the run's consensus segments left once the ranks are gone, and
                      every measured rank process back to its /dev/shm mappings,
                      descriptors and threads after the warm-up churns, with its
                      RSS growing by at most 2 kB per generation in all but one of
                      the stretches between the RSS marks, or in the last two (a
                      leak grows in each; malloc's heap grows in one or two steps
                      early on, then stays)
  --expect-state S    some workload shows state S both in the live state read at the
                      end (/api/v1/state, needs --port) and in the plugin's job report
  --sampled-from N    every workload of N calls or more has samples (an NCCL time)
                      in every rank's job report, and one still waiting for the
                      exploration budget says how many more calls it waits
  --max-retunes N     rank 0's job report: its workloads re-tuned N times or fewer
                      in all
  --min-captured N    at least N calls captured into a CUDA graph (--capture-every),
                      and none of them ran an exploratory candidate (neither NCCL's
                      own choice nor the workload's final decision)
In the command, @FREEPORT@ becomes a loopback port with the next 15 free too.
Every run gets its own TMPDIR, which must hold nothing of the simulator's
once it has ended (a run must leave no autoccl-sim.* directory behind).
"""
import contextlib
import io
import gzip
import json
import os
import socket
import shutil
import subprocess
import sys
import tempfile
import time


def fail(msg, out="", err=""):
    print("FAIL:", msg)
    if out:
        print("--- stdout (tail) ---\n" + out[-3000:])
    if err:
        print("--- stderr (tail) ---\n" + err[-3000:])
    sys.exit(1)


def free_ports(n=16):
    for base in range(20000 + os.getpid() % 20000, 65000, 97):
        socks = []
        try:
            for p in range(base, base + n):
                s = socket.socket()
                s.bind(("127.0.0.1", p))
                socks.append(s)
            return base
        except OSError:
            continue
        finally:
            for s in socks:
                s.close()
    fail("no free loopback ports")


RSS_KB_PER_CYCLE = 2


def check_rss_marks(r, out, err):
    """A leak makes RSS grow in every stretch between the marks; a one-off
    step (malloc's heap grown once, which a random MALLOC_PERTURB_ can move
    to any generation) in one stretch only. So at most one stretch may grow
    by more than RSS_KB_PER_CYCLE per generation, unless the last two stay
    under it: on a loaded machine the heap was seen growing in two steps
    (+288 and +760 kB in generations 20-120) and not at all in the 100
    generations after, which no leak does."""
    marks = r.get("rss_marks") or []
    if len(marks) < 3:
        fail("rank %d: %d RSS marks, expected >= 3 (run with --steps)" % (r["rank"], len(marks)),
             out, err)
    over = []
    for a, b in zip(marks, marks[1:]):
        grew, cycles = b["rss_kb"] - a["rss_kb"], b["cycle"] - a["cycle"]
        if grew > RSS_KB_PER_CYCLE * cycles:
            over.append("%+d kB in generations %d-%d" % (grew, a["cycle"], b["cycle"]))
    print("rank %d: RSS marks %s" % (r["rank"], " ".join(
        "%d:%d" % (m["cycle"], m["rss_kb"]) for m in marks)))
    stretches = list(zip(marks, marks[1:]))
    tail_grew = any(b["rss_kb"] - a["rss_kb"] > RSS_KB_PER_CYCLE * (b["cycle"] - a["cycle"])
                    for a, b in stretches[-2:])
    if len(over) > 1 and tail_grew:
        fail("rank %d: RSS grew by more than %d kB per generation in %d of %d stretches (%s): a leak"
             % (r["rank"], RSS_KB_PER_CYCLE, len(over), len(marks) - 1, "; ".join(over)), out, err)


def check_hosts_match(cmd, rep, frac, timeout, env, out, err):
    """The same run on one host gives the same job figures, and every host's
    reports the leader host's: a follower host shows the leader's
    measurements, not zeros."""
    if "--hosts" not in cmd:
        fail("--hosts-match needs --hosts in the command", out, err)
    one = list(cmd)
    one[one.index("--hosts") + 1] = "1"
    env = dict(env, TMPDIR=tempfile.mkdtemp(prefix="run-sim-"))  # the first run's is gone
    try:
        p = subprocess.run(one, capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired as e:
        fail("the one-host run ran past %.0f s" % timeout, e.stdout or "", e.stderr or "")
    finally:
        shutil.rmtree(env["TMPDIR"], ignore_errors=True)
    if p.returncode != 0 or not p.stdout.strip():
        fail("the one-host run: exit status %d" % p.returncode, p.stdout, p.stderr)
    one_rep = json.loads(p.stdout.strip().splitlines()[-1])
    ref = one_rep["job_totals"]
    got = rep.get("job_totals") or {}
    key = "nccl_per_rank_seconds"
    a, b = got.get(key), ref.get(key)
    print("%s: %s hosts %s, one host %s" % (key, rep.get("hosts"), a, b))
    if a is None or b is None or not b > 0 or abs(a - b) > frac * b:
        fail("%s %s differs from the one-host run's %s by more than %g %%" % (
            key, a, b, 100 * frac), out, err)
    # Every host's reports give the leader host's figures (a follower runs
    # no search of its own: it shows the leader's, not zeros).
    reps = rep.get("job_reports") or []
    hosts = int(rep.get("hosts") or 1)
    if not reps or any(r is None for r in reps) or len(reps) % hosts:
        fail("%d job reports for %d hosts" % (len(reps), hosts), out, err)
    per = len(reps) // hosts
    lead = reps[0]["totals"]["net_saved_per_rank_seconds"]
    for i, r in enumerate(reps):
        v = r["totals"]["net_saved_per_rank_seconds"]
        if v is None or abs(v - lead) > 0.01 * max(abs(lead), 1e-9):
            fail("host %d's report %d: net saved per rank %s, the leader host's %s" % (
                i // per, i, v, lead), out, err)
    # Against the one-host run, the same search: net saved over the
    # workloads decided in both (a finite run may end with one still being
    # validated on one side, its saving not counted yet).
    decided = ("converged", "validating", "refining")

    def saved(report):
        return {(w["collective"], w["bytes"]): w.get("net_saved_seconds") or 0.0
                for w in report["workloads"] if w["state"] in decided}
    mine, theirs = saved(reps[0]), saved(one_rep["job_reports"][0])
    both = sorted(set(mine) & set(theirs))
    a, b = sum(mine[k] for k in both), sum(theirs[k] for k in both)
    print("net saved over the %d workloads decided in both: %s hosts %s, one host %s" % (
        len(both), hosts, a, b))
    if not both or not b > 0 or abs(a - b) > frac * b:
        fail("net saved %s over the workloads decided in both differs from the one-host run's "
             "%s by more than %g %%" % (a, b, 100 * frac), out, err)


def selftest_rss():
    """check_rss_marks on marks of generations 20..220: what it must call a
    leak, and what it must not."""
    cases = [([11224, 11512, 12272, 12336, 12340], False, "two early heap steps, then flat"),
             ([11000, 11800, 11800, 11800, 11800], False, "one heap step"),
             ([11000, 11150, 11300, 11450, 11600], True, "3 kB per generation"),
             ([11000, 11000, 11000, 11300, 11700], True, "growth in the last two stretches")]
    for vals, leak, what in cases:
        r = {"rank": 0, "rss_marks": [{"cycle": c, "rss_kb": v}
                                      for c, v in zip(range(20, 221, 50), vals)]}
        said = io.StringIO()  # the check's own lines: expected verdicts, not this test's
        try:
            with contextlib.redirect_stdout(said):
                check_rss_marks(r, "", "")
            called = False
        except SystemExit:
            called = True
        if called != leak:
            print("FAIL: selftest: %s %s a leak" % (what, "was called" if called else "was not called"))
            sys.exit(1)
    print("ok: %d RSS cases" % len(cases))


def check_leaves_waiting(trace_dir, rep, min_calls, share, out, err):
    """Every workload of rank 0 with >= min_calls calls leaves its waits
    (warm-up, waiting for budget or samples) for a measuring state within
    the first `share` of its calls, by the plugin's trace."""
    path = os.path.join(trace_dir, "t-0.jsonl.gz")
    try:
        with gzip.open(path, "rt") as f:
            recs = [json.loads(l) for l in f]
    except (OSError, ValueError) as e:
        shutil.rmtree(trace_dir, ignore_errors=True)
        fail("no readable plugin trace %s: %s" % (path, e), out, err)
    shutil.rmtree(trace_dir, ignore_errors=True)
    calls = {(w["collective"], w["bytes"]): w["calls"]
             for r in rep.get("job_reports") or [] if r.get("rank", 0) == 0 for w in r["workloads"]}
    began = {}
    for r in recs:
        k = (r.get("coll"), r.get("bytes"))
        if r.get("t") == "d" and k not in began and r.get("phase") != "warmup" \
                and not str(r.get("phase", "")).startswith("waiting"):
            began[k] = r["call"]
    late = []
    for k, n in sorted(calls.items()):
        if n < min_calls:
            continue
        b = began.get(k)
        print("%s %d bytes: measuring from call %s of %d" % (k[0], k[1], b, n))
        if b is None or b > share * n:
            late.append(k)
    if not calls or late:
        fail("workloads that did not leave their waits within %.0f %% of their calls: %s"
             % (100 * share, late), out, err)


def main(argv):
    if argv == ["--selftest-rss"]:
        selftest_rss()
        return
    if "--" not in argv:
        fail("missing -- before the command")
    i = argv.index("--")
    opts, cmd = argv[:i], argv[i + 1:]
    want_exit, converged, min_speedup, measured = 0, False, None, False
    div_min, err_min, fake_out, stderr_needles, timeout = None, None, None, [], 20.0
    fake_overlap = None
    min_tuned, min_chunked, min_captured, churn, want_state = None, None, None, None, None
    expects, max_steps, sampled_from, hosts_match, account = [], None, None, None, None
    leaves_by, max_retunes = None, None
    k = 0
    while k < len(opts):
        o = opts[k]
        if o in ("--converged", "--measured"):
            converged = converged or o == "--converged"
            measured = measured or o == "--measured"
            k += 1
            continue
        v = opts[k + 1]
        k += 2
        if o == "--exit":
            want_exit = int(v)
        elif o == "--min-speedup":
            min_speedup = float(v)
        elif o == "--divergent-min":
            div_min = int(v)
        elif o == "--errors-min":
            err_min = int(v)
        elif o == "--fake-out":
            fake_out = v
        elif o == "--expect":
            expects.append(v.split("=", 1))
        elif o == "--max-steps":
            max_steps = int(v)
        elif o == "--hosts-match":
            hosts_match = float(v)
        elif o == "--account-within":
            account = float(v)
        elif o == "--min-tuned":
            min_tuned = int(v)
        elif o == "--min-chunked":
            min_chunked = int(v)
        elif o == "--min-captured":
            min_captured = int(v)
        elif o == "--sampled-from":
            sampled_from = int(v)
        elif o == "--leaves-waiting-by":
            leaves_by = float(v)
        elif o == "--max-retunes":
            max_retunes = int(v)
        elif o == "--churn":
            churn = int(v)
        elif o == "--expect-state":
            want_state = v
        elif o == "--fake-overlap":
            fake_overlap = int(v)
        elif o == "--expect-stderr":
            stderr_needles.append(v)
        elif o == "--timeout":
            timeout = float(v)
        else:
            fail("unknown check " + o)
    if "@FREEPORT@" in cmd:
        port = str(free_ports())
        cmd = [port if a == "@FREEPORT@" else a for a in cmd]
    env = dict(os.environ)
    if fake_out:
        if os.path.exists(fake_out):
            os.unlink(fake_out)
        env["ACL_FAKE_OUT"] = fake_out
    tmp = tempfile.mkdtemp(prefix="run-sim-")
    env["TMPDIR"] = tmp
    trace_dir = None
    if leaves_by is not None:
        # rank 0's plugin trace: when each workload began measuring
        trace_dir = tempfile.mkdtemp(prefix="run-sim-trace-")
        env["AUTOCCL_TRACE"] = os.path.join(trace_dir, "t-%r.jsonl.gz")
    t0 = time.monotonic()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired as e:
        shutil.rmtree(tmp, ignore_errors=True)
        fail("autoccl-sim ran past %.0f s" % timeout, e.stdout or "", e.stderr or "")
    left = sorted(os.listdir(tmp))
    shutil.rmtree(tmp, ignore_errors=True)
    if left:
        fail("the run left %s in its TMPDIR" % left, p.stdout, p.stderr)
    wall = time.monotonic() - t0
    out, err = p.stdout, p.stderr
    print("$", " ".join(cmd), "-> exit", p.returncode, "in %.1f s" % wall)
    if p.returncode != want_exit:
        fail("exit status %d, expected %d" % (p.returncode, want_exit), out, err)
    for s in stderr_needles:
        if s not in err:
            fail("stderr lacks %r" % s, out, err)
    if want_exit == 2:
        if out.strip():
            fail("usage error but stdout is not empty", out, err)
        return
    lines = out.strip().splitlines()
    if not lines:
        fail("no output", out, err)
    try:
        rep = json.loads(lines[-1])
    except ValueError as e:
        fail("last stdout line is not JSON: %s" % e, out, err)
    for key in ("divergent_decisions", "consensus_wait_seconds", "plugin_errors", "workloads"):
        if key not in rep:
            fail("report lacks " + key, out, err)
    print("divergent=%d errors=%d wait=%s steps=%d calls/rank=%d workloads=%d" % (
        rep["divergent_decisions"], rep["plugin_errors"], rep["consensus_wait_seconds"],
        rep["steps"], rep["calls_per_rank"], len(rep["workloads"])))
    if account is not None:
        t = rep.get("job_totals") or {}
        net, true = t.get("net_saved_per_rank_seconds"), t.get("true_saved_per_rank_seconds")
        nccl = t.get("nccl_per_rank_seconds")
        if net is None or true is None or nccl is None:
            fail("job totals lack the account or the true saving: %s" % t, out, err)
        scale = max(abs(true), 0.01 * nccl)
        print("account: net saved %+.4f s per rank, true %+.4f s (NCCL %.3f s)" % (net, true, nccl))
        if abs(net - true) > account * scale:
            fail("the account (%+.4f s) is off the true saving (%+.4f s) by more than %g of %.4f s"
                 % (net, true, account, scale), out, err)
    for key, val in expects:
        got = rep.get(key)
        got = json.dumps(got) if not isinstance(got, str) else got
        if got != val:
            fail("report %s = %s, expected %s" % (key, got, val), out, err)
    if max_steps is not None and rep["steps"] > max_steps:
        fail("%d steps, expected at most %d" % (rep["steps"], max_steps), out, err)
    if div_min is None:
        if rep["divergent_decisions"] != 0:
            fail("divergent_decisions = %d" % rep["divergent_decisions"], out, err)
    elif rep["divergent_decisions"] < div_min:
        fail("divergent_decisions = %d < %d" % (rep["divergent_decisions"], div_min), out, err)
    if err_min is None:
        if rep["plugin_errors"] != 0:
            fail("plugin_errors = %d" % rep["plugin_errors"], out, err)
    elif rep["plugin_errors"] < err_min:
        fail("plugin_errors = %d < %d" % (rep["plugin_errors"], err_min), out, err)
    if not rep["workloads"]:
        fail("no workloads in the report", out, err)
    for w in rep["workloads"]:
        for key in ("collective", "bytes", "state", "speedup", "final_over_oracle",
                    "calls_to_converge"):
            if key not in w:
                fail("workload lacks " + key, out, err)
        desc = "%s %s %d B comm %d" % (w["workload"], w["collective"], w["bytes"], w["comm"])
        if w["calls"] <= 0:
            fail(desc + ": no calls", out, err)
        if converged and w["state"] != "converged":
            fail(desc + ": state " + w["state"], out, err)
        if min_speedup is not None and (w["speedup"] is None or w["speedup"] < min_speedup):
            fail(desc + ": speedup %s < %s" % (w["speedup"], min_speedup), out, err)
        if w["final_over_oracle"] is not None and w["final_over_oracle"] > 1.0 + 1e-9:
            fail(desc + ": better than the oracle (%s)" % w["final_over_oracle"], out, err)
    if measured:
        reps = rep.get("job_reports") or []
        if not reps or None in reps:
            fail("job reports missing: %d" % len(reps), out, err)
        for j in reps:
            for w in j["workloads"]:
                if not (w["nccl_seconds"] or 0) > 0:
                    fail("rank %d %s %d B: no NCCL time measured (state %s, %d calls)" % (
                        w["rank"], w["collective"], w["bytes"], w["state"], w["calls"]), out, err)
        print("measured: every workload of %d job reports" % len(reps))
    if hosts_match is not None:
        check_hosts_match(cmd, rep, hosts_match, timeout, env, out, err)
    if min_chunked is not None:
        chunked = [w for w in rep["workloads"] if (w.get("final") or {}).get("chunk_log2", 0) != 0]
        if len(chunked) < min_chunked:
            fail("%d workloads run a chunk size other than NCCL's, expected >= %d"
                 % (len(chunked), min_chunked), out, err)
    if want_state is not None:
        def states(node):
            if isinstance(node, dict):
                if isinstance(node.get("state"), str) and "collective" in node:
                    yield node["state"]
                for v in node.values():
                    yield from states(v)
            elif isinstance(node, list):
                for v in node:
                    yield from states(v)
        for part in ("final_states", "job_reports"):
            got = list(states(rep.get(part)))
            print("%s: %d workloads, states %s" % (part, len(got), sorted(set(got))))
            if want_state not in got:
                fail("no workload in %s is %s" % (part, want_state), out, err)
    if churn is not None:
        ch = rep.get("churn")
        if not ch:
            fail("report lacks churn", out, err)
        print("churn: %d cycles, %d segments left, ranks %s" % (
            ch["cycles"], ch["segments_left"], ch["ranks"]))
        if ch["cycles"] < churn:
            fail("%d churn cycles, expected >= %d" % (ch["cycles"], churn), out, err)
        if ch["segments_left"] != 0:
            fail("%d consensus segments left in /dev/shm" % ch["segments_left"], out, err)
        if not ch["ranks"]:
            fail("no rank process measured", out, err)
        for r in ch["ranks"]:
            a, b = r["first"], r["last"]
            for key in ("shm_maps", "fds", "threads"):
                if a[key] != b[key]:
                    fail("rank %d: %s %d after the warm-up churns, %d at the end"
                         % (r["rank"], key, a[key], b[key]), out, err)
            if not ch.get("rss_meaningful", True):
                print("rank %d: RSS bound not checked (an ASan build: its quarantine holds "
                      "freed memory; LeakSanitizer checks leaks)" % r["rank"])
            else:
                check_rss_marks(r, out, err)
    if sampled_from is not None:
        rows = [w for r in rep.get("job_reports") or [] for w in r["workloads"]]
        if not rows:
            fail("no job report rows", out, err)
        big = [w for w in rows if w["calls"] >= sampled_from]
        dry = [w for w in big if w.get("nccl_seconds") is None]
        print("%d workload rows with >= %d calls, %d without samples" % (len(big), sampled_from,
                                                                         len(dry)))
        for w in dry:
            print("  no samples: rank %d %s %d bytes (%s, %d calls)" % (
                w["rank"], w["collective"], w["bytes"], w["state"], w["calls"]))
        if not big or dry:
            fail("workloads of >= %d calls without samples" % sampled_from, out, err)
        # one still waiting for the budget says for how many more calls, and
        # what they pay for
        mute = [w for w in big if w["state"] in ("waiting-budget", "paused")
                and not (w.get("budget_wait_calls") and w.get("budget_wait_for"))]
        print("%d of them waiting for the budget, %d without the calls they wait for or "
              "what those pay for" % (
                  sum(w["state"] in ("waiting-budget", "paused") for w in big), len(mute)))
        if mute:
            fail("a workload waits for the budget and its report does not say how long or "
                 "for what", out, err)
    if leaves_by is not None:
        check_leaves_waiting(trace_dir, rep, sampled_from or 1, leaves_by, out, err)
    if max_retunes is not None:
        rows = [w for r in rep.get("job_reports") or [] for w in r["workloads"]
                if w.get("rank") == 0]
        if not rows:
            fail("no job report rows of rank 0", out, err)
        n = sum(w.get("retunes") or 0 for w in rows)
        for w in rows:
            if w.get("retunes"):
                print("  %s %d bytes: %d re-tunes, the latest on %s" % (
                    w["collective"], w["bytes"], w["retunes"], w.get("retune_cause")))
        print("%d re-tunes in all (at most %d)" % (n, max_retunes))
        if n > max_retunes:
            fail("%d re-tunes, more than %d" % (n, max_retunes), out, err)
    if min_captured is not None:
        cap = sum(w["captured_calls"] for w in rep["workloads"])
        bad = sum(w["captured_exploratory"] for w in rep["workloads"])
        print("captured calls: %d, of which exploratory: %d" % (cap, bad))
        if cap < min_captured:
            fail("%d captured calls, expected >= %d" % (cap, min_captured), out, err)
        if bad:
            fail("%d captured calls ran an exploratory candidate" % bad, out, err)
    if min_tuned is not None:
        tuned = [w for w in rep["workloads"] if w["decision_changes"] > 0]
        if len(tuned) < min_tuned:
            fail("%d workloads changed their decision, expected >= %d: the plugin did not tune "
                 "(no samples?)" % (len(tuned), min_tuned), out, err)
        best = max(w["speedup"] for w in rep["workloads"])
        print("tuned workloads: %d, best speedup %.3f" % (len(tuned), best))
    if fake_out:
        try:
            with open(fake_out) as f:
                rows = [dict(kv.split("=") for kv in l.split()) for l in f if l.strip()]
        except OSError as e:
            fail("fake plugin summary: %s" % e, out, err)
        want = rep["ranks"] * rep["comms"]
        if len(rows) != want:
            fail("fake plugin finalized %d contexts, expected %d" % (len(rows), want), out, err)
        calls = sum(int(r["calls"]) for r in rows)
        if calls != rep["calls_per_rank"] * rep["ranks"]:
            fail("fake plugin saw %d getCollInfo calls, report says %d x %d" % (
                calls, rep["calls_per_rank"], rep["ranks"]), out, err)
        for r in rows:
            if int(r["violations"]) and want_exit == 0:
                fail("ABI violations seen by the fake plugin: %s" % r, out, err)
            if want_exit == 0 and int(r["coll"]) != int(r["calls"]):
                fail("Coll events %s != calls %s" % (r["coll"], r["calls"]), out, err)
            if fake_overlap is not None and int(r["overlap_max"]) != fake_overlap:
                fail("feed overlap %s, expected %d" % (r["overlap_max"], fake_overlap), out, err)
            if want_exit == 0 and int(r["kch"]) < int(r["calls"]):
                fail("KernelCh events %s < calls %s" % (r["kch"], r["calls"]), out, err)
        os.unlink(fake_out)
    print("ok")


if __name__ == "__main__":
    main(sys.argv[1:])
