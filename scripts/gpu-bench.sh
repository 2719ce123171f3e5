#!/usr/bin/env bash
# autoccl-bench on a GPU machine, in one call.
#
#   scripts/gpu-bench.sh            the two-GPU measurement matrix:
#                                   all_reduce, all_gather, reduce_scatter,
#                                   64 KiB..1 GiB, isolated and under a
#                                   concurrent bf16 GEMM: NCCL default, autoccl
#                                   (after tuning and including the tuning
#                                   period) and the sweep oracle
#   scripts/gpu-bench.sh --part P[,P...]   parts of it, and the runs for the
#                                   channel ceiling (docs/channels.md), each
#                                   sized for one call of about 8 minutes:
#     check          -c 1 on every iteration while the tuner explores
#     isolated|gemm  the matrix above (default,autoccl + sweep)
#     long, short    NCCL as it ships against autoccl: long runs (--warmup-time
#                    2, ~6 min for 3 collectives), 300 + 50 calls (~1 min)
#     ceiling-long   long runs (--warmup-time 2), default,ceiling,autoccl with
#                    --ceiling $CEIL (autoccl in ceiling mode); 3 collectives
#                    take ~9 min: split them with COLLS
#     ceiling-short  the same, 300 + 50 calls, the whole run counted (~2 min)
#     ceiling-gemm   1 GiB under a full-duty GEMM, default,ceiling,autoccl (~2 min)
#     single         one process driving both GPUs (--single), long runs,
#                    default,autoccl as NCCL ships (~6 min)
#     advise         --advise on each collective (~4 min)
#     torch          examples/fsdp_llama.py: nccl, autoccl, autoccl_ceiling (~6 min)
#   scripts/gpu-bench.sh --smoke    one-GPU checks: arguments, -g 1 runs
#                                   (--procs and --single), GEMM interference,
#                                   -c 1 over collectives/types/ops, --compare,
#                                   --sweep, --json
#
# Options: --bin PATH (autoccl-bench), --plugin PATH (libnccl-tuner-autoccl.so),
#          --out DIR (default $OUT, else ./bench-out), --part LIST (above;
#          default check,isolated,gemm), --gpus N (matrix ranks, default 2),
#          --ranks-per-gpu K (K ranks share each GPU: NCCL >= 2.30.3, and
#          MPS for one process per rank: MPS=start starts it), --nccl DIR
#          (the NCCL library folder to run, first on LD_LIBRARY_PATH: what
#          scripts/gpu-nccl.sh prints). One GPU, two ranks:
#            scripts/gpu-bench.sh --part long --gpus 2 --ranks-per-gpu 2 --nccl "$NCCL"
# Environment knobs of the matrix: REPS (3), WARMUP (300), ITERS (50),
#          SIZES ("-b 64K -e 1G -f 4"), SWEEP_CH ("0,32"), SWEEP_ALGOS
#          ("Ring,Tree,PAT,NVLS,NVLSTree"), COLLS ("all_reduce all_gather reduce_scatter"),
#          CEIL (32: the raised ceiling), STOCK (24: what NCCL builds as it ships),
#          WARMUP_S (2: --warmup-time of the long runs), TORCH_REPS (3), TORCH_STEPS (30),
#          MPS (detect: autoccl-bench --mps; start), CHILD_TIMEOUT (600 s per run),
#          EXTRA (appended to every autoccl-bench command; EXTRA=--fake tests
#          this script on a machine without a GPU)
# Files written to the out dir (at most 5, so they fit the device tool's limit):
#   smoke.log smoke.jsonl smoke-summary.txt | matrix.log matrix.jsonl matrix-summary.md
#   (matrix-*: every part of the call; torch lines go to matrix.jsonl too)
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
MODE=matrix BIN="" PLUGIN="" OUTDIR="${OUT:-$ROOT/bench-out}" PART=check,isolated,gemm GPUS=2 RPG=1 NCCL=""
while [ $# -gt 0 ]; do
  case "$1" in
    --ranks-per-gpu) RPG=$2; shift ;;
    --nccl) NCCL=$2; shift ;;
    --smoke) MODE=smoke ;;
    --bin) BIN=$2; shift ;;
    --plugin) PLUGIN=$2; shift ;;
    --out) OUTDIR=$2; shift ;;
    --part) PART=$2; shift ;;
    --gpus) GPUS=$2; shift ;;
    -h|--help) sed -n '2,/^set -u/p' "$0" | grep '^#'; exit 0 ;;
    *) echo "gpu-bench.sh: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done
