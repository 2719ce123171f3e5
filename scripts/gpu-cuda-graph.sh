#!/bin/sh
# The CUDA-graph check on two GPUs (README, CUDA graphs): the same captured
# all_reduce run with the plugin off and on (online, exploring at capture),
# then compared: bit-identical results, replay time >= 0.99x off.
# Writes OUT/cuda-graph-{off,on,verdict}.json.
#
# usage: scripts/gpu-cuda-graph.sh PLUGIN_SO OUT_DIR
set -eu
plugin=$1 out=$2
mkdir -p "$out"
python3 tests/gpu/cuda_graph.py run --out "$out/cuda-graph-off.json" --port 29621
NCCL_TUNER_PLUGIN=$plugin NCCL_PROFILER_PLUGIN=$plugin AUTOCCL_MODE=online \
  python3 tests/gpu/cuda_graph.py run --out "$out/cuda-graph-on.json" --port 29622
python3 tests/gpu/cuda_graph.py compare "$out/cuda-graph-off.json" "$out/cuda-graph-on.json" \
  --out "$out/cuda-graph-verdict.json"
