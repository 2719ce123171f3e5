#!/bin/sh
# GPU check of the profiler (docs/benchmarks-profiler.md). The binaries are
# Meson targets (profiler/gpucheck/), built with the rest by `meson compile`
# when CUDA is found; scripts/prepare-gpu-build.sh makes build-gpu/ and devlib/.
#   scripts/gpu-check-profiler.sh build [BUILD_DIR]  # here: meson compile the check
#   scripts/gpu-check-profiler.sh run [ARGS]         # on one GPU: attribution, overlap,
#                                                    # CUPTI vs CUDA events, latency
#   scripts/gpu-check-profiler.sh run --nccl         # on two GPUs: real ncclAllReduce
#   scripts/gpu-check-profiler.sh cost               # on one GPU: the cost and accuracy
#                                                    # of each profiler mode, JSON lines
# The output goes to stdout and, when $OUT is set, to $OUT/gpucheck-profiler*.txt
# (cost: $OUT/profiler-cost.jsonl).
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
mode=${1:-run}
[ $# -gt 0 ] && shift
B=${ACL_GPU_BUILD:-$here/build-gpu}
dir=${ACL_GPUCHECK_DIR:-$B/profiler/gpucheck}
cuda=${CUDA_HOME:-/usr/local/cuda}

build() {
  [ $# -gt 0 ] && B=$1 && dir=$B/profiler/gpucheck
  meson compile -C "$B" profiler/gpucheck/acl-gpucheck-profiler \
    profiler/gpucheck/acl-gpucheck-profiler-cost \
    profiler/gpucheck/acl-gpucheck-profiler-nccl
  echo "built in $dir"
}

libpath() {
  # NVLink multicast stays off (shared machines)
  export NCCL_NVLS_ENABLE=0
  lp=""
  for d in "$here/devlib" "$cuda/lib64" "$cuda/extras/CUPTI/lib64" /usr/local/cuda/lib64; do
    [ -d "$d" ] && lp="$lp:$d"
  done
  # pip wheels (PyTorch's cu13 stack): cublas, cupti, nccl
  for d in $(find /opt /usr/local/lib /usr/lib/python3* -maxdepth 8 \( -name 'libcublas.so.13' \
      -o -name 'libnccl.so.2' -o -name 'libcupti.so.13' -o -name 'libcudart.so.13' \) \
      2>/dev/null | xargs -r -n1 dirname | sort -u); do
    lp="$lp:$d"
  done
  export LD_LIBRARY_PATH="${lp#:}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null || true
}

run() {
  libpath
  bin="$dir/acl-gpucheck-profiler"
  log=gpucheck-profiler.txt
  if [ "${1:-}" = "--nccl" ]; then
    bin="$dir/acl-gpucheck-profiler-nccl"
    log=gpucheck-profiler-nccl.txt
  fi
  if [ -n "${OUT:-}" ]; then
    set +e
    # the check's own status, not tee's (a failed check used to pass here)
    timeout 240 "$bin" "$@" > "$OUT/$log" 2>&1
    rc=$?
    cat "$OUT/$log"
    set -e
    return $rc
  fi
  timeout 240 "$bin" "$@"
}

cost() {
  libpath
  python3 "$here/scripts/gpu-profiler-cost.py" "$dir/acl-gpucheck-profiler-cost" "$@"
}

case "$mode" in
  build) build "$@" ;;
  run) run "$@" ;;
  cost) cost "$@" ;;
  *) echo "usage: $0 build [BUILD_DIR] | run [--nccl] | cost [--reps N]" >&2; exit 2 ;;
esac
