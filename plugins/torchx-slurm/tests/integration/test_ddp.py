"""The README's distributed PyTorch example, unchanged, on two Slurm nodes (real torch, gloo).

``torchx run -s slurm --log dist.ddp -j 2x1 --script examples/ddp/train.py`` from a copy
of the repository's examples (the working directory is the job directory): the two
replicas find each other by rank 0's node name through torchrun's c10d rendezvous,
train with DistributedDataParallel, and rank 0's loss goes down.

It runs three times, two of them at once: on this cluster every node is this machine,
so two jobs' rank 0 share a host, as jobs on shared nodes do. Each job has its own
rendezvous port there (``TORCHX_RDZV_PORT``); with one fixed port (29500) an agent that
found it taken joined the other job's store, and lost it (failing, or logging c10d
errors) when that job ended first: no agent may lose its store while its job runs. One
c10d episode is torch's own and is allowed: an agent still closing its rendezvous when
the agent hosting the store has exited logs that it "failed to shutdown the
rendezvous", after the job's work is done (the job succeeds).
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest

from torchx.schedulers.testing.cli import TorchxCli

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
# what torchrun's agents say when their rendezvous store goes away while the job runs
STORE_LOST = re.compile(
    r"failed to send a keep-alive heartbeat|The connection to the C10d store has failed"
)
FINAL = {"SUCCEEDED", "FAILED", "CANCELLED"}
README = ("dist.ddp", "-j", "2x1", "--script", "examples/ddp/train.py")


def _check_trained(out: str) -> None:
    ranks = {}
    for m in RESULT.finditer(out):
        replica, rank, size, total, expected = map(int, m.groups())
        assert size == 2 and total == expected == 3, m.group(0)
        ranks[rank] = replica
    # one rank on each replica (each replica on its own node)
    assert sorted(ranks) == [0, 1] and sorted(ranks.values()) == [0, 1], out
    trained = TRAINED.search(out)
    assert trained, out
    assert int(trained.group(1)) == 2
    assert float(trained.group(3)) < float(trained.group(2)), trained.group(0)


def _check_store_lasted(cli: TorchxCli, handle: str) -> None:
    """No agent lost its rendezvous store while the job ran (it was the job's own)."""
    for k in (0, 1):
        err = cli("log", "--streams", "stderr", f"{handle}/train/{k}").stdout
        lost = [line for line in err.splitlines() if STORE_LOST.search(line)]
        assert not lost, f"{handle} replica {k} lost its store:\n{err[-3000:]}"


def test_readme_ddp_example_on_two_nodes(cli: TorchxCli) -> None:
    shutil.copytree(REPO / "examples" / "ddp", cli.work / "examples" / "ddp")
    proc = cli("run", "-s", "slurm", "--log", *README, timeout=600)
    _check_trained(proc.stdout)
    assert "SUCCEEDED" in proc.stderr
    _check_store_lasted(cli, proc.stdout.strip().splitlines()[0])


def test_two_ddp_jobs_at_once_then_a_third(cli: TorchxCli) -> None:
    """The README's example twice at the same time (2 x 2 of the 4 nodes), then again.

    One of the two is short: when it ends, a store it hosted for both would go with it.
    """
    shutil.copytree(REPO / "examples" / "ddp", cli.work / "examples" / "ddp")
    handles = [cli.start(*README), cli.start(*README, "--", "--epochs", "2", "--steps", "10")]
    for handle in handles:
        status = cli.wait_state(handle, FINAL, timeout=600)
        assert status["state"] == "SUCCEEDED", (handle, status, cli("log", handle).stdout)
    for handle in handles:
        _check_trained(cli("log", handle).stdout)
        _check_store_lasted(cli, handle)
    third = cli("run", "-s", "slurm", "--log", *README, timeout=600)
    _check_trained(third.stdout)
    _check_store_lasted(cli, third.stdout.strip().splitlines()[0])
