#!/usr/bin/env python3
"""DDP training steps of the same Llama-style model as fsdp_llama.py:
fp32 parameters, bf16 compute, and the gradients AllReduced in buckets
(--bucket-mb, 25 MiB by default, PyTorch's own) while backward runs. Timed as
NCCL ships and with autoccl, interleaved, exactly as fsdp_llama.py does (it
takes the same options and writes the same torch_step lines, with
"wrap": "ddp"):

  python3 examples/ddp_buckets.py --plugin build/tuner/libnccl-tuner-autoccl.so \\
      --nproc 2 --reps 4 --steps 300 --modes nccl,autoccl --out ddp.jsonl
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fsdp_llama  # noqa: E402  (the driver and worker live there)

if __name__ == "__main__":
    argv = sys.argv[1:]
    if not any(a == "--wrap" or a.startswith("--wrap=") for a in argv):
        argv = ["--wrap", "ddp"] + argv
    a = fsdp_llama.parse(argv)
    sys.exit(fsdp_llama.worker(a) or 0 if a.worker else fsdp_llama.driver(a))
