#!/usr/bin/env bash
# The one-GPU testbed in one device call (docs/benchmarks.md, "One GPU,
# several ranks"): NCCL restored (or given), then per launch model the
# recorded matrix (scripts/gpu-record.sh: NCCL's default and the autoccl
# plugin as long runs, the same-run sweep Ring/Tree x LL/LL128/Simple x
# {NCCL's, 16, 32, 64} channels, every call traced) and the per-call cost at
# 64 KiB (NCCL alone against table mode saying NCCL, 10,000 calls, 15 reps:
# each process runs at its own level, so 3 cannot settle the 1 us target).
# Run from the folder scripts/prepare-gpu-carry.sh made, on the GPU machine:
#
#   bash .gpucarry/scripts/gpu-testbed.sh [--launch single|procs|both] [--nccl-lib DIR]
#                                         [--ranks-per-gpu K] [--no-cost] [--reports]
#
# --launch (default both, one process first): procs starts MPS itself (MPS=start).
# --nccl-lib DIR: an NCCL library folder; default: restore <carry>/nccl/*.xz.part-*.
# --ranks-per-gpu K (default 2): ranks = K on one GPU.
# --reports: every process of the recorded matrix writes its job report
# (AUTOCCL_REPORT), and they go into reports-iso.tar under reports-<launch>/
# (one file per process is more than the device tool returns; a tar of
# their own, so that they come back when the traces' tar is too big; with
# both launch models that is 10 files, more than the device tool returns:
# run one launch model per call); scripts/gpu-summary.py reports-iso.tar
# counts each workload's end states.
# Environment, as gpu-record.sh: SIZES ("-b 64K -e 256M -f 4"), COLLS, WARMUP_S (2),
# SWEEP_CH (0,16,32,64), CHILD_TIMEOUT (60), REC_LIMIT (400 s per launch model),
# COST_ITERS (10000 timed calls of the cost run), COST_REPS (15 processes per mode
# of the cost run; its time limit is 20 s + 8 s per process),
# CPU_BIND: unset, every process runs where the system puts it; a CPU list
# (taskset's, "0-7"), or "gpu": the CPUs local to GPU 0 (its PCI device's
# local_cpulist in sysfs), for every process of the run (each record's
# `cpus` says what they had). On one H100 the same 64 KiB AllReduce took
# 18-20 or 25-53 us a call from one process to the next.
# EXTRA (--fake: no GPU, no NCCL restore). 2026-12-01 on one H200: one process
# 304 s, one process per rank 177 s, each cost run about 10 s at 3 reps (about 50 s at 15).
# Summary of a cost run, with its bootstrap interval: scripts/gpu-summary.py cost.jsonl.
# Writes $OUT/<launch>/record-iso.{jsonl,log,tar} and $OUT/<launch>/cost.jsonl
# (8 files for both launch models; the cost run's traces go into the tar).
# A tar over TAR_PART (15M, split's sizes) is cut into record-iso.tar.part-0,
# -1, ... (the device tool returns files of at most 16 MiB): cat them back
# together in order.
set -u
H=$(cd "$(dirname "$0")/.." && pwd)
LAUNCH=both NCCLLIB="" K=2 COST=1 REPORTS=0
while [ $# -gt 0 ]; do
  case "$1" in
    --launch) LAUNCH=$2; shift ;;
    --nccl-lib) NCCLLIB=$2; shift ;;
    --ranks-per-gpu) K=$2; shift ;;
    --no-cost) COST=0 ;;
    --reports) REPORTS=1 ;;
    -h|--help) sed -n '2,/^set -u/p' "$0" | grep '^#'; exit 0 ;;
    *) echo "gpu-testbed.sh: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done
case "$LAUNCH" in single) L="single" ;; procs) L="procs" ;; both) L="single procs" ;;
  *) echo "gpu-testbed.sh: --launch single|procs|both" >&2; exit 2 ;; esac
CR=${COST_REPS:-15}
case "$CR" in ''|*[!0-9]*|0*) echo "gpu-testbed.sh: COST_REPS must be a positive integer" >&2; exit 2 ;; esac
TP=${TAR_PART:-15M}
TPB=$(numfmt --from=iec "$TP" 2>/dev/null) && [ "$TPB" -gt 0 ] 2>/dev/null ||
  { echo "gpu-testbed.sh: TAR_PART must be a size such as 15M (split's sizes), not '$TP'" >&2; exit 2; }
OUTDIR=${OUT:-$H/testbed-out}
BIND=()
case "${CPU_BIND:-}" in
  "") ;;
  gpu)
    bus=$(nvidia-smi --query-gpu=pci.bus_id --format=csv,noheader -i 0 2>/dev/null | tr 'A-F' 'a-f')
    bus=${bus/#00000000:/0000:}
    cl=$(cat "/sys/bus/pci/devices/$bus/local_cpulist" 2>/dev/null)
    [ -n "$cl" ] || { echo "gpu-testbed.sh: CPU_BIND=gpu: no local_cpulist for GPU 0 ('$bus')" >&2; exit 2; }
    BIND=(taskset -c "$cl") ;;
  *[!0-9,-]*) echo "gpu-testbed.sh: CPU_BIND must be gpu or a CPU list such as 0-7, not '$CPU_BIND'" >&2; exit 2 ;;
  *) BIND=(taskset -c "$CPU_BIND") ;;
