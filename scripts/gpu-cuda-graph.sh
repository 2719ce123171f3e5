#!/bin/sh
# The CUDA-graph check (README, CUDA graphs): the same captured all_reduce
# run with the plugin off and on (online, exploring at capture), then
# compared: bit-identical results, replay time >= 0.99x off. Two GPUs, or
# one GPU with RANKS_PER_GPU=2 (NCCL 2.30.3 or later, which NCCL_LIB names
# and which is preloaded; MPS must run). The on run's job report (what each
# workload ran, its captured calls) goes beside the verdict.
# Writes OUT/cuda-graph-{off,on,verdict}.json and cuda-graph-report-*.json.
#
# usage: [RANKS_PER_GPU=2 NCCL_LIB=/path/libnccl.so.2] [GRAPH_TIMEOUT=s] scripts/gpu-cuda-graph.sh PLUGIN_SO OUT_DIR
set -eu
plugin=$1 out=$2
rpg=${RANKS_PER_GPU:-1}
mkdir -p "$out"
if [ -n "${NCCL_LIB:-}" ]; then
  LD_PRELOAD=$NCCL_LIB${LD_PRELOAD:+:$LD_PRELOAD}
  export LD_PRELOAD
fi
[ "$rpg" -gt 1 ] && export NCCL_MULTI_RANK_GPU_ENABLE=1
export NCCL_NVLS_ENABLE=0
python3 tests/gpu/cuda_graph.py run --out "$out/cuda-graph-off.json" --port 29621 --ranks-per-gpu "$rpg" --timeout "${GRAPH_TIMEOUT:-240}"
NCCL_TUNER_PLUGIN=$plugin NCCL_PROFILER_PLUGIN=$plugin AUTOCCL_MODE=online \
  AUTOCCL_REPORT="$out/cuda-graph-report-%r.json" \
  python3 tests/gpu/cuda_graph.py run --out "$out/cuda-graph-on.json" --port 29622 --ranks-per-gpu "$rpg" --timeout "${GRAPH_TIMEOUT:-240}"
python3 tests/gpu/cuda_graph.py compare "$out/cuda-graph-off.json" "$out/cuda-graph-on.json" \
  --out "$out/cuda-graph-verdict.json"
