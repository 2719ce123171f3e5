# /metrics under promtool (zero problems) and check_metrics.py (grouping,
# histogram invariants, duplicates, cardinality), with the base fixture and
# with the workload table full. The checker itself must reject broken input.
source "$(dirname "$0")/lib.sh"
need curl
need promtool prometheus

REQ=(autoccl_collective_duration_seconds autoccl_collective_bus_bandwidth_bytes_per_second
     autoccl_collective_calls_total autoccl_collective_bytes_total autoccl_tuner_state
     autoccl_tuner_speedup_ratio autoccl_compute_overlap_ratio autoccl_tuner_candidates_evaluated_total
     autoccl_tuner_retunes_total autoccl_consensus_wait_seconds_total
     autoccl_consensus_blocks_published_total autoccl_profiler_records_total
     autoccl_profiler_records_dropped_total autoccl_profiler_source autoccl_profiler_cupti_backed_off
     autoccl_build_info autoccl_workload_time_saved_seconds autoccl_workload_exploration_cost_seconds
     autoccl_tuner_decision_source)

check_one() { # label, fixture args...
  local tag=$1; shift
  start_fixture "$@"
  curl -sf --max-time 10 "$BASE/metrics" >"$TMP/$tag.prom" || fail "GET /metrics"
  stop_fixture
  local out rc=0
  out=$(promtool check metrics <"$TMP/$tag.prom" 2>&1) || rc=$?
  [ "$rc" -eq 0 ] && [ -z "$out" ] || fail "promtool ($tag, rc=$rc): $out"
  python3 "$HERE/check_metrics.py" "$TMP/$tag.prom" --max-series "${MAXS:-100000}" --require "${REQ[@]}" ||
    fail "check_metrics ($tag)"
  # Values not known are omitted: the warmup workload has no busbw.
  if grep -q 'bus_bandwidth_bytes_per_second{[^}]*collective="reduce_scatter",bytes="65536"' "$TMP/$tag.prom"; then
    fail "unknown busbw rendered"
  fi
  grep -q 'calls_total{[^}]*collective="reduce_scatter",bytes="65536"' "$TMP/$tag.prom" || fail "warmup workload missing"
  grep -q 'comm="pp \\"stage\\\\0\\""' "$TMP/$tag.prom" || fail "label escaping ($tag)"
  grep -q 'rank="unknown"' "$TMP/$tag.prom" || fail "unknown rank label ($tag)"
  # Net value: priced workloads only (the warmup one has no baseline), and a
  # loss is rendered as a negative number, not hidden.
  if grep -q 'time_saved_seconds{[^}]*collective="reduce_scatter",bytes="65536"' "$TMP/$tag.prom"; then
    fail "net value of an unpriced workload rendered"
  fi
  grep -Eq '^autoccl_workload_time_saved_seconds\{[^}]*collective="all_gather",bytes="4194304"[^}]*\} [0-9]' "$TMP/$tag.prom" ||
    fail "converged workload's time saved missing or not positive ($tag)"
  grep -Eq '^autoccl_workload_time_saved_seconds\{[^}]*\} -[0-9]' "$TMP/$tag.prom" ||
    fail "no negative net value rendered ($tag)"
}

check_one base
# A full table: 512 workloads x (17 histogram + 11 state + 3 source + <= 14 other series:
# 12, and the collective and exposed time)
# + comm/process ones.
MAXS=$((512 * 45 + 64 * 8 + 32)) check_one full --workloads 512
n=$(grep -c '^autoccl_collective_calls_total{' "$TMP/full.prom")
[ "$n" -eq 512 ] || fail "expected 512 workloads at the cap, got $n"

# The checker is honest: it rejects a broken histogram and a split family.
sed '0,/le="+Inf"} /s/le="+Inf"} \([0-9]*\)/le="+Inf"} 999999/' "$TMP/base.prom" >"$TMP/bad1.prom"
if python3 "$HERE/check_metrics.py" "$TMP/bad1.prom" >/dev/null; then fail "checker accepted +Inf != _count"; fi
{ cat "$TMP/base.prom"; grep -m1 '^autoccl_build_info' "$TMP/base.prom"; } >"$TMP/bad2.prom"
if python3 "$HERE/check_metrics.py" "$TMP/bad2.prom" >/dev/null; then fail "checker accepted a split family"; fi
echo "metrics: promtool and check_metrics clean"
