#!/usr/bin/env bash
# The PyTorch A/B on a GPU machine: examples/fsdp_llama.py (FSDP) and
# examples/ddp_buckets.py (DDP), NCCL as it ships against autoccl, launches
# interleaved nccl, autoccl, autoccl, nccl, ... (ABBA), each its own torchrun.
#
#   scripts/gpu-torch.sh [--wrap fsdp|ddp|both] [--plugin PATH] [--nccl-lib PATH]
#                        [--nproc N] [--ranks-per-gpu K] [--mps start] [--out DIR]
#                        [-- EXTRA ARGS FOR THE EXAMPLE]
#
# Several ranks on one GPU (the one-GPU testbed, docs/benchmarks.md): give
# --ranks-per-gpu K with an NCCL of 2.30.3 or later (--nccl-lib, preloaded:
# PyTorch's wheels bundle their own, older NCCL); one process per rank then
# needs MPS, which --mps start starts for the run and stops after it
# (without it, a running MPS daemon is used, and the script stops if there
# is none, since the timings would be context switches).
# Environment: REPS (4: two ABBA rounds), STEPS (300 per launch), WARMUP (10).
# Writes DIR/torch-<wrap>.jsonl (torch_step_run lines, then one torch_step
# line per mode) and DIR/torch-<wrap>.log; DIR is $OUT, else ./torch-out.
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
WRAP=both PLUGIN="" NCCL_LIB="" NPROC=2 RPG=1 MPS="" OUTDIR="${OUT:-$PWD/torch-out}"
while [ $# -gt 0 ]; do
  case "$1" in
    --wrap) WRAP=$2; shift ;;
    --plugin) PLUGIN=$2; shift ;;
    --nccl-lib) NCCL_LIB=$2; shift ;;
    --nproc) NPROC=$2; shift ;;
    --ranks-per-gpu) RPG=$2; shift ;;
    --mps) MPS=$2; shift ;;
    --out) OUTDIR=$2; shift ;;
    --) shift; break ;;
    -h|--help) sed -n '2,/^set -u/p' "$0" | grep '^#'; exit 0 ;;
    *) echo "gpu-torch.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done
case "$WRAP" in fsdp|ddp|both) ;; *) echo "gpu-torch.sh: --wrap fsdp|ddp|both" >&2; exit 2 ;; esac
case "$MPS" in ""|start) ;; *) echo "gpu-torch.sh: --mps start (or leave it out)" >&2; exit 2 ;; esac
if [ -z "$PLUGIN" ]; then
  for p in "$ROOT/build-gpu/tuner/libnccl-tuner-autoccl.so" "$ROOT/build/tuner/libnccl-tuner-autoccl.so"; do
    [ -f "$p" ] && { PLUGIN=$p; break; }
  done
fi
[ -f "$PLUGIN" ] || { echo "gpu-torch.sh: no plugin (build it, or give --plugin PATH)" >&2; exit 2; }
python3 -c 'import torch' 2>/dev/null || { echo "gpu-torch.sh: PyTorch is not importable" >&2; exit 2; }
mkdir -p "$OUTDIR"
export NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1
mps_pipe=${CUDA_MPS_PIPE_DIRECTORY:-/tmp/nvidia-mps}
mps_own=""
# a daemon told to quit leaves its control socket behind, which later tools
# took for a running daemon: a daemon this script starts lives in a private
# folder, removed after it
stop_mps() {
  echo quit | nvidia-cuda-mps-control >/dev/null 2>&1
  [ -n "$mps_own" ] && rm -rf "$mps_own"
}
if [ "$RPG" -gt 1 ]; then
  if [ "$MPS" = start ]; then
    if [ -z "${CUDA_MPS_PIPE_DIRECTORY:-}" ]; then
      mps_own=$(mktemp -d "${TMPDIR:-/tmp}/gpu-torch-mps.XXXXXX")
      mps_pipe=$mps_own/pipe
      export CUDA_MPS_LOG_DIRECTORY=${CUDA_MPS_LOG_DIRECTORY:-$mps_own/log}
    fi
    export CUDA_MPS_PIPE_DIRECTORY=$mps_pipe CUDA_MPS_LOG_DIRECTORY=${CUDA_MPS_LOG_DIRECTORY:-/tmp/nvidia-mps-log}
    mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"
    trap stop_mps EXIT
    nvidia-cuda-mps-control -d || { echo "gpu-torch.sh: cannot start MPS" >&2; exit 1; }
  elif [ ! -S "$mps_pipe/control" ] && [ ! -p "$mps_pipe/control" ]; then
    echo "gpu-torch.sh: $RPG ranks per GPU in one process each need MPS, and none runs" \
         "($mps_pipe/control): give --mps start" >&2
    exit 2
  fi
fi
lib=()
[ -n "$NCCL_LIB" ] && lib=(--nccl-lib "$NCCL_LIB")
rc=0
for w in fsdp ddp; do
  [ "$WRAP" = both ] || [ "$WRAP" = "$w" ] || continue
  ex=$ROOT/examples/fsdp_llama.py
  [ "$w" = ddp ] && ex=$ROOT/examples/ddp_buckets.py
  echo "gpu-torch.sh: $w, $NPROC ranks, $RPG per GPU, reps ${REPS:-4} x ${STEPS:-300} steps" \
       "($(date -u +%H:%M:%S))"
  python3 "$ex" --plugin "$PLUGIN" "${lib[@]}" --modes nccl,autoccl --nproc "$NPROC" \
    --ranks-per-gpu "$RPG" --reps "${REPS:-4}" --steps "${STEPS:-300}" --warmup "${WARMUP:-10}" \
    --out "$OUTDIR/torch-$w.jsonl" "$@" >"$OUTDIR/torch-$w.log" 2>&1 || rc=1
  tail -3 "$OUTDIR/torch-$w.log"
done
exit $rc