[ "$PART" = all ] && PART=check,isolated,gemm
PARTS=${PART//,/ }
for p in $PARTS; do
  case "$p" in check|isolated|gemm|long|short|ceiling-long|ceiling-short|ceiling-gemm|single|advise|torch) ;;
    *) echo "gpu-bench.sh: --part: unknown part '$p' (check isolated gemm long short ceiling-long ceiling-short ceiling-gemm single advise torch)" >&2; exit 2 ;;
  esac
done

if [ -z "$BIN" ]; then
  for b in "$ROOT/build-gpu/bench/autoccl-bench" "$ROOT/build/bench/autoccl-bench" "$ROOT/build-bench/bench/autoccl-bench"; do
    [ -x "$b" ] && { BIN=$b; break; }
  done
fi
[ -x "${BIN:-/nonexistent}" ] || { echo "gpu-bench.sh: autoccl-bench not found; build it (meson setup build && meson compile -C build) or pass --bin" >&2; exit 2; }
if [ -z "$PLUGIN" ]; then
  BD=$(dirname "$(dirname "$BIN")")
  for p in "$BD/libnccl-tuner-autoccl.so" "$BD/tuner/libnccl-tuner-autoccl.so" "$ROOT/build/libnccl-tuner-autoccl.so" "$ROOT/build/tuner/libnccl-tuner-autoccl.so"; do
    [ -f "$p" ] && { PLUGIN=$p; break; }
  done
fi
mkdir -p "$OUTDIR"
# NVLink multicast can take shared GPUs out of service: keep it off unless the
# caller explicitly set it.
export NCCL_NVLS_ENABLE=${NCCL_NVLS_ENABLE:-0}
# devlib/: what scripts/prepare-gpu-build.sh copies for a GPU machine that lacks it
if [ -n "$NCCL" ]; then
  [ -d "$NCCL/lib" ] && [ ! -e "$NCCL/libnccl.so.2" ] && NCCL=$NCCL/lib
  [ -e "$NCCL/libnccl.so.2" ] || { echo "gpu-bench.sh: --nccl $NCCL: no libnccl.so.2 there (scripts/gpu-nccl.sh makes one)" >&2; exit 2; }
fi
export LD_LIBRARY_PATH=${NCCL:+$NCCL:}$ROOT/devlib:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
PY=$(command -v python3 || true)
EXTRA=${EXTRA:-}
TMO=${TMO:-}  # per-command time limit (s): smoke 90, matrix 900

log() { echo "$*" | tee -a "$LOG"; }
# run CMD...: log the command, its output and exit status; JSON last line -> JSONL
run() {
  local expect=$1; shift
  log ""
  log "\$ $*"
  local t0=$(date +%s.%N)
  timeout -k 5 "$TMO" "$@" $EXTRA > "$OUTDIR/.run.out" 2> "$OUTDIR/.run.err"
  local rc=$?
  local t1=$(date +%s.%N)
  cat "$OUTDIR/.run.out" >> "$LOG"
  grep -v '^\[autoccl-bench\]' "$OUTDIR/.run.err" >> "$LOG"
  local last; last=$(tail -n 1 "$OUTDIR/.run.out")
  case "$last" in "{"*) echo "$last" >> "$JSONL" ;; esac
  local verdict=ok
  [ "$rc" = "$expect" ] || { verdict="UNEXPECTED (wanted $expect)"; FAILS=$((FAILS+1)); }
  log "# exit $rc $verdict, $(awk "BEGIN{printf \"%.1f\", $t1-$t0}") s"
  RC=$rc
}
FAILS=0

