#!/usr/bin/env bash
# Hardening stages for CI (docs/hardening.md), run after the normal test run:
#   asan       whole suite again with AddressSanitizer + UBSan (+ LeakSanitizer)
#   valgrind   plugin harness and autoccl-sim under memcheck (no definite
#              leaks, no invalid accesses)
#   fuzz       every libFuzzer target for a bounded time from its seed corpus
#   cppcheck   warning/performance/portability on the project's C code
#   clang-tidy .clang-tidy checks, warnings are errors
#   tsan       getCollInfo from 8 threads + profiler feeder + scraper, TSan
#   load       scripts/ci-load.sh: 8 ranks x 32 comms, >= 1e6 calls, scraped
# Each stage is timed and reported; the script fails at the end if any did.
#
# usage: scripts/ci-hardening.sh [--only a,b] [--skip a,b] [--plain DIR]
#   --plain DIR  an already configured plain (unsanitized) build dir to reuse
#                for valgrind, cppcheck, clang-tidy and load (default: the
#                script's own $PREFIX-plain)
# env: ACL_HARD_PREFIX (build dir prefix, default build-hard),
#      ACL_FUZZ_TIME (seconds per fuzz target, default 10),
#      ACL_LOAD_DURATION (seconds, default 30; see scripts/ci-load.sh)
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT" || exit 2
PREFIX=${ACL_HARD_PREFIX:-build-hard}
FUZZ_TIME=${ACL_FUZZ_TIME:-10}
JOBS=$(nproc 2>/dev/null || echo 2)
ALL_STAGES="asan valgrind fuzz cppcheck clang-tidy tsan load"
ONLY="" SKIP="" PLAIN=""
while [ $# -gt 0 ]; do
  case "$1" in
  --only) ONLY=",$2,"; shift 2 ;;
  --skip) SKIP=",$2,"; shift 2 ;;
  --plain) PLAIN=$2; shift 2 ;;
  -h | --help) sed -n '2,21p' "$0"; exit 0 ;;
  *) echo "ci-hardening: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
for s in ${ONLY//,/ } ${SKIP//,/ }; do
  case " $ALL_STAGES " in *" $s "*) ;; *) echo "ci-hardening: unknown stage '$s' (stages: $ALL_STAGES)" >&2; exit 2 ;; esac
done
PLAIN=${PLAIN:-$PREFIX-plain}
LOGS="$ROOT/$PREFIX-logs"
mkdir -p "$LOGS"

# (Re)configure a build dir with the given options; reuses an existing one.
setup() {
  local dir=$1
  shift
  if [ -f "$dir/build.ninja" ]; then
    meson configure "$dir" "$@" >/dev/null && return 0
  fi
  meson setup "$dir" "$@"
}

# Job slots: at most $JOBS commands at once (valgrind and libFuzzer are
# single-threaded; on CI's 2 cores this halves those stages). slot_run runs
# "$@" in the background once a slot is free; slot_wait waits for the rest.
# Each returns 1 if any finished command failed.
SLOTS=0
slot_run() {
  local rc=0
  if [ "$SLOTS" -ge "$JOBS" ]; then
    wait -n || rc=1
    SLOTS=$((SLOTS - 1))
  fi
  "$@" &
  SLOTS=$((SLOTS + 1))
  return $rc
}
slot_wait() {
  local rc=0
  while [ "$SLOTS" -gt 0 ]; do
    wait -n || rc=1
    SLOTS=$((SLOTS - 1))
  done
  return $rc
}

# ---- stages ------------------------------------------------------------------

