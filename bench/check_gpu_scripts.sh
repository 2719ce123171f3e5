#!/usr/bin/env bash
# The two-GPU scripts end to end without a GPU (EXTRA=--fake, tiny sizes):
# the parts of gpu-bench.sh that the next GPU run uses (one of each kind:
# ceiling-long is ceiling-short with --warmup-time, advise has its own test)
# exit 0 and leave their JSON lines and summary; gpu-record.sh leaves traces and compare records, also
# with two ranks on one GPU and one process; a bad part is refused; gpu-nccl.sh restores a library
# from xz parts and checks its sha256, and the scripts refuse an --nccl folder without one;
# gpu-testbed.sh's CPU_BIND puts every process on the CPUs given, and the records say so.
# usage: check_gpu_scripts.sh ROOT BENCH OUTDIR
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
SWEEP_CH=0,64 SWEEP_REPS=1 SWEEP_WARMUP=2 "$ROOT/scripts/gpu-record.sh" --bin "$BIN" --part iso --launch single \
  --ranks-per-gpu 2 --out "$D/r1" > "$D/r1.out" 2>&1 || fail "gpu-record.sh --ranks-per-gpu 2 exit $?"
grep -q '"launch":"single","inplace":false.*"ranks_per_gpu":2,"gpus":1' "$D/r1/record-iso.jsonl" \
  || fail "one-GPU record lacks ranks_per_gpu 2 on 1 GPU, one process"
tar -tf "$D/r1/record-iso.tar" | grep -q 'iso-single-all_gather/ring-ll-64-rep0.jsonl.gz' || fail "no 64-channel sweep trace"
# gpu-nccl.sh: xz parts -> DIR/lib/libnccl.so.2 (a stand-in file), sha256 checked, --lib finds it
mkdir -p "$D/parts"; head -c 100000 /dev/urandom > "$D/lib.bin"
xz -c "$D/lib.bin" > "$D/whole.xz" && split -b 30000 "$D/whole.xz" "$D/parts/libnccl.so.2.xz.part-"
sum=$(sha256sum "$D/lib.bin" | cut -d' ' -f1)
out=$("$ROOT/scripts/gpu-nccl.sh" --parts "$D/parts" --prefix "$D/nccl" --sha256 "$sum" 2> "$D/n.err")
[ $? = 0 ] || fail "gpu-nccl.sh --parts failed: $(cat "$D/n.err")"
[ "$out" = "$(cd "$D/nccl/lib" && pwd)" ] && cmp -s "$D/lib.bin" "$D/nccl/lib/libnccl.so.2" \
  || fail "gpu-nccl.sh --parts printed '$out' or restored the wrong bytes"
[ "$("$ROOT/scripts/gpu-nccl.sh" --lib "$D/nccl")" = "$out" ] || fail "gpu-nccl.sh --lib DIR/.. must find DIR/lib"
"$ROOT/scripts/gpu-nccl.sh" --parts "$D/parts" --prefix "$D/nccl2" --sha256 0000 > /dev/null 2>&1
[ $? = 2 ] || fail "gpu-nccl.sh must refuse a wrong sha256"
"$ROOT/scripts/gpu-nccl.sh" --lib "$D" > /dev/null 2>&1; [ $? = 2 ] || fail "gpu-nccl.sh --lib without a library must exit 2"
"$ROOT/scripts/gpu-record.sh" --bin "$BIN" --nccl "$D/parts" > /dev/null 2>&1; [ $? = 2 ] || fail "gpu-record.sh --nccl without a library must exit 2"
"$ROOT/scripts/gpu-bench.sh" --bin "$BIN" --nccl "$D/parts" > /dev/null 2>&1; [ $? = 2 ] || fail "gpu-bench.sh --nccl without a library must exit 2"
# gpu-testbed.sh from a carry folder laid out as prepare-gpu-carry.sh does: both launch models,
# the records with two ranks on one GPU, the cost records (default against table, COST_REPS
# processes each) with their summary, traces
C=$D/carry; mkdir -p "$C/scripts" "$C/build-gpu"
for s in gpu-nccl.sh gpu-record.sh gpu-bench.sh gpu-summary.py gpu-testbed.sh; do cp "$ROOT/scripts/$s" "$C/scripts/"; done
ln -s "$(dirname "$BIN")" "$C/build-gpu/bench"; ln -s "$(dirname "$(dirname "$BIN")")/tuner" "$C/build-gpu/tuner"
printf '*  0  max  NCCL  -  0\n' > "$C/nccl-table.txt"
TAR_PART=lots OUT=$D/bad bash "$C/scripts/gpu-testbed.sh" > "$D/bad.out" 2>&1
[ $? = 2 ] && grep -q "TAR_PART must be a size" "$D/bad.out" && [ ! -e "$D/bad" ] || fail "gpu-testbed.sh: TAR_PART=lots not refused"
OUT=$D/tb SWEEP_ALGOS=Ring SWEEP_PROTOS=LL SWEEP_CH=0,64 SWEEP_WARMUP=2 COST_ITERS=20 COST_REPS=4 TAR_PART=8K \
  bash "$C/scripts/gpu-testbed.sh" --reports > "$D/tb.out" 2>&1 \
  || fail "gpu-testbed.sh exit $? ($(tail -3 "$D/tb.out"))"
