#!/usr/bin/env bash
# Lays out, in one small folder, what a one-GPU testbed call needs on a GPU
# machine (docs/benchmarks.md, "One GPU, several ranks"): a lean release
# build of autoccl-bench, its probe and the plugin (stripped), the CUDA
# runtime and libmicrohttpd, the scripts, the NCCL library's xz parts and a table that says
# NCCL's choice: 30 MB with the NCCL 2.30.7 parts.
#
#   scripts/prepare-gpu-carry.sh DEST [NCCL_PARTS_DIR]
#
# DEST is usually <checkout>/.gpucarry (ignored through .git/info/exclude);
# NCCL_PARTS_DIR holds libnccl.so.2.xz.part-* (default ../shared/gpu/nccl-2.30.7-sm90
# beside the checkout; "-" for none: then pass --nccl-lib on the GPU machine).
# Then, from the checkout's root on the GPU machine:
#   bash DEST/scripts/gpu-testbed.sh [--launch single|procs|both]
# The build folder is build-gpu-lean (kept between calls of this script).
set -eu
DEST=${1:?usage: prepare-gpu-carry.sh DEST [NCCL_PARTS_DIR]}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
PARTS=${2:-$ROOT/../shared/gpu/nccl-2.30.7-sm90}
B=$ROOT/build-gpu-lean
cuda=${CUDA_HOME:-/usr/local/cuda}
[ -d "$B" ] || meson setup "$B" "$ROOT" -Dcuda=enabled -Dtests=disabled -Dtui=disabled \
  -Dbuildtype=release -Dstrip=true -Dtoolkit="$cuda" > /dev/null
ninja -C "$B" bench/autoccl-bench bench/libautoccl-bench-probe.so tuner/libnccl-tuner-autoccl.so > /dev/null
rm -rf "$DEST"
mkdir -p "$DEST/build-gpu/bench" "$DEST/build-gpu/tuner" "$DEST/devlib" "$DEST/scripts" "$DEST/nccl"
cp "$B/bench/autoccl-bench" "$B/bench/libautoccl-bench-probe.so" "$DEST/build-gpu/bench/"
cp "$B/tuner/libnccl-tuner-autoccl.so" "$DEST/build-gpu/tuner/"
cp -L "$cuda/lib64/libcudart.so.13" "$DEST/devlib/"
# the plugin's endpoint (the example's and the A/B's account read it); the
# GPU machine has its dependencies (GnuTLS), not the library itself
cp -L /usr/lib/x86_64-linux-gnu/libmicrohttpd.so.12 "$DEST/devlib/"
for s in gpu-nccl.sh gpu-record.sh gpu-bench.sh gpu-summary.py gpu-testbed.sh; do
  cp "$ROOT/scripts/$s" "$DEST/scripts/"
done
if [ "$PARTS" != - ]; then
  ls "$PARTS"/libnccl.so.2.xz.part-* > /dev/null 2>&1 || { echo "prepare-gpu-carry.sh: no libnccl.so.2.xz.part-* in $PARTS" >&2; exit 2; }
  cp "$PARTS"/libnccl.so.2.xz.part-* "$DEST/nccl/"
fi
printf '# NCCL decides every call: the per-call cost of the plugin alone\n*  0  max  NCCL  -  0\n' \
  > "$DEST/nccl-table.txt"
du -sh "$DEST"
