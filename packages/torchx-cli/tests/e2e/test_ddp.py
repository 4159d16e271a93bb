"""End to end: a real distributed PyTorch job through ``torchx run`` on the local scheduler.

Run by ``nox -s e2e`` (which installs torch with pip); the plain unit session does not
collect this folder. examples/ddp/train.py trains a small model with
DistributedDataParallel (rank 0 reports the loss going down), then each rank
all-reduces ``rank + 1`` and prints the sum; every rank must print the right one.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from helpers import Cli

try:  # collected only by `nox -s e2e` (TORCHX_E2E=1), which installs torch: never skip
    import torch  # noqa: F401
except ImportError:
    pytest.fail(
        "the e2e tests need torch, which `nox -s e2e` installs: it is missing here",
        pytrace=False,
    )

REPO = Path(os.environ.get("TORCHX_REPO_ROOT") or Path(__file__).resolve().parents[4])
SCRIPT = REPO / "examples" / "ddp" / "train.py"
RESULT = re.compile(r"rank (\d+)/(\d+): all_reduce sum = (\d+) \(expected (\d+)\)")


@pytest.mark.parametrize(("j", "nnodes", "nproc"), [("1x2", 1, 2), ("2x1", 2, 1)])
def test_ddp_all_reduce(cli: Cli, j: str, nnodes: int, nproc: int) -> None:
    assert SCRIPT.is_file(), f"{SCRIPT} is missing (set TORCHX_REPO_ROOT to the repository)"
    # from a clone's root, exactly as the README says
    script = str(SCRIPT.relative_to(REPO))
    proc = cli(
        "run", "--wait", "--log", "dist.ddp", "-j", j, "--script", script, timeout=300, cwd=REPO
    )
    world = nnodes * nproc
    found: dict[int, tuple[str, int]] = {}
    for line in proc.stdout.splitlines():
        m = RESULT.search(line)
        if m:
            rank, size, total, expected = map(int, m.groups())
            assert size == world and total == expected == world * (world + 1) // 2, line
            found[rank] = (line.split()[0], total)
    assert sorted(found) == list(range(world)), proc.stdout
    # one replica per node, each carrying nproc ranks
    assert {prefix for prefix, _ in found.values()} == {f"train/{n}" for n in range(nnodes)}
    # rank 0 reports the training: the loss went down
    trained = re.search(
        r"trained \d+ epochs on (\d+) ranks: loss ([\d.]+) -> ([\d.]+)", proc.stdout
    )
    assert trained, proc.stdout
    assert int(trained.group(1)) == world and float(trained.group(3)) < float(trained.group(2))
    assert "State: SUCCEEDED" in proc.stderr


def test_two_ddp_apps_at_once_each_have_their_own_rendezvous(cli: Cli) -> None:
    """Two ``dist.ddp -j 2x1`` apps on ``local`` at the same time, the second outliving
    the first. With one rendezvous port for all (29500), the second app's agents joined
    the first app's store, and failed when the first app ended and took it along."""
    script = str(SCRIPT.relative_to(REPO))

    def run(epochs: int) -> str:
        args = ["run", "--wait", "--log", "dist.ddp", "-j", "2x1", "--script", script]
        return cli(*args, "--", "--epochs", str(epochs), timeout=600, cwd=REPO).stdout

    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(2) as pool:  # each torchx run returns once its app has ended
        outs = list(pool.map(run, [3, 8]))
    for out in outs:  # both succeeded (exit 0, checked by cli), every rank summed right
        sums = sorted(int(m.group(1)) for m in RESULT.finditer(out) if m.group(2) == "2")
        assert sums == [0, 1] and out.count("all_reduce sum = 3 (expected 3)") == 2, out