if [ "$MODE" = smoke ]; then
  LOG=$OUTDIR/smoke.log JSONL=$OUTDIR/smoke.jsonl TMO=${TMO:-90}
  : > "$LOG"; : > "$JSONL"
  log "# gpu-bench.sh --smoke  $(date -u +%FT%TZ)  bin=$BIN  plugin=${PLUGIN:-none}"
  nvidia-smi -L 2>&1 | tee -a "$LOG"
  ldd "$BIN" | grep -E 'nccl|cublas|cudart' | tee -a "$LOG"
  B=$BIN
  # arguments
  run 0 "$B" --help
  run 2 "$B" -b 1X
  run 2 "$B" -C alltoall
  run 2 "$B" -d fp8
  run 2 "$B" -o avg
  run 2 "$B" -b 1M -e 1K
  run 2 "$B" --interference gemm:0
  run 2 "$B" --compare default,nccl
  run 1 "$B" -g 8 -b 1K -e 1K -q            # more GPUs than present: clear runtime error
  run 1 "$B" -g 8 --single -b 1K -e 1K -q
  # one rank, both launch models
  run 0 "$B" -g 1 -b 64K -e 1G -f 4 -C all_reduce --json -q
  run 0 "$B" -g 1 -b 64K -e 1G -f 4 -C all_reduce --single --json -q
  # GEMM interference: same sizes, full duty and half duty
  run 0 "$B" -g 1 -b 64K -e 1G -f 4 -C all_reduce --interference gemm --json -q
  run 0 "$B" -g 1 -b 64K -e 1G -f 4 -C all_reduce --interference gemm:0.5 --json -q
  # -c 1: every collective, several types and ops, in- and out-of-place, under GEMM too
  for c in all_reduce all_gather reduce_scatter broadcast reduce; do
    DTOS="float:sum bfloat16:prod int8:max"
    [ $c = all_reduce ] && DTOS="float:sum half:sum bfloat16:prod int8:max int32:min double:sum uint8:sum"
    for dto in $DTOS; do
      set -- ${dto/:/ }
      run 0 "$B" -g 1 -C $c -d $1 -o $2 -b 1K -e 4M -f 16 -n 4 -w 2 -c 1 --json -q
    done
    run 0 "$B" -g 1 -C $c -b 1K -e 4M -f 16 -n 4 -w 2 -c 1 --inplace --single --json -q
  done
  run 0 "$B" -g 1 -C all_reduce -d bfloat16 -b 4K -e 64M -f 16 -n 10 -w 5 -c 1 --interference gemm --json -q
  # comparison driver, one rank
  run 0 "$B" -g 1 -b 64K -e 64M -f 4 --compare default --reps 2 -w 50 -n 20 --json -q
  if [ -n "$PLUGIN" ]; then
    run 0 env NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=TUNER,INIT "$B" -g 1 -b 64K -e 16M -f 4 --compare default,autoccl --plugin "$PLUGIN" --reps 2 -w 50 -n 20 --json -q
  else
    log "# no plugin found: --compare default,autoccl skipped"
  fi
  run 0 "$B" -g 1 -b 64K -e 16M -f 16 --compare default --reps 1 --sweep --sweep-algos Ring,Tree --sweep-channels 0,8 -w 20 -n 10 --json -q
  rm -f "$OUTDIR/.run.out" "$OUTDIR/.run.err"
  if [ -n "$PY" ]; then
    "$PY" - "$JSONL" > "$OUTDIR/smoke-summary.txt" <<'EOF'
