# Headless Chromium loads the dashboard from the fixture (tests/web/
# cdp_dashboard.py drives it over DevTools): rows, trajectory, live SSE
# updates, selection, screenshots under the build dir, disconnect banner.
source "$(dirname "$0")/lib.sh"
need chromium chromium
start_fixture --interval-ms 200
# The documented headless capture (README, docs/api.md) finishes with ?poll=1.
rm -f "$OUT_DIR/dashboard-capture.png"
crc=0
timeout 60 chromium --headless --no-sandbox --disable-gpu --disable-dev-shm-usage \
  --user-data-dir="$TMP/capture-profile" --window-size=1400,1100 --virtual-time-budget=4000 \
  --screenshot="$OUT_DIR/dashboard-capture.png" "$BASE/?poll=1" >"$TMP/capture.log" 2>&1 || crc=$?
[ "$crc" -eq 0 ] && [ -s "$OUT_DIR/dashboard-capture.png" ] ||
  { tail -5 "$TMP/capture.log" >&2; fail "headless capture of /?poll=1 did not finish (rc=$crc)"; }
start_chromium
rc=0
timeout 120 python3 "$HERE/cdp_dashboard.py" "$PROFILE" "$BASE/" "$FIX_PID" "$OUT_DIR" || rc=$?
kill -TERM "$CHR" 2>/dev/null || true
for i in $(seq 1 50); do kill -0 "$CHR" 2>/dev/null || break; sleep 0.1; done
[ "$rc" -eq 0 ] || { tail -20 "$TMP/chromium.log" >&2; fail "dashboard checks (rc=$rc)"; }
# cdp_dashboard.py sent SIGTERM to the fixture: it must have exited cleanly.
for i in $(seq 1 50); do kill -0 "$FIX_PID" 2>/dev/null || break; sleep 0.1; done
frc=0; wait "$FIX_PID" || frc=$?
[ "$frc" -eq 0 ] || fail "fixture exit status $frc"
echo "chromium: all checks passed; screenshots in $OUT_DIR"
