"""Shared test setup: fake LSF tools on PATH, and a private plugin cache.

The unit tests never need LSF (``tests/integration``, run by ``nox -s
integration_lsf``, uses the project's stand-in of ``dev/lsf``). The kit's
:class:`~torchx.schedulers.testing.fake_tools.FakeTools` put
``bsub``, ``bjobs``, ``bkill`` and ``brequeue`` on ``PATH``: each records its argv (and stdin) and
answers what the test scripted for it::

    def test_x(fake_lsf):
        fake_lsf.answer("bjobs", stdout="...", returncode=0)
        ...
        assert fake_lsf.calls("bjobs") == [["-noheader", ...]]
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from torchx.schedulers.testing.fake_tools import FakeTools, private_env_dir

collect_ignore_glob = ["fixtures/*"]

TOOLS = ("bsub", "bjobs", "bkill", "brequeue")


@pytest.fixture
def fake_lsf(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> FakeTools:
    fake = FakeTools(tmp_path / "fake-lsf", TOOLS)
    fake.activate(monkeypatch)
    monkeypatch.delenv("TORCHX_LSF_TIMEOUT", raising=False)
    return fake


@pytest.fixture(autouse=True, scope="session")
def _private_cache_dir() -> Iterator[str]:
    with private_env_dir("XDG_CACHE_HOME", prefix="torchx-lsf-test-cache-") as d:
        yield d
