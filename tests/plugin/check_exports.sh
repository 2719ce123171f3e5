#!/bin/sh
# The plugin must export exactly its seven NCCL ABI symbols (nm -D).
set -eu
got=$(nm -D --defined-only "$1" | awk '{print $3}' | sort | tr '\n' ' ')
want="ncclProfiler_v5 ncclProfiler_v6 ncclTunerPlugin_v2 ncclTunerPlugin_v3 ncclTunerPlugin_v4 ncclTunerPlugin_v5 ncclTunerPlugin_v6 "
if [ "$got" != "$want" ]; then
  echo "exported: $got"; echo "expected: $want"; exit 1
fi
echo "exports ok: $got"
