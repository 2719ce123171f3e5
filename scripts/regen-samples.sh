#!/bin/bash
# Regenerates the README's samples from the actual demo command:
#   docs/autoccl-top-demo.txt  autoccl-top (160x48, under tmux) watching the host's 4
#                              local ranks from one URL (local rank 0's), also pasted
#                              into README.md between the tui-capture markers
#   docs/dashboard.png         the dashboard served by local rank 0, showing the 4 local
#                              ranks (headless Chromium, /?poll=1)
# It runs `build/sim/autoccl-sim --demo` (README set-up command 1's last part)
# from the repository root, waits until the first interference episode made
# workloads re-tune and some converged again, captures both, then stops the
# demo with Ctrl-C. Needs a built tree (meson compile -C build), tmux and
# chromium. Runs in a private network namespace when it can (port 9464 is
# then its own); otherwise port 9464 must be free. Bounded: 6 minutes.
#
#   scripts/regen-samples.sh
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
if [ -z "${ACL_REGEN_INNER:-}" ] && command -v unshare >/dev/null && command -v ip >/dev/null; then
  ns=(unshare -n); [ "$(id -u)" = 0 ] || ns=(unshare -rn)
  if "${ns[@]}" true 2>/dev/null; then
    exec env ACL_REGEN_INNER=1 "${ns[@]}" "$0" "$@"
  fi
fi
[ -n "${ACL_REGEN_INNER:-}" ] && ip link set lo up
for t in tmux chromium curl python3; do
  command -v "$t" >/dev/null || { echo "regen-samples: $t not found" >&2; exit 1; }
done
[ -x build/sim/autoccl-sim ] && [ -x build/tui/autoccl-top ] ||
  { echo "regen-samples: build first: meson setup build && meson compile -C build" >&2; exit 1; }

TMP=$(mktemp -d)
SOCK="regen$$"
SIM=""
cleanup() {
  tmux -L "$SOCK" kill-server 2>/dev/null || true
  [ -n "$SIM" ] && kill -INT "$SIM" 2>/dev/null && { sleep 3; kill -KILL "$SIM" 2>/dev/null || true; }
  rm -rf "$TMP"
}
trap cleanup EXIT

# The demo, exactly as the README starts it.
build/sim/autoccl-sim --demo >"$TMP/demo.log" 2>&1 &
SIM=$!
echo "regen-samples: started 'build/sim/autoccl-sim --demo' (pid $SIM)"

# Wait for a moment worth showing: re-tunes happened (the interference
# episode), one is under way, and at least 3 workloads are converged.
python3 - "$TMP" <<'PY'
import json, sys, time, urllib.request
t0 = time.monotonic()
best = None
while time.monotonic() - t0 < 300:
    try:
        with urllib.request.urlopen("http://127.0.0.1:9464/api/v1/state", timeout=3) as r:
            st = json.load(r)
        ws = st["workloads"]
        ret = sum(w["retunes"] > 0 for w in ws)
        conv = sum(w["state"] == "converged" for w in ws)
        if ret >= 2 and conv >= 3 and any(w["state"] == "retuning" for w in ws):
            print("regen-samples: %d workloads re-tuned, %d converged after %.0f s" %
                  (ret, conv, time.monotonic() - t0))
            sys.exit(0)
    except Exception:
        pass
    time.sleep(1)
sys.exit("regen-samples: no re-tune within 300 s")
PY

tmux -L "$SOCK" -f /dev/null new-session -d -s top -x 160 -y 48 \
  "env LANG=C.UTF-8 LC_ALL=C.UTF-8 build/tui/autoccl-top --url http://127.0.0.1:9464"
chromium --headless --no-sandbox --disable-gpu --disable-dev-shm-usage \
  --user-data-dir="$TMP/chromium" --window-size=1500,1900 --virtual-time-budget=4000 \
  --screenshot="$TMP/dashboard.png" 'http://127.0.0.1:9464/?poll=1' >"$TMP/chromium.log" 2>&1
sleep 3  # autoccl-top: the 4 sources connected and drawn
tmux -L "$SOCK" send-keys -t top G k k k  # the last workload (ReduceScatter), rank 0
sleep 1.5
tmux -L "$SOCK" capture-pane -p -t top | sed 's/[[:space:]]*$//' >"$TMP/top.txt"
[ "$(grep -c "connected (stream)" "$TMP/top.txt")" = 4 ] ||
  { cat "$TMP/top.txt"; echo "regen-samples: autoccl-top not connected to the 4 local ranks" >&2; exit 1; }
[ -s "$TMP/dashboard.png" ] || { tail "$TMP/chromium.log"; echo "regen-samples: no screenshot" >&2; exit 1; }

cp "$TMP/top.txt" docs/autoccl-top-demo.txt
cp "$TMP/dashboard.png" docs/dashboard.png
python3 - <<'PY'
import re
p = "README.md"
s = open(p, encoding="utf-8").read()
cap = open("docs/autoccl-top-demo.txt", encoding="utf-8").read().rstrip("\n")
new, n = re.subn(r"(<!-- tui-capture:start -->\n```\n).*?(```\n<!-- tui-capture:end -->)",
                 lambda m: m.group(1) + cap + "\n" + m.group(2), s, flags=re.S)
if n != 1:
    raise SystemExit("regen-samples: README.md has no tui-capture markers")
open(p, "w", encoding="utf-8").write(new)
PY
kill -INT "$SIM"
wait "$SIM" || true
SIM=""
echo "regen-samples: wrote docs/autoccl-top-demo.txt, docs/dashboard.png, README.md capture"
tail -12 "$TMP/demo.log"
