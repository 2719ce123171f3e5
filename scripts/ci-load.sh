#!/usr/bin/env bash
# Load test (docs/hardening.md): autoccl-sim with 8 ranks x 32 communicators
# driving the real plugin for at least 10^6 getCollInfo calls while every
# rank's endpoint is scraped in a loop. Fails on: memory growth (per rank
# process, mean VmRSS of the last quarter of the run > 1.10 x the first
# quarter's), any divergent decision or plugin error reported by the
# simulator, any failed scrape, fewer calls than asked.
#
# usage: scripts/ci-load.sh [BUILD_DIR]   (default: build)
# env:   ACL_LOAD_DURATION (s, default 30), ACL_LOAD_MIN_CALLS (default 1000000),
#        ACL_LOAD_RANKS (8), ACL_LOAD_COMMS (32), ACL_LOAD_MAX_GROWTH (1.10)
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-build}
case "$BUILD" in /*) ;; *) BUILD="$ROOT/$BUILD" ;; esac
SIM="$BUILD/sim/autoccl-sim"
DUR=${ACL_LOAD_DURATION:-30}
MIN_CALLS=${ACL_LOAD_MIN_CALLS:-1000000}
RANKS=${ACL_LOAD_RANKS:-8}
COMMS=${ACL_LOAD_COMMS:-32}
MAX_GROWTH=${ACL_LOAD_MAX_GROWTH:-1.10}

if [ ! -x "$SIM" ]; then
  echo "ci-load: $SIM is missing: build it first (meson compile -C $BUILD)" >&2
  exit 2
fi
for t in curl python3; do
  command -v "$t" >/dev/null || { echo "ci-load: $t is required" >&2; exit 2; }
done

WORK=$(mktemp -d /tmp/acl-load.XXXXXX)
SIM_PID=
cleanup() {
  [ -n "$SIM_PID" ] && kill "$SIM_PID" 2>/dev/null
  wait 2>/dev/null
  rm -rf "$WORK"
}
trap cleanup EXIT

# A free base port with RANKS free ports above it (one endpoint per rank
# process): ask the kernel for one, check the range.
PORT=$(python3 - "$RANKS" <<'PY'
import socket, sys, random
n = int(sys.argv[1])
for _ in range(200):
    base = random.randint(20000, 60000 - n)
    socks = []
    try:
        for p in range(base, base + n):
            s = socket.socket(); s.bind(("127.0.0.1", p)); socks.append(s)
    except OSError:
        continue
    finally:
        for s in socks: s.close()
    print(base); break
PY
)
[ -n "$PORT" ] || { echo "ci-load: no free port range" >&2; exit 2; }

echo "ci-load: $RANKS ranks x $COMMS comms for ${DUR}s, endpoints on $PORT..$((PORT + RANKS - 1))"
"$SIM" --ranks "$RANKS" --comms "$COMMS" --duration "$DUR" --port "$PORT" --json -q \
  >"$WORK/sim.out" 2>"$WORK/sim.err" &
SIM_PID=$!
T0=$(date +%s.%N)

# Wait for every endpoint (bounded).
for i in $(seq 0 $((RANKS - 1))); do
  ok=0
  for _ in $(seq 1 100); do
    if curl -sf --max-time 2 "http://127.0.0.1:$((PORT + i))/healthz" >/dev/null; then ok=1; break; fi
    kill -0 "$SIM_PID" 2>/dev/null || break
    sleep 0.1
  done
  if [ $ok != 1 ]; then
    echo "ci-load: FAIL: endpoint $((PORT + i)) never came up" >&2
    cat "$WORK/sim.err" >&2
    exit 1
  fi
done

# Memory sampler: VmRSS (kB) of every rank process (the simulator's
# children) once a second: lines "elapsed pid kB".
(
  while kill -0 "$SIM_PID" 2>/dev/null; do
    now=$(date +%s.%N)
    for pid in $(pgrep -P "$SIM_PID"); do
      rss=$(awk '/^VmRSS:/ {print $2}' "/proc/$pid/status" 2>/dev/null)
      [ -n "$rss" ] && echo "$(echo "$now - $T0" | bc) $pid $rss"
    done
    sleep 1
  done
) >"$WORK/rss.txt" &
SAMPLER=$!

# Scraper: /metrics and /api/v1/state of every rank, round robin, until two
# seconds before the run ends (ranks then finalize and close their
# endpoints, which is not a dropped scrape). Every curl must succeed.
STOP_AT=$(echo "$T0 + $DUR - 2" | bc)
ok=0 bad=0
while [ "$(echo "$(date +%s.%N) < $STOP_AT" | bc)" = 1 ] && kill -0 "$SIM_PID" 2>/dev/null; do
  for i in $(seq 0 $((RANKS - 1))); do
    for path in /metrics /api/v1/state; do
      if curl -sf --max-time 5 -o /dev/null "http://127.0.0.1:$((PORT + i))$path"; then
        ok=$((ok + 1))
      else
        bad=$((bad + 1))
        echo "ci-load: scrape failed: http://127.0.0.1:$((PORT + i))$path" >&2
      fi
    done
  done
done

wait "$SIM_PID"
SIM_RC=$?
SIM_PID=
wait "$SAMPLER" 2>/dev/null

python3 - "$WORK/sim.out" "$WORK/rss.txt" "$SIM_RC" "$ok" "$bad" "$MIN_CALLS" "$MAX_GROWTH" \
  "$RANKS" <<'PY'
import json, sys
out, rss_path, rc, ok, bad, min_calls, max_growth, ranks = sys.argv[1:]
rc, ok, bad, min_calls, ranks = int(rc), int(ok), int(bad), int(min_calls), int(ranks)
max_growth = float(max_growth)
fails = []
lines = [l for l in open(out).read().splitlines() if l.strip()]
try:
    rep = json.loads(lines[-1])
except Exception:
    rep = None
    fails.append("simulator printed no JSON report (exit %d)" % rc)
if rc != 0:
    fails.append("simulator exited %d" % rc)
if rep:
    total = rep.get("calls_per_rank", 0) * rep.get("ranks", 0)
    print("ci-load: %d getCollInfo calls (%d per rank) in %.1f s, divergent %d, plugin errors %d"
          % (total, rep.get("calls_per_rank", 0), rep.get("wall_seconds", 0),
             rep.get("divergent_decisions", -1), rep.get("plugin_errors", -1)))
    if total < min_calls:
        fails.append("only %d calls (want >= %d)" % (total, min_calls))
    if rep.get("divergent_decisions") != 0:
        fails.append("divergent decisions: %s" % rep.get("divergent_decisions"))
    if rep.get("log_length_mismatch", 0) != 0:
        fails.append("decision log length mismatch: %s" % rep.get("log_length_mismatch"))
    if rep.get("plugin_errors") != 0:
        fails.append("plugin errors: %s" % rep.get("plugin_errors"))
print("ci-load: scrapes ok %d, failed %d" % (ok, bad))
if ok == 0:
    fails.append("no scrape succeeded")
if bad:
    fails.append("%d scrapes failed" % bad)
series = {}
for l in open(rss_path):
    t, pid, kb = l.split()
    series.setdefault(pid, []).append((float(t), int(kb)))
if len(series) < ranks:
    fails.append("RSS sampled for %d processes, expected %d" % (len(series), ranks))
for pid, s in sorted(series.items()):
    v = [kb for _, kb in s]
    if len(v) < 8:
        fails.append("pid %s: only %d RSS samples" % (pid, len(v)))
        continue
    q = len(v) // 4
    first, last = sum(v[:q]) / q, sum(v[-q:]) / q
    growth = last / first
    print("ci-load: pid %s RSS first quarter %.0f kB, last quarter %.0f kB (x%.3f, %d samples)"
          % (pid, first, last, growth, len(v)))
    if growth > max_growth:
        fails.append("pid %s memory grew x%.3f (> x%.2f)" % (pid, growth, max_growth))
for f in fails:
    print("ci-load: FAIL: " + f, file=sys.stderr)
print("ci-load: %s" % ("FAIL" if fails else "PASS"))
sys.exit(1 if fails else 0)
PY
