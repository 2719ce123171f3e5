#!/usr/bin/env bash
# Builds here for the GPU machine: a build folder with the CUDA parts on (the
# GPU checks are Meson targets in it), and devlib/ with the libraries the GPU
# machine may lack (libmicrohttpd, the CUDA runtime, CUPTI). Then:
#   run(command="scripts/gpu-check.sh build-gpu", carry=["build-gpu","devlib"])
set -eu
B=${1:-build-gpu}
cuda=${CUDA_HOME:-/usr/local/cuda}
[ -d "$B" ] || meson setup "$B" -Dcuda=enabled -Dtests=disabled -Dtui=disabled \
  -Dtoolkit="$cuda"
meson compile -C "$B"
for t in acl-gpucheck-profiler acl-gpucheck-profiler-nccl acl-gpucheck-profiler-cost; do
  [ -x "$B/profiler/gpucheck/$t" ] || { echo "missing $B/profiler/gpucheck/$t" >&2; exit 1; }
done
mkdir -p devlib
cp -L /usr/lib/x86_64-linux-gnu/libmicrohttpd.so.12 devlib/
for l in libcudart.so.13 libcupti.so.13; do
  cp -L "$cuda/lib64/$l" devlib/
done
du -sh "$B" devlib
