# The fixture under valgrind (memcheck, leak check full): requests on every
# route, an SSE stream open at stop time, SIGTERM. No errors, no leaks.
source "$(dirname "$0")/lib.sh"
need valgrind
need curl
FIXTURE_WRAPPER="valgrind --leak-check=full --show-leak-kinds=definite,indirect,possible --errors-for-leak-kinds=definite,indirect,possible --error-exitcode=1 --log-file=$TMP/valgrind.log" \
  start_fixture --interval-ms 100
for p in / /app.js /style.css /metrics /api/v1/state /healthz /nope; do
  curl -s -o /dev/null --max-time 20 "$BASE$p" || fail "GET $p under valgrind"
done
curl -s -o /dev/null --max-time 20 -X POST "$BASE/metrics" || true
curl -s -o /dev/null --max-time 20 -I "$BASE/metrics" || true
curl -s -N --max-time 2 "$BASE/api/v1/events" >"$TMP/ev1.txt" || true  # leaves on its own
grep -q '^event:' "$TMP/ev1.txt" || fail "no SSE event under valgrind"
curl -s -N --max-time 60 "$BASE/api/v1/events" >/dev/null &              # open at stop
CPID=$!; PIDS+=("$CPID")
timeout 30 python3 -c '
import socket,sys,time
s=socket.create_connection(("127.0.0.1",int(sys.argv[1])))
s.sendall(b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n")
open(sys.argv[2],"w").write("sent")
time.sleep(30)' "$PORT" "$TMP/half" &
HPID=$!; PIDS+=("$HPID")                                                   # half a request at stop
for i in $(seq 1 100); do [ -s "$TMP/half" ] && break; sleep 0.1; done
[ -s "$TMP/half" ] || fail "half-request client did not connect"
sleep 0.5
stop_fixture 20
if ! grep -q 'ERROR SUMMARY: 0 errors' "$TMP/valgrind.log"; then
  cat "$TMP/valgrind.log" >&2
  fail "valgrind reported errors"
fi
grep -E 'definitely lost|indirectly lost|possibly lost|ERROR SUMMARY' "$TMP/valgrind.log" || true
echo "valgrind: clean"
