"""The README's distributed PyTorch example, unchanged, on two Slurm nodes (real torch, gloo).

``torchx run -s slurm --log dist.ddp -j 2x1 --script examples/ddp/train.py`` from a copy
of the repository's examples (the working directory is the job directory): the two
replicas find each other by rank 0's node name through torchrun's c10d rendezvous,
train with DistributedDataParallel, and rank 0's loss goes down.
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest
from torchxcmd import Cli

try:  # the session installs torch: a missing one fails, never skips the README's example
    import torch  # noqa: F401
except ImportError:
    pytest.fail(
        "the README's DDP example needs torch, which `nox -s integration_slurm` installs: "
        "it is missing here",
        pytrace=False,
    )

REPO = Path(os.environ.get("TORCHX_REPO_ROOT") or Path(__file__).resolve().parents[4])
RESULT = re.compile(r"train/(\d) .*rank (\d+)/(\d+): all_reduce sum = (\d+) \(expected (\d+)\)")
TRAINED = re.compile(r"trained \d+ epochs on (\d+) ranks: loss ([\d.]+) -> ([\d.]+)")


def test_readme_ddp_example_on_two_nodes(cli: Cli) -> None:
    shutil.copytree(REPO / "examples" / "ddp", cli.work / "examples" / "ddp")
    proc = cli(
        "run", "-s", "slurm", "--log", "dist.ddp", "-j", "2x1",
        "--script", "examples/ddp/train.py", timeout=600,
    )  # fmt: skip
    ranks = {}
    for m in RESULT.finditer(proc.stdout):
        replica, rank, size, total, expected = map(int, m.groups())
        assert size == 2 and total == expected == 3, m.group(0)
        ranks[rank] = replica
    # one rank on each replica (each replica on its own node)
    assert sorted(ranks) == [0, 1] and sorted(ranks.values()) == [0, 1], proc.stdout
    trained = TRAINED.search(proc.stdout)
    assert trained, proc.stdout
    assert int(trained.group(1)) == 2
    assert float(trained.group(3)) < float(trained.group(2)), trained.group(0)
    assert "SUCCEEDED" in proc.stderr