for l in single procs; do
  grep -q "\"launch\":\"$l\".*\"ranks_per_gpu\":2,\"gpus\":1" "$D/tb/$l/record-iso.jsonl" || fail "testbed $l: no one-GPU record"
  grep -q '"modes":{"default".*"table"' "$D/tb/$l/cost.jsonl" || fail "testbed $l: no cost record"
  grep -q '"reps":4,' "$D/tb/$l/cost.jsonl" || fail "testbed $l: the cost run must take COST_REPS"
  python3 "$C/scripts/gpu-summary.py" "$D/tb/$l/cost.jsonl" | grep -q '^table - default: .* 95 % interval .*target <= 1.0 us: \*\*' \
    || fail "testbed $l: the cost summary lacks its interval and verdict"
  # TAR_PART=8K: the traces' tar comes in parts, which cat puts back together
  [ ! -e "$D/tb/$l/record-iso.tar" ] && [ -f "$D/tb/$l/record-iso.tar.part-1" ] || fail "testbed $l: the tar was not cut"
  cat "$D/tb/$l/record-iso.tar.part-"* | tar -tf - | grep -q "cost-$l/table-rep3.jsonl.gz" || fail "testbed $l: no cost traces"
  tar -tf "$D/tb/$l/reports-iso.tar" | grep -q "^reports-$l/$" || fail "testbed $l: --reports left no reports folder in reports-iso.tar"
done
# CPU_BIND: every process of the run on the CPUs given (the records' cpus), a bad value refused
cpu=$(python3 -c 'import os; print(min(os.sched_getaffinity(0)))')
OUT=$D/bind CPU_BIND=$cpu SWEEP_ALGOS=Ring SWEEP_PROTOS=LL SWEEP_CH=0 SWEEP_WARMUP=2 COST_ITERS=20 COST_REPS=2 \
  bash "$C/scripts/gpu-testbed.sh" --launch single > "$D/bind.out" 2>&1 || fail "gpu-testbed.sh CPU_BIND=$cpu exit $?"
for f in record-iso.jsonl cost.jsonl; do
  grep -q "\"cpus\":\"$cpu\"" "$D/bind/single/$f" || fail "CPU_BIND=$cpu: $f does not say cpus $cpu"
done
CPU_BIND=most OUT=$D/bind2 bash "$C/scripts/gpu-testbed.sh" --launch single > "$D/bind2.out" 2>&1
[ $? = 2 ] && grep -q "CPU_BIND must be gpu or a CPU list" "$D/bind2.out" || fail "CPU_BIND=most not refused"
# the job reports' summary: one row per workload and its end states
mkdir -p "$D/rt/reports-procs"
w='"collective":"AllReduce","bytes":1048576'
echo "{\"kind\":\"autoccl-job-report\",\"workloads\":[{$w,\"state\":\"converged\"}]}" > "$D/rt/reports-procs/report-11.json"
echo "{\"kind\":\"autoccl-job-report\",\"workloads\":[{$w,\"state\":\"waiting-budget\",\"budget_wait_calls\":2052}]}" \
  > "$D/rt/reports-procs/report-12.json"
tar -cf "$D/rt/r.tar" -C "$D/rt" reports-procs
python3 "$ROOT/scripts/gpu-summary.py" "$D/rt/r.tar" | grep -q '^| AllReduce 1M | 2 | 1 | 1 | 2052 |$' \
  || fail "gpu-summary.py: the job reports' table ($(python3 "$ROOT/scripts/gpu-summary.py" "$D/rt/r.tar" 2>&1 | tail -2))"
# the PyTorch A/B's summary lines: one row per mode, the interval and the
# last quarter's ratio beside the ratio over all steps (re-tunes unknown here:
# no job reports)
echo '{"kind":"torch_step","wrap":"ddp","mode":"autoccl","median_step_s":0.1165,"reps":2,"steps":300,"ratio_vs_nccl":1.025,"ratio_low":1.022,"ratio_high":1.029,"ratio_tail_vs_nccl":1.05,"time_saved_s":-0.005,"exposed_comm_share":0.233,"env":[]}' \
  > "$D/rt/torch-ddp.jsonl"
out=$(python3 "$ROOT/scripts/gpu-summary.py" "$D/rt/torch-ddp.jsonl")
echo "$out" | grep -q '^#### PyTorch step, DDP$' && echo "$out" | grep -q '^| ddp | autoccl | 0.1165 | 2 x 300 | 1.025 (1.022-1.029) | 1.050 | -0.005 | - | 0.233 | ' \
  || fail "gpu-summary.py: the PyTorch table ($(echo "$out" | tail -2))"
