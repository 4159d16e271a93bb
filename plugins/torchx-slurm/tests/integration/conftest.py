"""Integration tests against the real Slurm cluster of ``dev/slurm up``.

Collected only when TORCHX_SLURM_INTEGRATION=1 (``nox -s integration_slurm`` sets it after
starting the cluster), so the plugin's unit session never runs them. Every test talks to
the cluster named by SLURM_CONF: real sbatch, squeue, sacct, scancel.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from torchx.schedulers.testing.rendezvous import Ports

if os.environ.get("TORCHX_SLURM_INTEGRATION") != "1":
    collect_ignore_glob = ["test_*.py"]
else:
    # Under the plugin's pytest settings (--import-mode=importlib) a test folder is not
    # put on sys.path by itself: the tests import slurmcmd and apps from here.
    # Appended, so that the unit tests' own modules (their conftest) still come first.
    sys.path.append(str(Path(__file__).parent))

if TYPE_CHECKING:
    from torchx.schedulers.testing.cli import TorchxCli


@pytest.fixture(autouse=True, scope="session")
def _cluster() -> None:
    """Fail every test at once, with one clear line, when there is no cluster to talk to."""
    conf = os.environ.get("SLURM_CONF", "")
    if not conf or not os.path.isfile(conf):
        pytest.fail(f'SLURM_CONF={conf!r} names no file: run `eval "$(dev/slurm up)"` first')
    if shutil.which("scontrol") is None:
        pytest.fail("scontrol is not installed: run `dev/slurm up` first")
    ping = subprocess.run(["scontrol", "ping"], capture_output=True, text=True, timeout=30)
    if ping.returncode != 0 or "UP" not in ping.stdout:
        pytest.fail(f"slurmctld does not answer (scontrol ping: {ping.stdout.strip()})")


@pytest.fixture
def cli(tmp_path: Path) -> Iterator[TorchxCli]:
    """The torchx command with this test's own HOME and working directory (= job directory)."""
    from torchx.schedulers.testing.cli import TorchxCli

    c = TorchxCli(tmp_path, scheduler="slurm")
    yield c
    c.cleanup()


@pytest.fixture
def port() -> int:
    """A TCP port for a rendezvous that no other test of this run uses."""
    return _PORTS.next()


_PORTS = Ports(23000)
