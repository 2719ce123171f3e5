# Hostile requests against the real server (tests/web/hostile.py), then a
# clean stop: no crash, still serving, exits 0.
source "$(dirname "$0")/lib.sh"
start_fixture --interval-ms 100
python3 "$HERE/hostile.py" "$PORT" "$FIX_PID" || fail "hostile clients"
alive
stop_fixture
echo "hostile: all checks passed"