esac
if [ ${#BIND[@]} -gt 0 ]; then
  command -v taskset > /dev/null || { echo "gpu-testbed.sh: CPU_BIND needs taskset" >&2; exit 2; }
  "${BIND[@]}" true 2> /dev/null || { echo "gpu-testbed.sh: CPU_BIND: taskset -c ${BIND[2]} fails here" >&2; exit 2; }
fi
EXTRA=${EXTRA:-}
FAKE=0; [ "${EXTRA#*--fake}" != "$EXTRA" ] && FAKE=1
T0=$(date +%s)
NARG=()
if [ "$FAKE" = 0 ]; then
  if [ -n "$NCCLLIB" ]; then
    NCCL=$("$H/scripts/gpu-nccl.sh" --lib "$NCCLLIB") || exit 2
  else
    NCCL=$("$H/scripts/gpu-nccl.sh" --parts "$H/nccl" --prefix /tmp/nccl-testbed) || exit 2
  fi
  NARG=(--nccl "$NCCL")
  export LD_LIBRARY_PATH=$NCCL:$H/devlib:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
fi
export NCCL_NVLS_ENABLE=${NCCL_NVLS_ENABLE:-0} NCCL_MULTI_RANK_GPU_ENABLE=1
export SIZES=${SIZES:--b 64K -e 256M -f 4} SWEEP_CH=${SWEEP_CH:-0,16,32,64} SWEEP_REPS=${SWEEP_REPS:-1}
export WARMUP_S=${WARMUP_S:-2} CHILD_TIMEOUT=${CHILD_TIMEOUT:-60}
B=$H/build-gpu/bench/autoccl-bench
rc=0
for l in $L; do
  D=$OUTDIR/$l
  mkdir -p "$D"
  MPS=detect; [ "$l" = procs ] && [ "$FAKE" = 0 ] && MPS=start
  RD="" REP=()
  if [ "$REPORTS" = 1 ]; then
    RD=$(mktemp -d "${TMPDIR:-/tmp}/acl-reports.XXXXXX")
    mkdir -p "$RD/reports-$l"
    REP=("AUTOCCL_REPORT=$RD/reports-$l/report-%p.json")
  fi
  env "${REP[@]}" MPS=$MPS timeout -k 5 "${REC_LIMIT:-400}" ${BIND[@]+"${BIND[@]}"} \
    "$H/scripts/gpu-record.sh" --part iso --launch "$l" \
    --gpus "$K" --ranks-per-gpu "$K" "${NARG[@]}" --out "$D" || rc=1
  if [ -n "$RD" ]; then
    tar -cf "$D/reports-iso.tar" -C "$RD" "reports-$l"
    echo "# $l: $(find "$RD" -name 'report-*.json' | wc -l) job reports in reports-iso.tar" | tee -a "$D/record-iso.log"
    rm -rf "$RD"
  fi
  echo "# $l: record done at $(( $(date +%s) - T0 )) s" | tee -a "$D/record-iso.log"
  [ "$COST" = 1 ] || continue
  CT=$(mktemp -d "${TMPDIR:-/tmp}/acl-cost.XXXXXX")
  timeout -k 5 $(( 20 + CR * 2 * 8 )) ${BIND[@]+"${BIND[@]}"} "$B" -g "$K" --ranks-per-gpu "$K" --"$l" --mps "$MPS" -b 64K -e 64K \
    --compare default,table --table "$H/nccl-table.txt" --reps "$CR" -w 1000 -n "${COST_ITERS:-10000}" \
    --trace "$CT/cost-$l" --child-timeout 30 --json -q $EXTRA > "$CT/out" 2>&1 || rc=1
  cat "$CT/out" >> "$D/record-iso.log"
  last=$(tail -n 1 "$CT/out")
  case "$last" in "{"*) echo "$last" > "$D/cost.jsonl" ;; esac
  [ -f "$D/record-iso.tar" ] && [ -d "$CT/cost-$l" ] && tar -rf "$D/record-iso.tar" -C "$CT" "cost-$l"
  rm -rf "$CT"
  echo "# $l: cost done at $(( $(date +%s) - T0 )) s" | tee -a "$D/record-iso.log"
done
for l in $L; do
  T=$OUTDIR/$l/record-iso.tar
  [ -f "$T" ] && [ "$(stat -c %s "$T")" -gt "$TPB" ] || continue
  split -b "$TP" -d -a 1 "$T" "$T.part-" && rm -f "$T" &&
    echo "# $l: record-iso.tar cut into $(ls "$T".part-* | wc -l) parts" | tee -a "$OUTDIR/$l/record-iso.log"
done
exit $rc
