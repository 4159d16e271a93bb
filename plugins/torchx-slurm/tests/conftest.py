"""Shared test setup: fake Slurm tools on PATH, and a private plugin cache.

The unit tests never need a cluster (``tests/integration``, run by ``nox -s
integration_slurm``, uses a real one). The kit's
:class:`~torchx.schedulers.testing.fake_tools.FakeTools` put ``sbatch``, ``squeue``,
``sacct``, ``scancel`` and ``scontrol`` on ``PATH``: each records its argv (and stdin)
and answers what the test scripted for it::

    def test_x(fake_slurm):
        fake_slurm.answer("squeue", stdout="...", returncode=0)
        fake_slurm.answer("sacct", stderr="Slurm accounting storage is disabled", returncode=1)
        ...
        assert fake_slurm.calls("squeue") == [["-h", "-t", "all", ...]]
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from torchx.schedulers.testing.fake_tools import FakeTools, private_env_dir

collect_ignore_glob = ["fixtures/*"]

TOOLS = ("sbatch", "squeue", "sacct", "scancel", "scontrol", "sdiag", "sinfo")


@pytest.fixture
def fake_slurm(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> FakeTools:
    fake = FakeTools(tmp_path / "fake-slurm", TOOLS, record_env=("SLURM_TIME_FORMAT",))
    fake.activate(monkeypatch)
    monkeypatch.delenv("SLURM_CONF", raising=False)
    monkeypatch.delenv("TORCHX_SLURM_TIMEOUT", raising=False)
    return fake


@pytest.fixture(autouse=True, scope="session")
def _private_cache_dir() -> Iterator[str]:
    with private_env_dir("XDG_CACHE_HOME", prefix="torchx-slurm-test-cache-") as d:
        yield d
