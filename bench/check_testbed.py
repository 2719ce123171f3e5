#!/usr/bin/env python3
"""autoccl-bench --ranks-per-gpu K under --fake: ranks share GPUs (the record
says ranks_per_gpu, gpus, mps, launch, reps, warmup, iters, env, also in the
compare record and through the compare driver's children); K > 1 refuses an
NCCL older than 2.30.3 and NCCL_MULTI_RANK_GPU_ENABLE=0 with the reason, sets
NCCL_MULTI_RANK_GPU_ENABLE=1 itself, and warns loudly when one process per
rank shares a GPU without an MPS daemon (none when its control pipe exists);
the record says which CPUs the bench could run on (cpus, what taskset gave);
--mps start without nvidia-cuda-mps-control on PATH fails clearly; bad
combinations are usage errors; scripts/gpu-summary.py gives a cost record
(default against table, one size) its bootstrap verdict against 1 us."""
import json
import os
import socket
import shutil
import subprocess
import sys
import tempfile

bench = sys.argv[1]
fails = []


def check(cond, what):
    if not cond:
        fails.append(what)


def run(*args, env=None):
    e = {k: v for k, v in os.environ.items()
         if not k.startswith(("NCCL_", "AUTOCCL_", "CUDA_MPS_"))}
    e.update(env or {})
    return subprocess.run([bench, *args], capture_output=True, text=True, timeout=120, env=e)


def last_json(r):
    try:
        return json.loads(r.stdout.strip().splitlines()[-1])
    except (IndexError, ValueError):
        return {}


small = ("--fake", "-b", "64K", "-e", "1M", "-f", "4", "-w", "3", "-n", "4", "--json", "-q")
nomps = {"CUDA_MPS_PIPE_DIRECTORY": tempfile.mkdtemp(prefix="acl-nomps-")}

# one process, 4 ranks on 2 GPUs: the record says so
r = run(*small, "--single", "-g", "4", "--ranks-per-gpu", "2", env=nomps)
d = last_json(r)
check(r.returncode == 0, "single K=2 exit %d: %s" % (r.returncode, r.stderr[-300:]))
for k, v in (("ranks_per_gpu", 2), ("gpus", 2), ("nranks", 4), ("launch", "single"),
             ("mps", "off"), ("reps", 1), ("warmup", 3), ("iters", 4)):
    check(d.get(k) == v, "run record %s = %r, expected %r" % (k, d.get(k), v))
check("nccl_version" in d, "run record lacks nccl_version")
# where its processes could run: the affinity it started with, narrowed by taskset
mine = os.sched_getaffinity(0)
check(isinstance(d.get("cpus"), str) and d["cpus"] != "", "run record cpus = %r" % d.get("cpus"))
if len(mine) > 1 and shutil.which("taskset"):
    one = min(mine)
    r = subprocess.run(["taskset", "-c", str(one), bench, *small, "--single", "-g", "2"],
                       capture_output=True, text=True, timeout=120)
    check(last_json(r).get("cpus") == str(one),
          "under taskset -c %d the record says cpus %r" % (one, last_json(r).get("cpus")))
    pair = sorted(mine)[:2]
    r = subprocess.run(["taskset", "-c", "%d,%d" % tuple(pair), bench, *small, "--single", "-g", "2"],
                       capture_output=True, text=True, timeout=120)
    want = "%d-%d" % tuple(pair) if pair[1] == pair[0] + 1 else "%d,%d" % tuple(pair)
    check(last_json(r).get("cpus") == want,
          "under taskset -c %d,%d the record says cpus %r, wanted %r" % (
              pair[0], pair[1], last_json(r).get("cpus"), want))
check(d.get("env", {}).get("NCCL_MULTI_RANK_GPU_ENABLE") == "1",
      "K > 1 sets NCCL_MULTI_RANK_GPU_ENABLE=1 and the record's env shows it: %s" % d.get("env"))
check("WARNING" not in r.stderr, "one process needs no MPS: %s" % r.stderr[-300:])

# env carries the NCCL_*/AUTOCCL_* variables set, and nothing else
r = run(*small, "-g", "2", env={"NCCL_NVLS_ENABLE": "0", "AUTOCCL_LOG": "warn", "OTHER_X": "1"})
d = last_json(r)
check(d.get("env") == {"NCCL_NVLS_ENABLE": "0", "AUTOCCL_LOG": "warn"}, "env %s" % d.get("env"))
check(d.get("ranks_per_gpu") == 1 and d.get("gpus") == 2, "K=1: one GPU per rank: %s" % d)