stage_asan() {
  local d=$PREFIX-asan
  setup "$d" -Db_sanitize=address,undefined -Db_lundef=false || return 1
  # The C code's own tests under ASan/UBSan/LSan, not the whole suite again
  # (CI's 20 minutes: the whole suite took 519 s here), and only what they
  # need is built (meson test builds a test's dependencies):
  # - in-process suites: core, tuner, consensus, plugin, profiler, the
  #   web server's and the TUI's C tests, bench-pure;
  # - the simulator playing NCCL against the real plugin in several
  #   processes: 4 ranks, 2 hosts (relay), CUDA-graph capture over the
  #   relay, communicator churn beside a world communicator.
  # Left to the plain run and the other stages: Python/doc checks (with
  #   the tunerbench's JSON contract, a minute under ASan for a search the
  #   tuner suite's C tests run there), the
  #   browser and tmux-over-simulator checks, the fake-GPU bench, the longer
  #   simulator runs, valgrind (it cannot run an ASan binary) and
  #   hardening-threads (TSan's; under ASan it passed, then LeakSanitizer's
  #   own tracer crashed at exit, signal 11 in StopTheWorld).
  local names
  names=$(meson test -C "$d" --list 2>/dev/null | sed -n 's|^autoccl:\([^ ]*\) / |\1 |p' |
    grep -E '^(core|tuner|consensus|plugin|profiler) |^web (render|server|http|sse|hostile|guest)$|^tui (tui-unit|tui-real-server)$|^bench bench-pure$|^sim (sim-nccl_model|sim-plugin-4ranks|sim-plugin-hosts2|sim-plugin-capture-hosts2|sim-plugin-churn-world)$' |
    grep -v '^tuner tuner_bench_json$' | sed 's|^[^ ]* ||' | sort -u)
  [ -n "$names" ] || { echo "no tests listed in $d" >&2; return 1; }
  # shellcheck disable=SC2086
  # plugin-churn: 200 create/destroy cycles show a per-cycle leak to LSan as
  # well as the plain run's 1,000.
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:detect_stack_use_after_return=1:strict_string_checks=1 \
  UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 ACL_CHURN_CYCLES=200 \
    meson test -C "$d" --print-errorlogs --num-processes "$JOBS" \
    --timeout-multiplier 3 $names
}

# Runs "$@" under memcheck, every process (Criterion re-executes itself per
# test; autoccl-sim forks its ranks) in its own log; fails on any error
# (invalid access, uninitialised use, definite leak) in any of them.
VG_SUPP="$ROOT/scripts/valgrind.supp"
vg() {
  local tag=$1
  shift
  local dir="$LOGS/valgrind-$tag"
  rm -rf "$dir" && mkdir -p "$dir"
  local supp=()
  [ -f "$VG_SUPP" ] && supp=(--suppressions="$VG_SUPP")
  valgrind --trace-children=yes --keep-debuginfo=yes --leak-check=full \
    --errors-for-leak-kinds=definite --show-leak-kinds=definite --error-exitcode=99 \
    --track-origins=yes "${supp[@]}" --log-file="$dir/vg.%p" "$@" >"$dir/stdout" 2>"$dir/stderr"
  local rc=$?
  # a forked process may still be writing its summary when the command
  # returns (one CI run judged a rank's half-written log): wait for every
  # log's summary, up to 30 s, before reading them
  local t=0
  while [ $t -lt 60 ] && [ -n "$(grep -L "ERROR SUMMARY:" "$dir"/vg.* 2>/dev/null)" ]; do
    sleep 0.5
    t=$((t + 1))
  done
  local bad
  bad=$(grep -L "ERROR SUMMARY: 0 errors" "$dir"/vg.* 2>/dev/null)
  if [ -z "$(ls "$dir"/vg.* 2>/dev/null)" ]; then
    echo "valgrind[$tag]: no valgrind log written" >&2
    return 1
  fi
  if [ -n "$bad" ]; then
    echo "valgrind[$tag]: errors in $(echo "$bad" | wc -l) process(es):" >&2
    for f in $bad; do
      if grep -q "ERROR SUMMARY:" "$f"; then
        grep -E "ERROR SUMMARY|Invalid|uninitialised|definitely lost|^==[0-9]+==    (at|by)" "$f" |
          head -40 >&2
      else
        # killed, or still running 30 s after the command returned
        echo "$(basename "$f"): no summary; its command and last lines:" >&2
        grep -m 2 -E "Command:|Parent PID:" "$f" >&2
        tail -n 8 "$f" >&2
      fi
    done
    return 1
  fi
  if [ $rc -ne 0 ]; then
    echo "valgrind[$tag]: command failed (exit $rc):" >&2
    tail -n 20 "$dir/stdout" "$dir/stderr" >&2
    return 1
  fi
  echo "valgrind[$tag]: clean ($(ls "$dir"/vg.* | wc -l) processes)"
}

