#!/usr/bin/env bash
# Every GPU check in one call, for a machine with NVIDIA GPUs (no Criterion
# there: plain executables and scripts). Build on a machine with the CUDA
# toolkit first and bring the build folder along:
#
#   scripts/gpu-check.sh [BUILD_DIR]      (default build-gpu)
#
# With libmicrohttpd missing on the GPU machine, put libmicrohttpd.so.12 in
# devlib/ (scripts/prepare-gpu-build.sh does both). Logs and JSON go to
# $OUT (or ./gpu-out). Exit status: number of failed checks.
set -u
B=${1:-build-gpu}
OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT"
export LD_LIBRARY_PATH=$PWD/devlib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
PLUGIN=$PWD/$B/tuner/libnccl-tuner-autoccl.so
fails=0
ngpu=$(nvidia-smi -L 2>/dev/null | wc -l)
echo "== $(date -u +%FT%TZ) GPUs: $ngpu"
nvidia-smi -L

check() { # name, command...
  local name=$1; shift
  echo "== $name"
  if "$@" >"$OUT/$name.log" 2>&1; then echo "PASS $name"; else echo "FAIL $name (rc $?)"; fails=$((fails+1)); fi
  tail -n 25 "$OUT/$name.log"
}

check exports tests/plugin/check_exports.sh "$PLUGIN"

# NCCL loads the plugin as tuner and profiler (NCCL_DEBUG=INFO shows it), and
# the collectives still compute the right values.
if [ -x "$B/bench/autoccl-bench" ]; then
  load_check() {
    NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,TUNING,ENV NCCL_TUNER_PLUGIN=$PLUGIN \
      NCCL_PROFILER_PLUGIN=$PLUGIN AUTOCCL_HTTP_PORT=0 \
      "$B/bench/autoccl-bench" -C all_reduce -g "$ngpu" --single -b 64K -e 64M -f 4 -n 50 -w 5 -c 1 \
      > "$OUT/load.txt" 2>&1
    local rc=$?
    grep -E "TUNER/Plugin|PROFILER/Plugin|autoccl" "$OUT/load.txt" | head -20
    # NCCL's own lines, not ours: the tuner and the profiler both loaded
    grep -q "TUNER/Plugin: Using autoccl" "$OUT/load.txt" || { echo "no tuner load line"; return 1; }
    grep -q "PROFILER/Plugin: Loaded autoccl" "$OUT/load.txt" || { echo "no profiler load line"; return 1; }
    return $rc
  }
  check nccl-load load_check
  if [ "${SKIP_BENCH_SMOKE:-0}" != 1 ]; then
    check bench-smoke scripts/gpu-bench.sh --smoke --bin "$B/bench/autoccl-bench" --plugin "$PLUGIN" --out "$OUT/bench"
  fi
fi
# Profiler: CUPTI attribution, overlap, timing against CUDA events, overhead
# (Meson targets in $B/profiler/gpucheck).
if [ -x "$B/profiler/gpucheck/acl-gpucheck-profiler" ]; then
  check profiler env ACL_GPUCHECK_DIR="$PWD/$B/profiler/gpucheck" scripts/gpu-check-profiler.sh run
  if [ "$ngpu" -ge 2 ]; then
    check profiler-nccl env ACL_GPUCHECK_DIR="$PWD/$B/profiler/gpucheck" scripts/gpu-check-profiler.sh run --nccl
  fi
  # the cost and accuracy of each profiler mode (about 5 minutes)
  check profiler-cost env ACL_GPUCHECK_DIR="$PWD/$B/profiler/gpucheck" OUT="$OUT" \
    scripts/gpu-check-profiler.sh cost --reps 3
fi

# PyTorch (its own NCCL): bit-identical all-reduce results with and without
# the plugin, and training-step time with and without it.
if python3 -c "import torch; assert torch.cuda.is_available()" 2>/dev/null; then
  torch_bits() {
    python3 tests/gpu/torch_check.py allreduce --out "$OUT/torch-ar-default.json" --iters 150 --port 29611 &&
    NCCL_TUNER_PLUGIN=$PLUGIN NCCL_PROFILER_PLUGIN=$PLUGIN NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=TUNING \
      python3 tests/gpu/torch_check.py allreduce --out "$OUT/torch-ar-autoccl.json" --iters 150 --port 29612 \
      > "$OUT/torch-ar-autoccl.stdout" 2>&1 || return 1
    grep -m3 -E "TUNER/Plugin|autoccl" "$OUT/torch-ar-autoccl.stdout"
    python3 - "$OUT/torch-ar-default.json" "$OUT/torch-ar-autoccl.json" <<'PY'
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
da = {r: v["digest"] for r, v in a["ranks"].items()}
db = {r: v["digest"] for r, v in b["ranks"].items()}
print("world", a["world"], "nccl", a["nccl"], "identical", da == db)
sys.exit(0 if da == db else 1)
PY
  }
  check torch-bit-identical torch_bits
  torch_train() {
    python3 tests/gpu/torch_check.py train --out "$OUT/train-default.json" --iters 40 --port 29613 >/dev/null &&
    NCCL_TUNER_PLUGIN=$PLUGIN NCCL_PROFILER_PLUGIN=$PLUGIN \
      python3 tests/gpu/torch_check.py train --out "$OUT/train-autoccl.json" --iters 40 --port 29614 >/dev/null &&
    python3 - "$OUT/train-default.json" "$OUT/train-autoccl.json" <<'PY'
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
ma = max(v["step_median_s"] for v in a["ranks"].values())
mb = max(v["step_median_s"] for v in b["ranks"].values())
# a smoke bound for 40 steps; the A/B with an interval is scripts/gpu-torch.sh
ok = ma / mb >= 0.97
print(f"world {a['world']} step median default {ma*1e3:.1f} ms autoccl {mb*1e3:.1f} ms "
      f"ratio {ma/mb:.3f} ({'>=' if ok else 'below'} 0.97)")
sys.exit(0 if ok else 1)
PY
  }
  check torch-train torch_train
fi
echo "== failed checks: $fails"
exit $fails