# one process per rank sharing a GPU without MPS: loud warning, record says mps off
r = run(*small, "--procs", "-g", "2", "--ranks-per-gpu", "2", env=nomps)
check(r.returncode == 0, "procs K=2 exit %d" % r.returncode)
check("WARNING" in r.stderr and "MPS" in r.stderr and "context" in r.stderr,
      "no MPS: warning expected, got %r" % r.stderr[-300:])
check(last_json(r).get("mps") == "off", "mps off expected")

# ... with an MPS control pipe: no warning, mps on
pipe_dir = tempfile.mkdtemp(prefix="acl-mps-")
os.mkfifo(os.path.join(pipe_dir, "control"))
r = run(*small, "--procs", "-g", "2", "--ranks-per-gpu", "2",
        env={"CUDA_MPS_PIPE_DIRECTORY": pipe_dir})
check("WARNING" not in r.stderr, "MPS pipe present: no warning, got %r" % r.stderr[-300:])
check(last_json(r).get("mps") == "on", "mps on expected: %s" % last_json(r).get("mps"))

# ... a listening control socket (as the daemon makes): mps on; the socket a
# stopped daemon leaves behind, which no one listens on: the no-MPS warning
# says so, and the record says mps off
sock_dir = tempfile.mkdtemp(prefix="acl-mps-sock-")
ls = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
ls.bind(os.path.join(sock_dir, "control"))
ls.listen(4)
r = run(*small, "--procs", "-g", "2", "--ranks-per-gpu", "2",
        env={"CUDA_MPS_PIPE_DIRECTORY": sock_dir})
check("WARNING" not in r.stderr, "listening MPS socket: no warning, got %r" % r.stderr[-300:])
check(last_json(r).get("mps") == "on", "listening socket: mps on expected: %s" % last_json(r).get("mps"))
ls.close()
check(os.path.exists(os.path.join(sock_dir, "control")), "the closed socket stays, as a stopped daemon's")
r = run(*small, "--procs", "-g", "2", "--ranks-per-gpu", "2",
        env={"CUDA_MPS_PIPE_DIRECTORY": sock_dir})
check("WARNING" in r.stderr and "no daemon listens" in r.stderr,
      "stale MPS socket: warning naming it expected, got %r" % r.stderr[-300:])
check(last_json(r).get("mps") == "off", "stale socket: mps off expected: %s" % last_json(r).get("mps"))

# NCCL older than 2.30.3 with K > 1: refused, with the reason
r = run(*small, "-g", "2", "--ranks-per-gpu", "2", "--fake-nccl-version", "22803", env=nomps)
check(r.returncode == 1, "old NCCL: exit %d, expected 1" % r.returncode)
check("2.28.3" in r.stderr and "2.30.3" in r.stderr, "old NCCL message: %r" % r.stderr)
r = run(*small, "-g", "2", "--ranks-per-gpu", "2", "--fake-nccl-version", "23003", env=nomps)
check(r.returncode == 0, "NCCL 2.30.3 is enough: exit %d %s" % (r.returncode, r.stderr[-200:]))
check(last_json(r).get("nccl_version") == 23003, "fake NCCL version in the record")
r = run(*small, "-g", "2", "--fake-nccl-version", "22803")
check(r.returncode == 0, "K=1 runs on any NCCL: exit %d" % r.returncode)
r = run(*small, "-g", "2", "--ranks-per-gpu", "2", env=dict(nomps, NCCL_MULTI_RANK_GPU_ENABLE="0"))
check(r.returncode == 2 and "NCCL_MULTI_RANK_GPU_ENABLE=1" in r.stderr,
      "NCCL_MULTI_RANK_GPU_ENABLE=0: exit %d %r" % (r.returncode, r.stderr))

# --mps start without the MPS tool: a clear error, nothing run
r = run(*small, "--procs", "-g", "2", "--ranks-per-gpu", "2", "--mps", "start",
        env={"PATH": "/nonexistent", "CUDA_MPS_PIPE_DIRECTORY": tempfile.mkdtemp(),
             "CUDA_MPS_LOG_DIRECTORY": tempfile.mkdtemp()})
check(r.returncode == 1 and "nvidia-cuda-mps-control" in r.stderr,
      "--mps start without the tool: exit %d %r" % (r.returncode, r.stderr))
check(not r.stdout.strip(), "--mps start failure runs nothing: %r" % r.stdout[:200])

# the compare driver: its record and its children carry K
r = run("--fake", "-g", "2", "--ranks-per-gpu", "2", "--single", "-b", "64K", "-e", "256K",
        "-f", "4", "-w", "5", "-n", "3", "--compare", "default", "--reps", "2",
        "--fake-nccl-version", "23007", "--json", "-q", env=nomps)
