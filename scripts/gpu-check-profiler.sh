#!/bin/sh
# GPU check of the profiler (docs/benchmarks-profiler.md).
#   scripts/gpu-check-profiler.sh build       # here: compile into build-prof/gpucheck
#   scripts/gpu-check-profiler.sh run         # on one GPU: attribution, overlap,
#                                             # CUPTI vs CUDA events, overhead, latency
#   scripts/gpu-check-profiler.sh run --nccl  # on two GPUs: real ncclAllReduce,
#                                             # with and without a concurrent GEMM
# Device recipe (one call): build here, then
#   run(command="scripts/gpu-check-profiler.sh run", carry=["build-prof/gpucheck"])
# The output goes to stdout and, when $OUT is set, to $OUT/gpucheck-profiler*.txt.
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
dir=${ACL_GPUCHECK_DIR:-$here/build-prof/gpucheck}
cuda=${CUDA_HOME:-/usr/local/cuda}
mode=${1:-run}
[ $# -gt 0 ] && shift

build() {
  mkdir -p "$dir/lib" "$dir/obj"
  cflags="-std=c11 -D_GNU_SOURCE -O2 -Wall -Wextra -Werror -fvisibility=hidden -I$here -I$cuda/include"
  "$cuda/bin/nvcc" -O2 -gencode arch=compute_90,code=sm_90 -gencode arch=compute_90,code=compute_90 \
    -c "$here/profiler/gpucheck/fake_kernels.cu" -o "$dir/obj/fake_kernels.o"
  for f in core/config.c core/log.c core/strbuf.c core/types.c profiler/attrib.c profiler/ncclev.c \
           profiler/overlap.c profiler/profiler.c; do
    cc $cflags -c "$here/$f" -o "$dir/obj/$(basename "$f" .c).o"
  done
  cc $cflags -DACL_HAVE_CUPTI=1 -c "$here/profiler/prof_cupti.c" -o "$dir/obj/prof_cupti.o"
  libs="-L$cuda/lib64 -lcudart_static -ldl -lrt -lpthread -lm"
  objs="$dir/obj/fake_kernels.o $(ls "$dir"/obj/*.o | grep -v fake_kernels)"
  cc $cflags -c "$here/profiler/gpucheck/gpucheck.c" -o "$dir/gpucheck.o"
  # the C++ runtime pieces nvcc's object needs come from libstdc++
  cc -o "$dir/acl-gpucheck-profiler" "$dir/gpucheck.o" $objs $libs -lstdc++
  cc $cflags -DACL_CHECK_NCCL=1 -c "$here/profiler/gpucheck/gpucheck.c" -o "$dir/gpucheck-nccl.o"
  cc $cflags -c "$here/profiler/gpucheck/nccl_shim.c" -o "$dir/nccl_shim.o"
  cc -o "$dir/acl-gpucheck-profiler-nccl" "$dir/gpucheck-nccl.o" "$dir/nccl_shim.o" $objs $libs \
    -lnccl -lstdc++
  # a fallback libcupti in case the device image has none where we look
  cp -L "$cuda/lib64/libcupti.so.13" "$dir/lib/"
  echo "built in $dir"
}

run() {
  # NVLink multicast stays off (shared machines)
  export NCCL_NVLS_ENABLE=0
  libpath=""
  for d in "$cuda/lib64" "$cuda/extras/CUPTI/lib64" /usr/local/cuda/lib64; do
    [ -d "$d" ] && libpath="$libpath:$d"
  done
  # pip wheels (PyTorch's cu13 stack): cublas, cupti, nccl
  for d in $(find /opt /usr/local/lib /usr/lib/python3* -maxdepth 8 \( -name 'libcublas.so.13' \
      -o -name 'libnccl.so.2' -o -name 'libcupti.so.13' \) 2>/dev/null | xargs -r -n1 dirname | sort -u); do
    libpath="$libpath:$d"
  done
  export LD_LIBRARY_PATH="${libpath#:}:$dir/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null || true
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

case "$mode" in
  build) build ;;
  run) run "$@" ;;
  *) echo "usage: $0 build | run [--nccl]" >&2; exit 2 ;;
esac
