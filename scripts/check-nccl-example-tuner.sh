#!/bin/sh
# The two-way check of docs/tables.md: builds NCCL's example tuner from an
# NCCL source tree and asks it and autoccl (static mode) about the same
# calls with one table; any disagreement on algorithm, protocol or a set
# channel count fails.
#
# usage: scripts/check-nccl-example-tuner.sh NCCL_SRC TABLE [NRANKS NNODES] [BUILD_DIR]
set -eu
src=$1 table=$2 nranks=${3:-2} nnodes=${4:-1} build=${5:-build}
ex=$src/plugins/tuner/example
[ -d "$ex" ] || ex=$src/ext-tuner/example # NCCL 2.28.x and older
if [ ! -f "$ex/plugin.c" ]; then
  echo "no example tuner under $src (plugins/tuner/example or ext-tuner/example)" >&2
  exit 2
fi
# NCCL 2.28.x's example indexes the cost table through float** and crashes
# on the first rule that matches; NCCL's master casts it to float (*)[3].
if ! grep -q 'float (\*table)\[NCCL_NUM_PROTOCOLS\]' "$ex/plugin.c"; then
  echo "$ex/plugin.c indexes the cost table as float** (NCCL 2.28.x): it crashes on a" \
    "matching rule; use an NCCL tree whose example casts it (master)" >&2
  exit 2
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cc -I"$ex/nccl" -fPIC -shared -o "$tmp/libnccl-tuner-example.so" "$ex/plugin.c"
"$build/tests/plugin/nccl-example-check" "$build/tuner/libnccl-tuner-autoccl.so" \
  "$tmp/libnccl-tuner-example.so" "$table" "$nranks" "$nnodes"