import json, sys
n = bad = 0
for line in open(sys.argv[1]):
    n += 1
    try:
        d = json.loads(line)
    except Exception as e:
        bad += 1; print("JSON ERROR", e, line[:120]); continue
    if d["kind"] == "run":
        g = d["interference"]
        tag = "%s %s %s%s check=%d %s" % (d["coll"], d["dtype"], d["op"], " inplace" if d["inplace"] else "", d["check"], d["launch"])
        if g: tag += " gemm duty %.2f: GEMM alone %.1f TFLOP/s, during run %.1f TFLOP/s, busy %.0f%%" % (g["duty"], g["iso_tflops"] or 0, g["run_tflops"] or 0, 100 * (g["duty_seen"] or 0))
        print(tag, "| wrong", d["wrong"], "| exit", d["exit"], "| nccl", d["nccl_version"])
        if d["check"] == 0:
            for r in d["results"]:
                print("   %11d B  %9.2f us  incl %9.2f us  algbw %8.2f GB/s%s" % (r["size"], r["time_us"] or -1, r["time_incl_us"] or -1, r["algbw_gbs"] or -1,
                      ("  gemm %.1f TFLOP/s" % r["gemm_tflops"]) if r.get("gemm_tflops") else ""))
    else:
        print("compare", d["coll"], "modes", list(d["modes"]), "oracle", "yes" if d["oracle"] else "no", "| exit", d["exit"])
        for m, v in d["modes"].items():
            print("   ", m, ["%.1f" % (r["time_us"] or -1) for r in v["results"]], "incl", ["%.1f" % (r["time_incl_us"] or -1) for r in v["results"]])
        if d["oracle"]:
            print("    oracle", [(o["config"], round(o["time_us"] or -1, 1)) for o in d["oracle"]])
print("%d JSON lines, %d unparsable" % (n, bad))
EOF
    cat "$OUTDIR/smoke-summary.txt" | tee -a "$LOG"
  fi
  log "# smoke: $FAILS unexpected exit statuses"
  [ "$FAILS" = 0 ]
  exit $?
fi