stage_valgrind() {
  command -v valgrind >/dev/null || { echo "valgrind is not installed" >&2; return 1; }
  setup "$PLAIN" || return 1
  meson compile -C "$PLAIN" || return 1
  local plugin fail=0
  plugin=$(ls "$PLAIN"/tuner/libnccl-tuner-autoccl.so 2>/dev/null)
  [ -n "$plugin" ] || { echo "no plugin in $PLAIN/tuner" >&2; return 1; }
  local t found=0
  for t in "$PLAIN"/tests/plugin/test-plugin-*; do
    [ -f "$t" ] && [ -x "$t" ] || continue
    found=1
    # The environment meson gives these tests (tests/plugin/meson.build);
    # churn: 100 create/destroy cycles show a per-cycle leak as well as
    # 1,000 (the plain and ASan runs do 1,000).
    ACL_PLUGIN="$plugin" AUTOCCL_HTTP_PORT="" ACL_CHURN_CYCLES=100 \
      LD_LIBRARY_PATH="$(dirname "$plugin")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
      slot_run vg "$(basename "$t")" "$t" -j1 || fail=1
  done
  [ $found = 1 ] || { echo "no test-plugin-* in $PLAIN/tests/plugin" >&2; fail=1; }
  if [ -x "$PLAIN/sim/autoccl-sim" ]; then
    slot_run vg autoccl-sim "$PLAIN/sim/autoccl-sim" --ranks 4 --duration 5 --json -q || fail=1
  else
    echo "no $PLAIN/sim/autoccl-sim" >&2
    fail=1
  fi
  slot_wait || fail=1
  return $fail
}

stage_fuzz() {
  local d=$PREFIX-fuzz
  command -v clang >/dev/null || { echo "clang is not installed" >&2; return 1; }
  if [ ! -f "$d/build.ninja" ]; then
    CC=clang meson setup "$d" -Dfuzz=enabled -Dtests=disabled -Dcuda=disabled || return 1
  fi
  local targets
  targets=$(cd "$d" && ninja -t targets all 2>/dev/null | grep -o '^fuzz/fuzz-[a-z-]*' | sort -u)
  [ -n "$targets" ] || { echo "no fuzz targets configured" >&2; return 1; }
  # shellcheck disable=SC2086
  meson compile -C "$d" $targets || return 1
  local fail=0 t
  for t in $targets; do
    slot_run fuzz_one "$d" "$t" || fail=1
  done
  slot_wait || fail=1
  return $fail
}

