# A hostile neighbour (tests/web/guest.py: slowloris, header deadline,
# per-address streams, Host check), then the exposure warning of a
# non-loopback bind and IPv6 addresses in brackets.
source "$(dirname "$0")/lib.sh"
start_fixture --interval-ms 100
timeout 90 python3 "$HERE/guest.py" "$PORT" || fail "hostile neighbour"
alive
stop_fixture

start_fixture --bind 0.0.0.0 --interval-ms 0
grep -q 'WARN\|warn' "$TMP/fixture.err" && grep -q 'non-loopback' "$TMP/fixture.err" \
  && grep -q 'http://0.0.0.0:' "$TMP/fixture.err" \
  || { cat "$TMP/fixture.err" >&2; fail "binding 0.0.0.0 gave no warning naming the exposure"; }
code=$(curl_code "$BASE/healthz" -H 'Host: anything.example')
[ "$code" = 200 ] || fail "a non-loopback bind must serve any Host (got $code)"
stop_fixture

if python3 -c 'import socket; s=socket.socket(socket.AF_INET6); s.bind(("::1",0))' 2>/dev/null; then
  start_fixture --bind ::1 --interval-ms 0
  code=$(curl_code "http://[::1]:$PORT/healthz")
  [ "$code" = 200 ] || fail "GET http://[::1]:$PORT/healthz gave $code"
  stop_fixture
  start_fixture --bind :: --interval-ms 0
  grep -q "http://\[::\]:$PORT/" "$TMP/fixture.err" \
    || { cat "$TMP/fixture.err" >&2; fail "the IPv6 address is not printed in brackets"; }
  stop_fixture
else
  echo "guest: no IPv6 loopback here; bracket check skipped"
fi
echo "guest: all checks passed"