d = last_json(r)
check(r.returncode == 0, "compare exit %d %s" % (r.returncode, r.stderr[-300:]))
for k, v in (("ranks_per_gpu", 2), ("gpus", 1), ("launch", "single"), ("mps", "off"),
             ("reps", 2), ("warmup", 5), ("iters", 3), ("nccl_version", "2.30.7")):
    check(d.get(k) == v, "compare record %s = %r, expected %r" % (k, d.get(k), v))
check("env" in d, "compare record lacks env")
r = run("--fake", "-g", "2", "--ranks-per-gpu", "2", "-b", "64K", "-e", "64K", "--compare",
        "default", "--reps", "1", "-w", "2", "-n", "2", "--fake-nccl-version", "22803", "-q",
        env=nomps)
check(r.returncode != 0 and "2.30.3" in r.stderr, "compare with old NCCL refused: %d %r"
      % (r.returncode, r.stderr[-300:]))

# bad combinations
for args, what in ((("-g", "3", "--ranks-per-gpu", "2"), "multiple of"),
                   (("-g", "1", "--ranks-per-gpu", "2"), "more than"),
                   (("--ranks-per-gpu", "0"), "--ranks-per-gpu"),
                   (("--mps", "maybe"), "--mps")):
    r = run("--fake", *args)
    check(r.returncode == 2 and what in r.stderr, "%s: exit %d %r" % (args, r.returncode, r.stderr))

# gpu-summary.py on synthetic cost records: met, missed and not settled by the
# bootstrap interval, the paired median, a failed rep dropped, reproducible
summary = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scripts", "gpu-summary.py")


def cost_summary(default, table, modes=("default", "table"), copies=1):
    reps = {"default": default, "table": table, "autoccl": default}
    d = {"kind": "compare", "coll": "all_reduce", "launch": "single", "reps": len(default),
         "warmup": 1000, "iters": 10000, "sizes": [65536],
         "modes": {m: {"env": [], "results": [{"size": 65536, "time_us": 20.0, "time_incl_us": 21.0,
                                               "reps_time_us": reps[m]}]} for m in modes}}
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as f:
        f.write((json.dumps(d) + "\n") * copies)
    r = subprocess.run([sys.executable, summary, f.name], capture_output=True, text=True, timeout=60)
    os.unlink(f.name)
    check(r.returncode == 0, "gpu-summary.py exit %d: %s" % (r.returncode, r.stderr[-300:]))
    return r.stdout


base = [20.0, 20.1, 19.9, 20.2, 19.8, 20.0, 20.1, 19.9, 20.05]
out = cost_summary(base, [t + 0.3 for t in base])
check("**met**" in out and "Paired (rep r of table - rep r of default, 9 pairs): median +0.30 us" in out,
      "table 0.3 us over default: met, paired +0.30 expected:\n" + out)
check(out == cost_summary(base, [t + 0.3 for t in base]), "the bootstrap must be reproducible")
out = cost_summary([15.001] * 5, [16.001] * 5)  # 16.001 - 15.001 > 1.0 in floats
check("[+1.00, +1.00]" in out and "**met**" in out, "exactly 1.0 us over default meets the target:\n" + out)
out = cost_summary(base, [t + 5 for t in base])
check("table - default: +5.00 us" in out and "**missed**" in out, "5 us over default: missed:\n" + out)
out = cost_summary([20, 28, 20, 28, 20, 28, 20], [28, 20, 28, 20, 28, 20, 28])
check("**not settled**" in out, "bimodal processes: not settled:\n" + out)
out = cost_summary(base[:4] + [None] + base[5:], [t + 0.3 for t in base])
check("| default | 8 |" in out and "8 pairs" in out, "a failed rep (null) is dropped with its pair:\n" + out)
# two kinds of process (fast and slow, in both modes), drawn in other
# proportions by the two modes: pooled, not settled; within each state, met
fast = [19.0 + 0.05 * i for i in range(10)]
slow = [28.0 + 0.05 * i for i in range(10)]
# (each mode's reps of a state centred alike: fast[3], slow[3])
out = cost_summary(fast[:7] + slow[2:5], [t + 0.3 for t in fast[2:5] + slow[:7]])
check("**not settled**" in out and "Two states" in out and "**met** within the states" in out
      and "fast (7 / 3 reps): +0.30 us" in out and "slow (3 / 7 reps): +0.30 us" in out,
      "two states, +0.3 us within each:\n" + out)
