#!/bin/sh
# Which plugin ABI a given NCCL takes from autoccl, on one GPU: one rank,
# 100 AllReduce calls, NCCL's own log of the plugin lookup.
#   scripts/gpu-nccl-load.sh NCCL_BUILD_DIR [PLUGIN]
# NCCL_BUILD_DIR holds include/nccl.h and lib/libnccl.so (NCCL's `make
# src.build` output, e.g. build-nccl230/out); PLUGIN defaults to the
# build-gpu plugin. Writes $OUT/nccl-load.log when $OUT is set.
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
nccl=${1:?usage: $0 NCCL_BUILD_DIR [PLUGIN]}
plugin=${2:-$here/build-gpu/tuner/libnccl-tuner-autoccl.so}
cuda=${CUDA_HOME:-/usr/local/cuda}
bin=$(mktemp -d)/nccl_load
gcc "$here/tests/gpu/nccl_load.c" -o "$bin" -I"$nccl/include" -I"$cuda/include" \
  -L"$nccl/lib" -L"$cuda/lib64" -lnccl -lcudart
log=${OUT:-$(dirname "$bin")}/nccl-load.log
LD_LIBRARY_PATH="$nccl/lib:$here/devlib:$cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
  NCCL_DEBUG=INFO NCCL_TUNER_PLUGIN="$plugin" NCCL_PROFILER_PLUGIN="$plugin" \
  "$bin" > "$log" 2>&1 || { cat "$log"; echo "FAIL: the program failed" >&2; exit 1; }
grep -E "NCCL version|Plugin: (Loaded|Using)" "$log"
grep -q "TUNER/Plugin: Using autoccl" "$log" || { echo "FAIL: NCCL did not take autoccl's tuner" >&2; exit 1; }
echo "PASS"