# ---- two-GPU matrix --------------------------------------------------------
LOG=$OUTDIR/matrix.log JSONL=$OUTDIR/matrix.jsonl TMO=${TMO:-900}
: > "$LOG"; : > "$JSONL"
REPS=${REPS:-3} WARMUP=${WARMUP:-300} ITERS=${ITERS:-50} SIZES=${SIZES:--b 64K -e 1G -f 4}
SWEEP_CH=${SWEEP_CH:-0,32} SWEEP_ALGOS=${SWEEP_ALGOS:-Ring,Tree,PAT,NVLS,NVLSTree}
COLLS=${COLLS:-all_reduce all_gather reduce_scatter}
MODES=default
if [ -n "$PLUGIN" ]; then MODES=default,autoccl; fi
log "# gpu-bench.sh matrix  $(date -u +%FT%TZ)  gpus=$GPUS  bin=$BIN  plugin=${PLUGIN:-none (autoccl mode skipped)}"
nvidia-smi -L 2>&1 | tee -a "$LOG"
ldd "$BIN" | grep -E 'nccl|cublas|cudart' | tee -a "$LOG"
NG=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
NEED=$(( (GPUS + RPG - 1) / RPG ))
if [ "$NG" -lt "$NEED" ] && [ "${EXTRA#*--fake}" = "$EXTRA" ]; then log "# only $NG GPU(s) visible, $GPUS ranks at $RPG per GPU need $NEED: stop"; exit 1; fi
# every matrix command: the ranks, their GPUs, MPS and the per-run limit
TB=(-g "$GPUS" --ranks-per-gpu "$RPG" --mps "${MPS:-detect}" --child-timeout "${CHILD_TIMEOUT:-600}")
CEIL=${CEIL:-32} STOCK=${STOCK:-24} WARMUP_S=${WARMUP_S:-2}
PARGS=(); [ -n "$PLUGIN" ] && PARGS=(--plugin "$PLUGIN")
for part in $PARTS; do
  case "$part" in
    long|short|ceiling-long|ceiling-short|ceiling-gemm)
      # NCCL as it ships against autoccl (long, short), or also NCCL with the
      # ceiling alone and autoccl in ceiling mode (ceiling-*)
      [ -n "$PLUGIN" ] || { log "# no plugin: $part needs the autoccl mode"; FAILS=$((FAILS+1)); continue; }
      CARGS=(--compare default,ceiling,autoccl "${PARGS[@]}" --ceiling "$CEIL" --stock-channels "$STOCK")
      case "$part" in long|short) CARGS=(--compare default,autoccl "${PARGS[@]}") ;; esac
      for c in $COLLS; do
        case "$part" in
          long|ceiling-long) run 0 "$BIN" "${TB[@]}" $SIZES -C "$c" "${CARGS[@]}" --reps "$REPS" -w "$WARMUP" -n "$ITERS" --warmup-time "$WARMUP_S" --json -q ;;
          short|ceiling-short) run 0 "$BIN" "${TB[@]}" $SIZES -C "$c" "${CARGS[@]}" --reps "$REPS" -w "$WARMUP" -n "$ITERS" --json -q ;;
          ceiling-gemm) run 0 "$BIN" "${TB[@]}" -b 1G -e 1G -C "$c" "${CARGS[@]}" --reps "$REPS" -w "$WARMUP" -n "$ITERS" --interference gemm --json -q ;;
        esac
      done
      continue ;;
    single)
      [ -n "$PLUGIN" ] || { log "# no plugin: single needs the autoccl mode"; FAILS=$((FAILS+1)); continue; }
      for c in $COLLS; do
        run 0 "$BIN" "${TB[@]}" --single $SIZES -C "$c" --compare default,autoccl "${PARGS[@]}" --reps "$REPS" -w "$WARMUP" -n "$ITERS" --warmup-time "$WARMUP_S" --json -q
      done
      continue ;;
    advise)
      for c in $COLLS; do
        run 0 "$BIN" "${TB[@]}" $SIZES -C "$c" --advise --reps 2 -w "$WARMUP" -n "$ITERS" --json -q
      done
      continue ;;
    torch)
      [ -n "$PLUGIN" ] || { log "# no plugin: torch needs it"; FAILS=$((FAILS+1)); continue; }
      if [ "${EXTRA#*--fake}" != "$EXTRA" ]; then log "# --fake: the PyTorch step needs GPUs, skipped"; continue; fi
      log ""; log "\$ python3 examples/fsdp_llama.py --plugin $PLUGIN --nproc $GPUS --reps ${TORCH_REPS:-3} --steps ${TORCH_STEPS:-30}"
      t0=$(date +%s)
      timeout -k 5 "$TMO" "${PY:-python3}" "$ROOT/examples/fsdp_llama.py" --plugin "$PLUGIN" --nproc "$GPUS" \
          --reps "${TORCH_REPS:-3}" --steps "${TORCH_STEPS:-30}" --ceiling "$CEIL" --stock-channels "$STOCK" \
          --out "$JSONL" >> "$LOG" 2>&1
      rc=$?; [ $rc = 0 ] || FAILS=$((FAILS+1))
      log "# torch: exit $rc, $(( $(date +%s) - t0 )) s"
      continue ;;
  esac
  if [ "$part" = check ]; then
    # -c 1 on every iteration while the tuner explores (switches configs mid-run)
    if [ -n "$PLUGIN" ]; then
      for c in $COLLS; do
        run 0 "$BIN" "${TB[@]}" -b 64K -e 16M -f 16 -C "$c" -d bfloat16 --compare autoccl --plugin "$PLUGIN" --reps 1 \
            -w 200 -n 20 -c 1 --json -q
      done
    else
      log "# no plugin: the -c 1 check under the tuner is skipped"
    fi
    continue
  fi
  INTF=""; [ "$part" = gemm ] && INTF="--interference gemm"
  for c in $COLLS; do
    run 0 "$BIN" "${TB[@]}" $SIZES -C "$c" --compare "$MODES" "${PARGS[@]}" --reps "$REPS" -w "$WARMUP" -n "$ITERS" \
        --sweep --sweep-algos "$SWEEP_ALGOS" --sweep-channels "$SWEEP_CH" --sweep-warmup 10 $INTF --json -q
  done
done
rm -f "$OUTDIR/.run.out" "$OUTDIR/.run.err"
if [ -n "$PY" ]; then
  "$PY" "$ROOT/scripts/gpu-summary.py" "$JSONL" > "$OUTDIR/matrix-summary.md"
  cat "$OUTDIR/matrix-summary.md" | tee -a "$LOG"
fi
log "# matrix: $FAILS unexpected exit statuses"
[ "$FAILS" = 0 ]
