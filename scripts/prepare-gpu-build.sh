#!/usr/bin/env bash
# Builds here for the GPU machine: a build folder with CUDA parts on, and
# devlib/ with the libraries the GPU machine lacks (libmicrohttpd). Then:
#   run(command="scripts/gpu-check.sh build-gpu", carry=["build-gpu","devlib"])
set -eu
B=${1:-build-gpu}
[ -d "$B" ] || meson setup "$B" -Dcuda=enabled -Dtests=disabled -Dtui=disabled
meson compile -C "$B"
ACL_GPUCHECK_DIR=$PWD/$B/gpucheck scripts/gpu-check-profiler.sh build
mkdir -p devlib
cp -L /usr/lib/x86_64-linux-gnu/libmicrohttpd.so.12 devlib/
du -sh "$B" devlib
