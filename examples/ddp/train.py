"""A small distributed data parallel training job: every rank trains the same model on its own data.

Run it with torchx (2 processes on one node, gloo on CPU):

    torchx run --log dist.ddp -j 1x2 --script examples/ddp/train.py

or as two nodes of one process each (``-j 2x1``), with arguments for the script after
``--`` (``-- --epochs 10``). Each rank fits a linear model to synthetic data of its own
(``y = x . w + noise``, a different seed per rank) with ``DistributedDataParallel``,
which averages the gradients of all ranks at every step; rank 0 prints the loss of each
epoch. At the end every rank all-reduces ``rank + 1`` and prints

    rank R/W: all_reduce sum = S (expected S)

which the end-to-end tests check for every rank. ``torchrun`` (which ``dist.ddp`` uses)
sets the rendezvous environment that ``init_process_group`` reads.
"""

from __future__ import annotations

import argparse
import os
import sys

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

FEATURES = 16


def train(epochs: int, steps: int, batch: int, rank: int) -> tuple[float, float]:
    """Trains the model; returns the mean loss of the first and of the last epoch."""
    torch.manual_seed(0)  # the same initial weights on every rank (DDP checks it too)
    model = DistributedDataParallel(torch.nn.Linear(FEATURES, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    true_w = torch.linspace(-1.0, 1.0, FEATURES).unsqueeze(1)
    data = torch.Generator().manual_seed(1000 + rank)  # each rank its own shard of data
    losses = []
    for epoch in range(epochs):
        total = 0.0
        for _ in range(steps):
            x = torch.randn(batch, FEATURES, generator=data)
            y = x @ true_w + 0.01 * torch.randn(batch, 1, generator=data)
            loss = torch.nn.functional.mse_loss(model(x), y)
            optimizer.zero_grad()
            loss.backward()  # DDP all-reduces the gradients here
            optimizer.step()
            total += loss.item()
        losses.append(total / steps)
        if rank == 0:
            print(f"epoch {epoch}: loss {losses[-1]:.5f}", flush=True)
    return losses[0], losses[-1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--steps", type=int, default=200, help="steps per epoch")
    parser.add_argument("--batch", type=int, default=64, help="samples per step and rank")
    args = parser.parse_args()

    backend = "nccl" if torch.cuda.is_available() else "gloo"
    dist.init_process_group(backend)
    rank, world = dist.get_rank(), dist.get_world_size()
    first, last = train(args.epochs, args.steps, args.batch, rank)
    if rank == 0:
        print(f"trained {args.epochs} epochs on {world} ranks: loss {first:.5f} -> {last:.5f}")

    value = torch.tensor([float(rank + 1)])
    dist.all_reduce(value)
    expected = world * (world + 1) // 2
    host = os.environ.get("HOSTNAME", "localhost")
    print(
        f"rank {rank}/{world}: all_reduce sum = {value.item():.0f} (expected {expected}) on {host}",
        flush=True,
    )
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
    # Everything is done (the process group destroyed, the output flushed): leave without
    # the interpreter's teardown, where torch's gloo threads now and then abort the
    # process (SIGABRT, "terminate called without an active exception") after a
    # successful run, which would fail the replica.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)
