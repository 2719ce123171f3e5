# SSE with curl: events and a heartbeat arrive, data lines are JSON per
# docs/api.md; a client that disconnects (or is killed) leaves the server
# serving; many streams opening and vanishing leave no trace.
source "$(dirname "$0")/lib.sh"
need curl
start_fixture --interval-ms 200

# 7 s: several events and at least one heartbeat (every 5 s of silence; the
# heartbeat timer counts from the last write, so events must pause: a second
# fixture without events checks the heartbeat).
curl -s -N --max-time 3 -H 'Accept: text/event-stream' "$BASE/api/v1/events" >"$TMP/events.txt" || true
grep -q '^: connected' "$TMP/events.txt" || fail "no stream preamble: $(head -c 300 "$TMP/events.txt")"
n=$(grep -c '^event: \(sample\|decision\)$' "$TMP/events.txt" || true)
[ "$n" -ge 5 ] || fail "only $n events in 3 s at 5/s"
grep -q '^event: decision$' "$TMP/events.txt" || fail "no decision event"
python3 - "$TMP/events.txt" <<'PY' || fail "event payloads"
import json, sys
lines = open(sys.argv[1]).read().split("\n")
datas = [l[6:] for l in lines if l.startswith("data: ")]
assert datas, "no data lines"
steps = []
for d in datas:
    e = json.loads(d)
    for k in ("comm", "rank", "collective", "bytes", "state", "step", "candidate", "best", "busbw", "overlap", "speedup"):
        assert k in e, (k, e)
    assert e["collective"] == "AllReduce" and e["bytes"] == 33554432, e
    steps.append(e["step"])
assert steps == sorted(steps) and len(set(steps)) == len(steps), steps
PY
alive
[ "$(curl -s --max-time 5 "$BASE/healthz")" = ok ] || fail "not serving after a client left"

# A client killed mid-stream.
curl -s -N "$BASE/api/v1/events" >/dev/null &
CPID=$!; PIDS+=("$CPID")
sleep 0.5; kill -KILL "$CPID"; wait "$CPID" 2>/dev/null || true
[ "$(curl -s --max-time 5 "$BASE/healthz")" = ok ] || fail "not serving after a killed client"

# 40 streams (more than the cap of 16) opened and dropped at once.
CURLS=()
for i in $(seq 1 40); do
  curl -s -N --max-time 1 "$BASE/api/v1/events" >/dev/null 2>&1 &
  CURLS+=("$!"); PIDS+=("$!")
done
for p in "${CURLS[@]}"; do wait "$p" 2>/dev/null || true; done
sleep 0.5
curl -s -N --max-time 1 "$BASE/api/v1/events" >"$TMP/again.txt" || true
grep -q '^: connected' "$TMP/again.txt" || fail "streams not released after clients left"
stop_fixture

# Heartbeat: no events, so the stream is silent but for ': heartbeat'.
start_fixture --interval-ms 0
curl -s -N --max-time 7 "$BASE/api/v1/events" >"$TMP/hb.txt" || true
grep -q '^: heartbeat$' "$TMP/hb.txt" || fail "no heartbeat within 7 s: $(cat "$TMP/hb.txt")"
if grep -q '^event:' "$TMP/hb.txt"; then fail "events while none were published"; fi
# Stop while a stream is open: prompt, and the client sees the end.
curl -s -N --max-time 20 "$BASE/api/v1/events" >/dev/null &
CPID=$!; PIDS+=("$CPID")
sleep 0.5
t0=$(date +%s%N)
stop_fixture 3
rc=0; wait "$CPID" || rc=$?
dt=$(( ($(date +%s%N) - t0) / 1000000 ))
[ "$rc" -ne 28 ] || fail "stream was not closed by the stop (curl timed out)"
[ "$dt" -lt 3000 ] || fail "stop + stream close took ${dt} ms"
echo "sse: all checks passed (stop with a stream open: ${dt} ms)"
