"""A tiny distributed PyTorch job: every rank all-reduces its rank number and prints the sum.

Run it with torchx (2 processes on one node, gloo on CPU):

    torchx run --log dist.ddp -j 1x2 --script examples/ddp/train.py

Each rank prints ``rank R/W: all_reduce sum = S (expected S)``; the end-to-end tests
check that line for every rank.
"""

from __future__ import annotations

import os

import torch
import torch.distributed as dist


def main() -> None:
    backend = "nccl" if torch.cuda.is_available() else "gloo"
    dist.init_process_group(backend)
    rank, world = dist.get_rank(), dist.get_world_size()
    value = torch.tensor([float(rank + 1)])
    dist.all_reduce(value)
    expected = world * (world + 1) // 2
    host = os.environ.get("HOSTNAME", "localhost")
    print(
        f"rank {rank}/{world}: all_reduce sum = {value.item():.0f} (expected {expected}) on {host}"
    )
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
