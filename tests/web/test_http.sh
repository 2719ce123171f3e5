# Every route with curl against the real server: status, content type,
# bodies, HEAD, 404, 405 with Allow, query strings, the state JSON schema.
source "$(dirname "$0")/lib.sh"
need curl
start_fixture --interval-ms 100

h() { curl -s -D - -o /dev/null --max-time 5 "$@"; }
expect_code() { local got; got=$(curl_code "$2" "${@:3}"); [ "$got" = "$1" ] || fail "$2 ${*:3}: HTTP $got, expected $1"; }

expect_code 200 "$BASE/healthz"
[ "$(curl -s --max-time 5 "$BASE/healthz")" = "ok" ] || fail "/healthz body"
h "$BASE/metrics" | grep >/dev/null -i '^content-type: text/plain; version=0.0.4; charset=utf-8' || fail "/metrics content type"
h "$BASE/api/v1/state" | grep >/dev/null -i '^content-type: application/json' || fail "/api/v1/state content type"
h "$BASE/" | grep >/dev/null -i '^content-type: text/html; charset=utf-8' || fail "/ content type"
h "$BASE/" | grep >/dev/null -i "^content-security-policy: default-src 'none'" || fail "/ has no CSP"
h "$BASE/app.js" | grep >/dev/null -i '^content-type: text/javascript' || fail "/app.js content type"
h "$BASE/style.css" | grep >/dev/null -i '^content-type: text/css' || fail "/style.css content type"
curl -s --max-time 5 "$BASE/" | grep >/dev/null 'id="trajectory"' || fail "dashboard body"
curl -s --max-time 5 "$BASE/metrics" | grep >/dev/null '^autoccl_build_info{version="' || fail "metrics body"
expect_code 200 "$BASE/metrics?foo=bar&x"
expect_code 200 "$BASE/api/v1/state?pretty=1"

# HEAD: headers only, same length as GET would send.
hd=$(curl -s -I --max-time 5 "$BASE/healthz")
echo "$hd" | grep >/dev/null '^HTTP/1.1 200' || fail "HEAD /healthz: $hd"
echo "$hd" | grep >/dev/null -i '^content-length: 3' || fail "HEAD /healthz length: $hd"
[ "$(curl -s -I --max-time 5 -o /dev/null -w '%{size_download}' "$BASE/metrics")" = 0 ] || fail "HEAD /metrics sent a body"
expect_code 200 "$BASE/api/v1/events" -I

# Errors.
for p in /nope /metrics/ /api/v1 /api/v1/state/x /../etc/passwd /index.htm; do
  expect_code 404 "$BASE$p" --path-as-is
done
[ "$(curl -s --max-time 5 "$BASE/nope")" = "not found" ] || fail "404 body"
for m in POST PUT DELETE PATCH OPTIONS TRACE; do
  for p in /metrics /api/v1/state /healthz /; do
    out=$(curl -s -D - -o /dev/null --max-time 5 -X "$m" "$BASE$p")
    # The status line without a pipe: under pipefail, `echo | head -1` fails
    # when head exits before echo's second write (SIGPIPE).
    status=${out%%$'\n'*}
    [[ $status == *" 405 "* ]] || fail "$m $p: $status"
    echo "$out" | grep >/dev/null -i '^allow: GET, HEAD' || fail "$m $p: no Allow header"
  done
done
expect_code 405 "$BASE/metrics" --data 'x=1'

# State JSON follows docs/api.md.
curl -s --max-time 5 "$BASE/api/v1/state" >"$TMP/state.json"
python3 - "$TMP/state.json" <<'PY' || fail "state JSON schema"
import json, math, sys
s = json.load(open(sys.argv[1]), parse_constant=lambda c: sys.exit(f"non-finite number {c}"))
assert s["version"] == 1 and s["host"] == "fixture-node", s
for k in ("pid", "local_rank", "mode", "uptime_seconds", "profiler", "communicators", "workloads", "workloads_truncated"):
    assert k in s, k
assert s["profiler"]["sample_latency_seconds"] is None
comms = {c["id"]: c for c in s["communicators"]}
assert len(comms) == 4 and any(c["rank"] is None for c in comms.values())
ws = s["workloads"]
assert len(ws) == 8, len(ws)
keys = {"comm", "rank", "collective", "bytes", "pipe_ops", "state", "subspace", "candidate", "best", "baseline",
        "baseline_seconds", "best_seconds", "speedup", "busbw", "overlap", "candidates_evaluated",
        "calls_to_converge", "retunes", "calls", "bytes_total", "trajectory"}
states = set()
for w in ws:
    assert keys <= set(w), keys - set(w)
    assert w["comm"] in comms
    states.add(w["state"])
    for p in w["trajectory"]:
        assert set(p) == {"step", "algo", "proto", "channels", "chunk_log2", "busbw", "overlap"}, p
assert states == {"warmup", "baseline", "exploring", "converged", "retuning", "disabled", "waiting-budget"}, states
wait = next(w for w in ws if w["state"] == "waiting-budget")
assert wait["budget_wait_calls"] == 975 and wait["budget_wait_for"] == "first-events", wait
assert all(w["budget_wait_for"] is None for w in ws if w is not wait)
warm = next(w for w in ws if w["state"] == "warmup")
assert warm["busbw"] is None and warm["best"] is None and warm["speedup"] is None and warm["subspace"] is None
ex = ws[0]
assert ex["state"] == "exploring" and len(ex["trajectory"]) >= 18 and ex["speedup"] > 1.0, ex["speedup"]
assert ex["subspace"] == ex["candidate"]["algo"] + "/" + ex["candidate"]["proto"]
PY
alive
stop_fixture
echo "http: all checks passed"
