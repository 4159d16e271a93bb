"""Integration tests against the project's LSF stand-in of ``dev/lsf up``.

Collected only when TORCHX_LSF_INTEGRATION=1 (``nox -s integration_lsf`` sets it after
``dev/lsf up``), so the plugin's unit session never runs them. Every test goes through
the ``bsub``, ``bjobs`` and ``bkill`` on PATH: jobs really run on this machine.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from torchx.schedulers.testing.rendezvous import Ports

if os.environ.get("TORCHX_LSF_INTEGRATION") != "1":
    collect_ignore_glob = ["test_*.py"]

if TYPE_CHECKING:
    from torchx.schedulers.testing.cli import TorchxCli


@pytest.fixture(autouse=True, scope="session")
def _lsf() -> None:
    """Fail every test at once, with one clear line, when there is no LSF to talk to."""
    if shutil.which("bjobs") is None or not os.environ.get("LSF_ENVDIR"):
        pytest.fail('bjobs is not on PATH or LSF_ENVDIR is unset: run `eval "$(dev/lsf up)"` first')
    proc = subprocess.run(["bjobs", "-a"], capture_output=True, text=True, timeout=30)
    if proc.returncode != 0:
        pytest.fail(f"bjobs fails: {proc.stderr.strip()}")


@pytest.fixture
def cli(tmp_path: Path) -> Iterator[TorchxCli]:
    """The torchx command with this test's own HOME and working directory (= job directory)."""
    from torchx.schedulers.testing.cli import TorchxCli

    c = TorchxCli(tmp_path, scheduler="lsf")
    yield c
    c.cleanup()


@pytest.fixture
def port() -> int:
    """A TCP port for a rendezvous that no other test of this run uses."""
    return _PORTS.next()


_PORTS = Ports(24000)
