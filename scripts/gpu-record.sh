#!/usr/bin/env bash
# Record traces on the GPU machine for the simulator's replay
# (docs/trace.md): for AllReduce, AllGather and ReduceScatter at 64 KiB..1 GiB,
# isolated and under a bf16 GEMM, one process per GPU (--procs) and one
# process for both (--single):
#   - NCCL's default and the autoccl plugin (which records AUTOCCL_TRACE:
#     every sample it receives and every decision it changes), and
#   - the sweep (Ring/Tree x LL/LL128/Simple x channels auto/16/32 with
#     --procs; Ring x LL/Simple x auto/32 with --single), every rank's time of
#     every iteration from the first call, plus what NCCL ran (probe plugin);
#     with --procs every config --sweep-reps $SWEEP_REPS times, so that the
#     same run gives an oracle over what NCCL as it ships can run (channels
#     0 = NCCL's own, and 16, 24) and over the raised ceiling (32).
#
#   scripts/gpu-record.sh [--part iso|gemm|single|all] [--bin PATH] [--plugin PATH] [--out DIR]
#                         [--nccl DIR] [--gpus N] [--ranks-per-gpu K] [--launch procs|single]
#
# --nccl DIR: the NCCL library folder to run (what scripts/gpu-nccl.sh prints),
# first on LD_LIBRARY_PATH. --gpus N: ranks (default 2); --ranks-per-gpu K:
# K ranks share each GPU (NCCL >= 2.30.3; NCCL_MULTI_RANK_GPU_ENABLE=1 is set).
# --launch: the launch model of the iso and gemm parts (default procs; with
# --ranks-per-gpu > 1 and procs, MPS must run, or MPS=start starts it).
# One GPU, two ranks, NCCL 2.30.7 (docs/benchmarks.md, "One GPU"):
#   SIZES="-b 64K -e 256M -f 4" SWEEP_CH=0,16,32,64 SWEEP_REPS=1 WARMUP_S=2 \
#     scripts/gpu-record.sh --part iso --launch single --ranks-per-gpu 2 --nccl "$NCCL"
#
# Environment: SIZES ("-b 64K -e 1G -f 4"), COLLS ("all_reduce all_gather
# reduce_scatter"), WARMUP (300: calls before the timed ones, the tuning
# period), ITERS (50), REPS (1: repetitions of default and autoccl, each
# a fresh launch, interleaved), SWEEP_WARMUP (20), SWEEP_ALGOS (Ring,Tree), SWEEP_PROTOS
# (LL,LL128,Simple), SWEEP_CH (0,16,24,32), SWEEP_REPS (2), WARMUP_S (unset:
# none; S: --warmup-time S for default and autoccl, the long runs),
# CHILD_TIMEOUT (600: seconds per mode or config run), MPS (detect|start),
# EXTRA (appended to every command; EXTRA=--fake runs this on a machine
# without a GPU). The tar grows after every collective, so a call cut short
# keeps what it finished.
# Budget on 2x H200: iso ~90 s, gemm ~110 s, single ~70 s.
# Writes to the out dir (default $OUT, else ./record-out): record-<part>.tar
# (the .jsonl.gz traces, folders <regime>-<launch>-<coll>/) and record-<part>.log.
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN="" PLUGIN="" OUTDIR="${OUT:-$ROOT/record-out}" PART=all NCCL="" GPUS=2 RPG=1 LAUNCH=procs
while [ $# -gt 0 ]; do
  case "$1" in
    --nccl) NCCL=$2; shift ;;
    --gpus) GPUS=$2; shift ;;
    --ranks-per-gpu) RPG=$2; shift ;;
    --launch) LAUNCH=$2; shift ;;
    --bin) BIN=$2; shift ;;
    --plugin) PLUGIN=$2; shift ;;
    --out) OUTDIR=$2; shift ;;
    --part) PART=$2; shift ;;
    -h|--help) sed -n '2,/^set -u/p' "$0" | grep '^#'; exit 0 ;;
    *) echo "gpu-record.sh: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done
case "$PART" in iso|gemm|single|all) ;; *) echo "gpu-record.sh: --part iso|gemm|single|all" >&2; exit 2 ;; esac
case "$LAUNCH" in procs|single) ;; *) echo "gpu-record.sh: --launch procs|single" >&2; exit 2 ;; esac
if [ -n "$NCCL" ]; then
  [ -d "$NCCL/lib" ] && [ ! -e "$NCCL/libnccl.so.2" ] && NCCL=$NCCL/lib
  [ -e "$NCCL/libnccl.so.2" ] || { echo "gpu-record.sh: --nccl $NCCL: no libnccl.so.2 there (scripts/gpu-nccl.sh makes one)" >&2; exit 2; }
fi
if [ -z "$BIN" ]; then
  for b in "$ROOT/build-gpu/bench/autoccl-bench" "$ROOT/build/bench/autoccl-bench"; do
    [ -x "$b" ] && { BIN=$b; break; }
  done