# scripts/trace-stats.py on a recorded plugin trace, alone and inside a tar
TR="$ROOT/docs/data/h200-1gpu-2026-12-04a-procs-all_reduce-plugin-r0.jsonl.gz"
mkdir -p "$D/ts/iso-procs-all_reduce" && cp "$TR" "$D/ts/iso-procs-all_reduce/autoccl-rep0-plugin-r0.jsonl.gz"
tar -cf "$D/ts/r.tar" -C "$D/ts" iso-procs-all_reduce
for src in "$TR" "$D/ts/r.tar"; do
  out=$(python3 "$ROOT/scripts/trace-stats.py" --bytes 1048576 "$src") || fail "trace-stats.py $src: exit $?"
  echo "$out" | grep -q '^| NCCL | cupti | 3239 | 13.86 |' || fail "trace-stats.py $src: no NCCL row ($(echo "$out" | head -c 300))"
  echo "$out" | grep -q 'decisions (call: phase config): 0: warmup NCCL, .*\.\.\. [0-9]* more \.\.\.' \
    || fail "trace-stats.py $src: no shortened decision list"
  echo "$out" | grep -q '^measuring from call 12528 (the trace reaches call 126488)$' \
    || fail "trace-stats.py $src: when the workload began measuring"
done
python3 "$ROOT/scripts/trace-stats.py" --bytes many "$TR" 2>&1 | grep -q 'whole number' || fail "trace-stats.py: --bytes many accepted"
# gpu-torch.sh --mps start: the daemon it starts lives in a private folder,
# told to quit and removed after the run (a quit daemon leaves its socket,
# which later tools took for a running one); without --mps, a running
# daemon's control socket is accepted. Stand-ins for MPS and Python.
FB="$D/fakebin"; mkdir -p "$FB" "$D/mt"
cat > "$FB/nvidia-cuda-mps-control" <<'EOS'
#!/usr/bin/env bash
if [ "${1:-}" = -d ]; then echo "$CUDA_MPS_PIPE_DIRECTORY" > "$MT/pipe"; : > "$CUDA_MPS_PIPE_DIRECTORY/control"
else cat >> "$MT/quit"; fi
EOS
cat > "$FB/python3" <<'EOS'
#!/usr/bin/env bash
[ "$*" = "-c import torch" ] && exit 0
echo "$CUDA_MPS_PIPE_DIRECTORY" > "$MT/seen"
EOS
chmod +x "$FB/nvidia-cuda-mps-control" "$FB/python3"
env -u CUDA_MPS_PIPE_DIRECTORY -u CUDA_MPS_LOG_DIRECTORY PATH="$FB:$PATH" MT="$D/mt" TMPDIR="$D/mt" \
  "$ROOT/scripts/gpu-torch.sh" --plugin "$BIN" --wrap ddp --ranks-per-gpu 2 --mps start --out "$D/mt/o" \
  > "$D/mt/out" 2>&1 || fail "gpu-torch.sh --mps start exit $? ($(tail -2 "$D/mt/out"))"
p=$(cat "$D/mt/pipe" 2>/dev/null)
case "$p" in "$D/mt/gpu-torch-mps."*/pipe) ;; *) fail "gpu-torch.sh: MPS pipe folder '$p', wanted a private one under TMPDIR";; esac
[ "$(cat "$D/mt/seen")" = "$p" ] || fail "gpu-torch.sh: the example saw pipe '$(cat "$D/mt/seen")', not '$p'"
grep -q quit "$D/mt/quit" 2>/dev/null || fail "gpu-torch.sh: the daemon was not told to quit"
[ ! -e "$p" ] || fail "gpu-torch.sh: its MPS folder $p stays after the run"
mkdir -p "$D/mt/run"; python3 -c 'import socket,sys; s=socket.socket(socket.AF_UNIX); s.bind(sys.argv[1])' "$D/mt/run/control"
env PATH="$FB:$PATH" MT="$D/mt" CUDA_MPS_PIPE_DIRECTORY="$D/mt/run" \
  "$ROOT/scripts/gpu-torch.sh" --plugin "$BIN" --wrap ddp --ranks-per-gpu 2 --out "$D/mt/o" \
  > "$D/mt/out2" 2>&1 || fail "gpu-torch.sh with a daemon's socket: exit $? ($(tail -2 "$D/mt/out2"))"
# 8 files for both launch models; --reports adds one per launch model and a
# big tar its parts (the script says: one launch model per call then)
n=$(find "$D/tb" -type f ! -name 'reports-iso.tar' ! -name '*.part-*' | wc -l)
[ "$n" -le 8 ] || fail "gpu-testbed.sh leaves $n files (the device tool returns 8)"
echo ok
