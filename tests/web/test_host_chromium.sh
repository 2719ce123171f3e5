# The dashboard's host view: autoccl-sim --ranks 4 (the real plugin, one
# process per local rank on ports P..P+3); headless Chromium loads local
# rank 0's page and must show all 4 ranks and the host totals, and a
# stopped rank as "no answer" (tests/web/cdp_host.py).
source "$(dirname "$0")/lib.sh"
need chromium chromium
: "${ACL_SIM:?set by meson: path of autoccl-sim}"
BASEP=
for try in $(seq 1 50); do
  p=$(free_port)
  ok=1
  for q in $p $((p + 1)) $((p + 2)) $((p + 3)); do
    python3 -c "import socket,sys; s=socket.socket(); s.bind(('127.0.0.1',$q)); s.close()" \
      2>/dev/null || ok=0
  done
  [ "$ok" = 1 ] && [ "$p" -lt 65530 ] && { BASEP=$p; break; }
done
[ -n "$BASEP" ] || fail "no 4 free ports"
"$ACL_SIM" --realtime --ranks 4 --port "$BASEP" --duration 90 -q >"$TMP/sim.out" 2>"$TMP/sim.err" &
SIM=$!; PIDS+=("$SIM")
for i in $(seq 1 200); do
  up=0
  for q in $BASEP $((BASEP + 1)) $((BASEP + 2)) $((BASEP + 3)); do
    [ "$(curl_code "http://127.0.0.1:$q/healthz")" = 200 ] && up=$((up + 1))
  done
  [ "$up" = 4 ] && break
  kill -0 "$SIM" 2>/dev/null || { tail -5 "$TMP/sim.err" >&2; fail "autoccl-sim exited early"; }
  sleep 0.1
done
[ "$up" = 4 ] || fail "4 endpoints did not come up"
# Cross-origin reads: only a page of this host at a sibling's port, by the
# same host name; never "*"; the Host guard still answers first.
acao() { curl -s -D - -o /dev/null --max-time 5 "$@" | tr -d '\r' |
  awk -F': ' 'tolower($1)=="access-control-allow-origin"{print $2}'; }
S1="http://127.0.0.1:$((BASEP + 1))"
[ "$(acao -H "Origin: http://127.0.0.1:$BASEP" "$S1/api/v1/state")" = "http://127.0.0.1:$BASEP" ] ||
  fail "a sibling's page is not let read the state"
[ "$(acao -H "Origin: http://127.0.0.1:$BASEP" "$S1/api/v1/host")" = "http://127.0.0.1:$BASEP" ] ||
  fail "a sibling's page is not let read the host list"
[ -z "$(acao -H "Origin: http://127.0.0.1:$((BASEP + 4))" "$S1/api/v1/state")" ] ||
  fail "a page at a port of no local rank may read the state"
[ -z "$(acao -H "Origin: http://localhost:$BASEP" "$S1/api/v1/state")" ] ||
  fail "a page of another host name may read the state"
[ -z "$(acao -H "Origin: http://127.0.0.1:$BASEP" "$S1/metrics")" ] ||
  fail "/metrics answers cross-origin"
[ -z "$(acao -H "Origin: null" "$S1/api/v1/state")" ] || fail "Origin null may read the state"
[ "$(curl_code "$S1/api/v1/state" -H "Host: evil.example:$((BASEP + 1))" \
      -H "Origin: http://evil.example:$BASEP")" = 421 ] || fail "the Host guard no longer answers first"
csp=$(curl -s -D - -o /dev/null --max-time 5 "http://127.0.0.1:$BASEP/" | tr -d '\r' |
  awk -F': ' 'tolower($1)=="content-security-policy"{print $2}')
case "$csp" in
  *"connect-src 'self' http://127.0.0.1:*;"*) ;;
  *) fail "the page's CSP does not let it reach its own host's ports: $csp" ;;
esac
echo "chromium-host: CORS only for a sibling's page; Host guard first; CSP: $csp"
start_chromium
rc=0
timeout 100 python3 "$HERE/cdp_host.py" "$PROFILE" "http://127.0.0.1:$BASEP/" "$OUT_DIR" || rc=$?
kill -TERM "$CHR" 2>/dev/null || true
# The simulator stops on SIGINT with its report, removing what it made.
kill -INT "$SIM" 2>/dev/null || true
for i in $(seq 1 100); do kill -0 "$SIM" 2>/dev/null || break; sleep 0.1; done
[ "$rc" -eq 0 ] || { tail -20 "$TMP/chromium.log" >&2; fail "host view checks (rc=$rc)"; }
echo "chromium-host: all checks passed; screenshots in $OUT_DIR"
