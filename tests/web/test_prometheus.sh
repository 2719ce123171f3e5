# A real Prometheus scrapes the fixture every second (temp config and
# storage, free loopback port); after >= 3 scrapes its query API returns
# autoccl_build_info, and a histogram_quantile over the duration histogram
# gives a finite value.
source "$(dirname "$0")/lib.sh"
need prometheus prometheus
need curl
start_fixture --interval-ms 200
PPORT=$(free_port)
mkdir -p "$TMP/tsdb"
cat >"$TMP/prometheus.yml" <<YML
global:
  scrape_interval: 1s
  scrape_timeout: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: autoccl
    static_configs:
      - targets: ['127.0.0.1:$PORT']
YML
prometheus --config.file="$TMP/prometheus.yml" --storage.tsdb.path="$TMP/tsdb" \
  --web.listen-address="127.0.0.1:$PPORT" --log.level=warn >"$TMP/prom.log" 2>&1 &
PROM=$!; PIDS+=("$PROM")
q() { curl -s --max-time 3 -G "http://127.0.0.1:$PPORT/api/v1/query" --data-urlencode "query=$1" || true; }
ok=0
for i in $(seq 1 60); do
  kill -0 "$PROM" 2>/dev/null || { cat "$TMP/prom.log" >&2; fail "prometheus exited"; }
  n=$(q 'count_over_time(up{job="autoccl"}[1m])' | python3 -c '
import json,sys
try:
    r=json.load(sys.stdin)["data"]["result"]; print(int(float(r[0]["value"][1])) if r else 0)
except Exception: print(0)')
  if [ "$n" -ge 3 ]; then ok=1; break; fi
  sleep 0.5
done
[ "$ok" = 1 ] || { cat "$TMP/prom.log" >&2; fail "fewer than 3 scrapes within 30 s"; }
[ "$(q 'min_over_time(up{job="autoccl"}[1m])' | python3 -c 'import json,sys; print(json.load(sys.stdin)["data"]["result"][0]["value"][1])')" = 1 ] ||
  fail "a scrape failed (up == 0)"
q 'autoccl_build_info' >"$TMP/build.json"
python3 - "$TMP/build.json" <<'PY' || fail "autoccl_build_info query: $(cat "$TMP/build.json")"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["status"] == "success", r
res = r["data"]["result"]
assert len(res) == 1 and res[0]["metric"]["__name__"] == "autoccl_build_info", res
assert res[0]["metric"]["version"] and res[0]["value"][1] == "1", res
print("prometheus: autoccl_build_info", res[0]["metric"])
PY
q 'histogram_quantile(0.9, sum by (le) (rate(autoccl_collective_duration_seconds_bucket{collective="all_reduce",bytes="33554432"}[30s])))' >"$TMP/q.json"
python3 - "$TMP/q.json" <<'PY' || fail "histogram_quantile: $(cat "$TMP/q.json")"
import json, math, sys
res = json.load(open(sys.argv[1]))["data"]["result"]
v = float(res[0]["value"][1])
assert math.isfinite(v) and 0 < v < 1, v
print(f"prometheus: p90 AllReduce 32 MiB duration {v * 1e3:.3f} ms")
PY
# Every query of docs/grafana-dashboard.json evaluates on real data.
python3 - "$HERE/../../docs/grafana-dashboard.json" "$PPORT" <<'PY' || fail "grafana dashboard queries"
import json, sys, urllib.parse, urllib.request
d = json.load(open(sys.argv[1]))
port = sys.argv[2]
def q(expr):
    for k, v in (("$instance", ".*"), ("$comm", ".*"), ("$collective", ".*"), ("$__rate_interval", "30s")):
        expr = expr.replace(k, v)
    url = f"http://127.0.0.1:{port}/api/v1/query?" + urllib.parse.urlencode({"query": expr})
    r = json.load(urllib.request.urlopen(url, timeout=5))
    assert r["status"] == "success", (expr, r)
    return r["data"]["result"]
n = 0
for p in d["panels"]:
    for t in p.get("targets", []):
        res = q(t["expr"])
        assert res, f"panel {p['title']!r}: no data for {t['expr']}"
        n += 1
state = next(p for p in d["panels"] if p["title"] == "Tuner state")["targets"][0]["expr"]
codes = {(r["metric"]["collective"], r["metric"]["bytes"]): r["value"][1] for r in q(state)}
assert codes[("all_reduce", "33554432")] == "2", codes   # exploring
assert codes[("reduce_scatter", "65536")] == "0", codes  # warmup
assert codes[("all_gather", "4194304")] == "3", codes    # converged
print(f"prometheus: {n} Grafana panel queries return data; state codes {sorted(set(codes.values()))}")
PY
kill -TERM "$PROM"
for i in $(seq 1 50); do kill -0 "$PROM" 2>/dev/null || break; sleep 0.1; done
stop_fixture
echo "prometheus: all checks passed"