fi
[ -x "${BIN:-/nonexistent}" ] || { echo "gpu-record.sh: autoccl-bench not found; build it (scripts/prepare-gpu-build.sh) or pass --bin" >&2; exit 2; }
BD=$(dirname "$(dirname "$BIN")")
if [ -z "$PLUGIN" ]; then
  for p in "$BD/tuner/libnccl-tuner-autoccl.so" "$BD/libnccl-tuner-autoccl.so"; do
    [ -f "$p" ] && { PLUGIN=$p; break; }
  done
fi
[ -f "${PLUGIN:-/nonexistent}" ] || { echo "gpu-record.sh: plugin not found; pass --plugin" >&2; exit 2; }
[ -f "$(dirname "$BIN")/libautoccl-bench-probe.so" ] || echo "gpu-record.sh: warning: no probe plugin beside $BIN: traces will not say what NCCL ran" >&2
mkdir -p "$OUTDIR"
export NCCL_NVLS_ENABLE=${NCCL_NVLS_ENABLE:-0}
export LD_LIBRARY_PATH=${NCCL:+$NCCL:}$ROOT/devlib:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
SIZES=${SIZES:--b 64K -e 1G -f 4} COLLS=${COLLS:-all_reduce all_gather reduce_scatter}
WARMUP=${WARMUP:-300} ITERS=${ITERS:-50} REPS=${REPS:-1} SWEEP_WARMUP=${SWEEP_WARMUP:-20} EXTRA=${EXTRA:-}
SWEEP_CH=${SWEEP_CH:-0,16,24,32} SWEEP_REPS=${SWEEP_REPS:-2}
SWEEP_ALGOS=${SWEEP_ALGOS:-Ring,Tree} SWEEP_PROTOS=${SWEEP_PROTOS:-LL,LL128,Simple}
CHILD_TIMEOUT=${CHILD_TIMEOUT:-600} MPS=${MPS:-detect}
TB=(-g "$GPUS" --ranks-per-gpu "$RPG" --mps "$MPS" --child-timeout "$CHILD_TIMEOUT")
[ -n "${WARMUP_S:-}" ] && TB+=(--warmup-time "$WARMUP_S")
TAR=$OUTDIR/record-$PART.tar
rm -f "$TAR"
TRACES=$(mktemp -d "${TMPDIR:-/tmp}/acl-record.XXXXXX")
PARTS="iso gemm single"; [ "$PART" != all ] && PARTS=$PART
for part in $PARTS; do
  LOG=$OUTDIR/record-$part.log JSONL=$OUTDIR/record-$part.jsonl
  : > "$LOG"; : > "$JSONL"
  echo "# gpu-record.sh --part $part  $(date -u +%FT%TZ)  bin=$BIN  plugin=$PLUGIN" | tee -a "$LOG"
  nvidia-smi -L 2>&1 | tee -a "$LOG"
  ldd "$BIN" "$PLUGIN" | grep -E 'not found|libz|nccl' | tee -a "$LOG"
  t0=$(date +%s)
  for regime in iso gemm; do
    [ "$part" != single ] && [ "$part" != "$regime" ] && continue
    INTF=""; [ $regime = gemm ] && INTF="--interference gemm"
    for c in $COLLS; do
      if [ "$part" = single ]; then
        L=single; SW=(--sweep-algos Ring --sweep-protos LL,Simple --sweep-channels 0,32)
      else
        L=$LAUNCH; SW=(--sweep-algos "$SWEEP_ALGOS" --sweep-protos "$SWEEP_PROTOS" --sweep-channels "$SWEEP_CH"
                     --sweep-reps "$SWEEP_REPS")
      fi
      D=$TRACES/$regime-$L-$c
      echo "\$ autoccl-bench ${TB[*]} --$L $SIZES -C $c --compare default,autoccl --reps $REPS -w $WARMUP -n $ITERS --sweep ${SW[*]} --sweep-warmup $SWEEP_WARMUP $INTF --trace $D --json -q $EXTRA" | tee -a "$LOG"
      s0=$(date +%s)
      timeout -k 5 1800 "$BIN" "${TB[@]}" --$L $SIZES -C "$c" --compare default,autoccl --plugin "$PLUGIN" --reps "$REPS" \
        -w "$WARMUP" -n "$ITERS" --sweep "${SW[@]}" --sweep-warmup "$SWEEP_WARMUP" $INTF --trace "$D" --json -q $EXTRA \
        > "$TRACES/.out" 2>> "$LOG"
      rc=$?
      cat "$TRACES/.out" >> "$LOG"
      last=$(tail -n 1 "$TRACES/.out")
      case "$last" in "{"*) echo "$last" >> "$JSONL" ;; esac
      echo "# exit $rc, $(( $(date +%s) - s0 )) s, $(ls "$D" 2>/dev/null | wc -l) trace files" | tee -a "$LOG"
      [ -d "$D" ] && tar -rf "$TAR" -C "$TRACES" "$(basename "$D")"
    done
  done
  echo "# part $part: $(( $(date +%s) - t0 )) s" | tee -a "$LOG"
done
rm -f "$TRACES/.out"
[ -f "$TAR" ] || tar -cf "$TAR" -T /dev/null
du -sh "$TAR" | tee -a "$LOG"
rm -rf "$TRACES"