# One libFuzzer target for $FUZZ_TIME seconds from its seed corpus.
fuzz_one() {
  local d=$1 t=$2 name corpus work
  name=${t#fuzz/fuzz-}
  corpus="$ROOT/fuzz/corpus/${name//-/_}"
  work="$LOGS/fuzz-$name"
  rm -rf "$work" && mkdir -p "$work/corpus"
  [ -d "$corpus" ] || { echo "fuzz[$name]: no seed corpus $corpus" >&2; return 1; }
  # Extra libFuzzer flags per target (fuzz/<target>.flags, one line).
  local flags=""
  [ -f "$ROOT/fuzz/${name//-/_}.flags" ] && flags=$(head -1 "$ROOT/fuzz/${name//-/_}.flags")
  # New inputs go to a scratch copy; the checked-in seeds stay as they are.
  # shellcheck disable=SC2086
  if "$d/$t" -max_total_time="$FUZZ_TIME" -timeout=10 -rss_limit_mb=2048 $flags \
    -print_final_stats=1 -artifact_prefix="$work/" "$work/corpus" "$corpus" \
    >"$work/log" 2>&1; then
    echo "fuzz[$name]: $(grep -E '^#[0-9]+.*DONE' "$work/log" | tail -1)"
  else
    echo "fuzz[$name]: FAILED; reproducer: $(ls "$work"/crash-* "$work"/leak-* \
      "$work"/timeout-* "$work"/oom-* 2>/dev/null | head -1)" >&2
    grep -E "ERROR|invariant|SUMMARY|^    #[0-9]" "$work/log" | head -25 >&2
    return 1
  fi
}

# The project's own C files from a compile database (generated sources,
# third-party headers and the Criterion test files are left out: Criterion's
# macros come from a system header cppcheck does not read).
own_db() {
  local db=$1 out=$2
  python3 - "$db" "$out" "$ROOT" <<'PY'
import json, os, sys
db, out, root = sys.argv[1:]
keep = ("core/", "observe/", "tuner/", "profiler/", "web/", "tui/", "sim/", "bench/", "fuzz/")
entries = []
for e in json.load(open(db)):
    f = os.path.normpath(os.path.join(e["directory"], e["file"]))
    rel = os.path.relpath(f, root)
    if rel.startswith(keep) and os.path.exists(f):
        entries.append(e)
os.makedirs(os.path.dirname(out), exist_ok=True)
json.dump(entries, open(out, "w"))
print(len(entries))
PY
}

stage_cppcheck() {
  command -v cppcheck >/dev/null || { echo "cppcheck is not installed" >&2; return 1; }
  setup "$PLAIN" || return 1
  local n
  n=$(own_db "$PLAIN/compile_commands.json" "$LOGS/cppcheck-db/compile_commands.json") || return 1
  echo "cppcheck: $n files"
  # -D__GNUC__: the configuration we build (CUDA's headers refuse others).
  cppcheck --project="$LOGS/cppcheck-db/compile_commands.json" \
    --enable=warning,performance,portability --error-exitcode=1 --inline-suppr \
    --suppress=missingIncludeSystem -D__GNUC__=12 -q -j "$JOBS" \
    --template='{file}:{line}:{column}: {severity}: {message} [{id}]'
}

stage_clang_tidy() {
  local tidy
  tidy=$(command -v run-clang-tidy || command -v run-clang-tidy-14)
  [ -n "$tidy" ] || { echo "run-clang-tidy (clang-tidy) is not installed" >&2; return 1; }
  setup "$PLAIN" || return 1
  # Generated sources (web assets, sim CSV) must exist for the database.
  meson compile -C "$PLAIN" >/dev/null || return 1
  local out="$LOGS/clang-tidy.log"
  "$tidy" -p "$PLAIN" -quiet -j "$JOBS" \
    "^$ROOT/(core|observe|tuner|profiler|web|tui|sim|bench|fuzz)/" >"$out" 2>&1
  local rc=$?
  # run-clang-tidy's exit status is not reliable across versions: count.
  local n
  n=$(sed 's/\x1b\[[0-9;]*m//g' "$out" | grep -cE ': (warning|error): ')
  sed 's/\x1b\[[0-9;]*m//g' "$out" | grep -E ': (warning|error): ' | sort -u | head -80
  echo "clang-tidy: $n diagnostics (exit $rc)"
  [ "$n" -eq 0 ] && [ $rc -eq 0 ]
}

stage_tsan() {
  local d=$PREFIX-tsan
  setup "$d" -Db_sanitize=thread -Db_lundef=false || return 1
  meson compile -C "$d" tests/hardening/test-hardening-threads tuner/nccl-tuner-autoccl || return 1
  TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1:exitcode=66 \
    meson test -C "$d" --no-rebuild --print-errorlogs --suite hardening --timeout-multiplier 3
}

stage_load() {
  setup "$PLAIN" || return 1
  meson compile -C "$PLAIN" sim/autoccl-sim tuner/nccl-tuner-autoccl || return 1
  "$ROOT/scripts/ci-load.sh" "$PLAIN"
}

# ---- driver ------------------------------------------------------------------

RESULTS=()
FAILED=0
T_ALL=$(date +%s)
for s in $ALL_STAGES; do
  if [ -n "$ONLY" ] && [[ $ONLY != *",$s,"* ]]; then continue; fi
  if [[ $SKIP == *",$s,"* ]]; then continue; fi
  echo "==== [$s] start $(date -u +%H:%M:%S)"
  t0=$(date +%s)
  "stage_${s//-/_}" 2>&1 | tee "$LOGS/$s.log"
  rc=${PIPESTATUS[0]}
  dt=$(($(date +%s) - t0))
  if [ "$rc" -eq 0 ]; then st=PASS; else st=FAIL; FAILED=1; fi
  RESULTS+=("$(printf '%-11s %-4s %5ss' "$s" "$st" "$dt")")
  echo "==== [$s] $st in ${dt}s (log: $LOGS/$s.log)"
done
echo
echo "==== hardening summary ($(($(date +%s) - T_ALL))s total)"
printf '  %s\n' "${RESULTS[@]}"
# A failed stage's own lines again, last: CI may keep only the end of a
# long log, and the summary alone does not say what failed.
for r in "${RESULTS[@]}"; do
  read -r name st _ <<<"$r"
  [ "$st" = FAIL ] || continue
  echo
  echo "==== [$name] failed; the end of $LOGS/$name.log:"
  grep -vE ': clean \(|^\[[0-9]+/[0-9]+\] ' "$LOGS/$name.log" | tail -n 40
done
exit $FAILED
