#!/usr/bin/env bash
# One GPU: NCCL's profiler API events and graphCaptured (tests/gpu/capture_events.c).
# Build here (needs CUDA's headers with nccl.h), into DIR (default build-capture-gpu):
#   scripts/gpu-capture-events.sh build [DIR]
# then on the GPU machine, from the repository root:
#   scripts/gpu-capture-events.sh run [DIR]    (JSON on stdout)
set -eu
cmd=${1:-}
D=${2:-build-capture-gpu}
cuda=${CUDA_HOME:-/usr/local/cuda}
case "$cmd" in
build)
  mkdir -p "$D"
  cc -O2 -Wall -shared -fPIC -I. -o "$D/libacl-capture-prof.so" tests/gpu/capture_prof.c
  cc -O2 -Wall -I"$cuda/include" -o "$D/capture_events" tests/gpu/capture_events.c \
    -L"$cuda/lib64" -lnccl -lcudart -ldl -Wl,-rpath,'$ORIGIN'
  cp -L "$cuda/lib64/libcudart.so.13" "$D/"
  ;;
run)
  "$D/capture_events" "$PWD/$D/libacl-capture-prof.so"
  ;;
*)
  echo "usage: $0 build|run [DIR]" >&2
  exit 2
  ;;
esac
