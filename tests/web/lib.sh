# Shared by the web test scripts: start/stop acl-web-fixture, helpers.
# Every process started here is killed by id on exit; every wait is bounded.
set -euo pipefail
# (under pipefail, `curl | grep -q` fails when grep stops reading early:
# the scripts let grep read everything instead)
: "${ACL_WEB_FIXTURE:?set by meson: path of acl-web-fixture}"
OUT_DIR=${ACL_WEB_OUT:-$(pwd)}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
TMP=$(mktemp -d "${TMPDIR:-/tmp}/acl-web-test.XXXXXX")
PIDS=()
FIX_PID=

cleanup() {
  local p
  for p in "${PIDS[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
  rm -rf "$TMP"
}
trap cleanup EXIT

fail() { echo "FAIL: $*" >&2; exit 1; }
skip() { echo "SKIP: $*"; exit 77; }
need() { command -v "$1" >/dev/null 2>&1 || skip "$1 not installed${2:+ (Debian package $2)}"; }

# start_fixture [fixture args...]: sets FIX_PID, PORT, BASE.
start_fixture() {
  local cmd=("$ACL_WEB_FIXTURE")
  if [ -n "${FIXTURE_WRAPPER:-}" ]; then cmd=($FIXTURE_WRAPPER "$ACL_WEB_FIXTURE"); fi
  "${cmd[@]}" "$@" >"$TMP/fixture.out" 2>"$TMP/fixture.err" &
  FIX_PID=$!
  PIDS+=("$FIX_PID")
  local i
  for i in $(seq 1 300); do
    if grep -q '^PORT ' "$TMP/fixture.out" 2>/dev/null; then break; fi
    kill -0 "$FIX_PID" 2>/dev/null || { cat "$TMP/fixture.err" >&2; fail "fixture exited early"; }
    sleep 0.1
  done
  PORT=$(awk '/^PORT /{print $2; exit}' "$TMP/fixture.out")
  [ -n "$PORT" ] || fail "fixture printed no port"
  BASE="http://127.0.0.1:$PORT"
}

# stop_fixture [timeout_s]: SIGTERM, waits, fails unless it exited 0 in time.
stop_fixture() {
  local t=${1:-5} i rc
  kill -TERM "$FIX_PID"
  for i in $(seq 1 $((t * 10))); do
    kill -0 "$FIX_PID" 2>/dev/null || break
    sleep 0.1
  done
  if kill -0 "$FIX_PID" 2>/dev/null; then fail "fixture did not stop within ${t}s of SIGTERM"; fi
  rc=0
  wait "$FIX_PID" || rc=$?
  [ "$rc" -eq 0 ] || { cat "$TMP/fixture.err" >&2; fail "fixture exited with status $rc"; }
}

alive() { kill -0 "$FIX_PID" 2>/dev/null || fail "fixture died: $(tail -5 "$TMP/fixture.err")"; }

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}

# curl_code URL [curl args...]: prints the HTTP status (000 on failure).
curl_code() { local u=$1; shift; curl -s -o /dev/null -w '%{http_code}' --max-time 5 "$@" "$u" || true; }

# start_chromium: headless Chromium with DevTools on a free port, profile
# in $PROFILE (cdp_dashboard.py reads its DevToolsActivePort); sets CHR.
start_chromium() {
  PROFILE="$TMP/chromium-profile"
  mkdir -p "$PROFILE"
  chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
    --disable-background-networking --disable-component-update --disable-sync \
    --disable-dev-shm-usage --user-data-dir="$PROFILE" --remote-debugging-port=0 \
    --remote-allow-origins='*' about:blank >"$TMP/chromium.log" 2>&1 &
  CHR=$!; PIDS+=("$CHR")
}