out = cost_summary(fast[:7] + slow[2:5], [t + 3 for t in fast[2:5] + slow[:7]])
check("**missed** within the states" in out, "two states, +3 us within each: missed:\n" + out)
out = cost_summary([13.0 + 0.2 * i for i in range(20)], [13.1 + 0.2 * i for i in range(20)])
check("Two states" not in out, "an even spread (13-17 us) is one state:\n" + out)
out = cost_summary(base, [t + 0.3 for t in base], copies=3)
check("3 records pooled (27 / 27 reps)" in out, "three cost records of one cell are pooled:\n" + out)
for modes in (("default", "autoccl"), ("default", "autoccl", "table")):
    out = cost_summary(base, base, modes)
    check("| 64K |" in out and "Per-call cost" not in out, "%s is no cost record:\n%s" % (modes, out))

# the PyTorch table: re-tunes from the summary line, else from the launches' job reports
def summary_rows(rows, prefix):
    """gpu-summary.py's table rows for these JSON lines that start with prefix."""
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as f:
        f.write("".join(json.dumps(x) + "\n" for x in rows))
    r = subprocess.run([sys.executable, summary, f.name], capture_output=True, text=True, timeout=60)
    os.unlink(f.name)
    check(r.returncode == 0, "gpu-summary.py exit %d: %s" % (r.returncode, r.stderr[-300:]))
    return [ln for ln in r.stdout.splitlines() if ln.startswith(prefix)]


def torch_summary(rows):
    return summary_rows(rows, "| ddp | autoccl")


step = {"kind": "torch_step", "wrap": "ddp", "mode": "autoccl", "median_step_s": 0.1, "reps": 2,
        "steps": 800, "ratio_vs_nccl": 1.05}
launches = [{"kind": "torch_step_run", "wrap": "ddp", "mode": "autoccl", "reports_by_rank": rb}
            for rb in ([{"rank": 0, "workloads": [{"retunes": 1}, {"retunes": 2}]},
                        {"rank": 1, "workloads": [{"retunes": None}]}],
                       [{"rank": 0, "workloads": [{"retunes": 1}]}])]
row = torch_summary([step] + launches)
check(len(row) == 1 and "| 3 |" in row[0], "re-tunes from the job reports: 3 expected: %s" % row)
row = torch_summary([dict(step, retunes_max=0)] + launches)
check(len(row) == 1 and "| 0 |" in row[0], "the summary line's own figure first: %s" % row)
row = torch_summary([step])
check(len(row) == 1 and "| - |" in row[0].split("1.050")[1], "no reports: none known: %s" % row)


# the overlap table: each autoccl launch against torch.profiler, with the
# plugin's late-record figures where its profiler block has them
def overlap_rows(rows):
    return summary_rows(rows, "| ddp | 1 |")


ov = {"kind": "torch_step_run", "wrap": "ddp", "mode": "autoccl", "rep": 1,
      "torch_exposed_of_comm": 0.5, "autoccl_exposed_share": 0.62, "workload_overlap_gap_max": 0.2,
      "torch_comm_s_by_coll": {"AllReduce": 0.05, "other": 0.01}, "overlap_steps": 5,
      "autoccl_profiler": {"samples": 900, "overlap_late": 40, "overlap_late_seconds": 0.125,
                           "cupti_backed_off": False}}
row = overlap_rows([step, ov, dict(ov, mode="nccl")])
check(len(row) == 1 and "| 12.0 |" in row[0] and "| 40 (0.125) |" in row[0] and "| no |" in row[0]
      and "| 12.0 | 0.200 | 12.0 | 900 |" in row[0],
      "overlap row: gap 12.0 pp, 12 ms of NCCL kernels a step, 40 late samples (0.125 s), "
      "not backed off: %s" % row)
row = overlap_rows([step, dict(ov, autoccl_exposed_share_tail=0.53)])
check(len(row) == 1 and "| 0.620 | 0.530 | 12.0 |" in row[0],
      "overlap row: the last quarter's share beside the run's: %s" % row)
row = overlap_rows([step, dict(ov, workloads_waiting_early=[
    {"collective": "AllGather", "bytes": 250 << 20, "state": "waiting-budget"}])])
check(len(row) == 1 and row[0].endswith("| no | AllGather 250M waiting-budget |"),
      "overlap row: the workloads waiting at 30 %% of the steps: %s" % row)
row = overlap_rows([step, dict(ov, workloads_waiting_early=[])])
check(len(row) == 1 and row[0].endswith("| none |"), "overlap row, none waiting: %s" % row)
row = overlap_rows([step, dict(ov, autoccl_profiler=None, autoccl_exposed_share=None)])
check(len(row) == 1 and row[0].count("| - |") >= 3, "overlap row, plugin figures unknown: %s" % row)

# --help documents it
r = run("--help")
for w in ("--ranks-per-gpu", "--mps", "2.30.3", "ranks_per_gpu"):
    check(w in r.stdout, "--help lacks %s" % w)

for f in fails:
    print("FAIL:", f)
print("%d checks failed" % len(fails))
sys.exit(1 if fails else 0)
