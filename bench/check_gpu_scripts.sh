#!/usr/bin/env bash
# The two-GPU scripts end to end without a GPU (EXTRA=--fake, tiny sizes):
# the parts of gpu-bench.sh that the next GPU run uses (one of each kind:
# ceiling-long is ceiling-short with --warmup-time, advise has its own test)
# exit 0 and leave their JSON lines and summary; gpu-record.sh leaves traces and compare records; a
# bad part is refused. usage: check_gpu_scripts.sh ROOT BENCH OUTDIR
set -u
ROOT=$1 BIN=$2 D=$3
rm -rf "$D"; mkdir -p "$D"
fail() { echo "FAIL: $*"; exit 1; }
export EXTRA=--fake SIZES="-b 64K -e 256K -f 4" REPS=1 WARMUP=5 ITERS=5 WARMUP_S=0.1 COLLS=all_gather
"$ROOT/scripts/gpu-bench.sh" --bin "$BIN" --out "$D/b" \
  --part long,ceiling-short,ceiling-gemm,single,torch > "$D/b.out" 2>&1 \
  || fail "gpu-bench.sh exit $? ($(tail -3 "$D/b.out"))"
n=$(grep -c '"kind":"compare"' "$D/b/matrix.jsonl")
[ "$n" = 4 ] || fail "gpu-bench.sh: $n compare records, wanted 4"
grep -q 'autoccl/ceiling' "$D/b/matrix-summary.md" || fail "summary lacks autoccl/ceiling"
grep -q 'PyTorch step needs GPUs, skipped' "$D/b/matrix.log" || fail "the torch part must say it was skipped under --fake"
"$ROOT/scripts/gpu-bench.sh" --bin "$BIN" --part nonsense > /dev/null 2>&1
[ $? = 2 ] || fail "a bad part must exit 2"
SWEEP_CH=0,32 SWEEP_REPS=1 SWEEP_WARMUP=2 "$ROOT/scripts/gpu-record.sh" --bin "$BIN" --part iso --out "$D/r" > "$D/r.out" 2>&1 \
  || fail "gpu-record.sh exit $?"
[ "$(grep -c '"sweep":\[' "$D/r/record-iso.jsonl")" = 1 ] || fail "record-iso.jsonl lacks the sweep"
tar -tf "$D/r/record-iso.tar" | grep -q 'iso-procs-all_gather/default-rep0.jsonl.gz' || fail "no default trace"
echo ok
