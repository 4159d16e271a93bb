"""Shared setup: each test in its own torchx world (TORCHX_HOME, HOME, working directory)."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

# the browser tests' shared steps fail with the values compared, as a test's own asserts do
pytest.register_assert_rewrite("browser.flow")

collect_ignore_glob = []
if os.environ.get("TORCHX_UI_BROWSER") != "1":
    # the page in Chromium: only `nox -s ui_browser` collects it (it installs Chromium)
    collect_ignore_glob.append("browser/*")
if not os.environ.get("TORCHX_UI_INTEGRATION"):
    # real Slurm or Docker: only `nox -s integration_slurm` / `integration_docker` (their
    # backend up) collect them
    collect_ignore_glob.append("integration/*")


@pytest.fixture(autouse=True, scope="session")
def _private_cache_dir() -> Iterator[str]:
    with tempfile.TemporaryDirectory(prefix="torchx-ui-test-cache-") as d:
        old = os.environ.get("XDG_CACHE_HOME")
        os.environ["XDG_CACHE_HOME"] = d
        yield d
        if old is None:
            os.environ.pop("XDG_CACHE_HOME", None)
        else:
            os.environ["XDG_CACHE_HOME"] = old


@pytest.fixture(autouse=True)
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """This test's own apps' records, home (no ~/.torchxconfig) and working directory.

    Afterwards, whatever local app of the test still runs is cancelled: a test that
    failed half way (its app waiting for a file that now never comes) leaves nothing
    running behind it."""
    home, work = tmp_path / "home", tmp_path / "work"
    home.mkdir()
    work.mkdir()
    monkeypatch.setenv("TORCHX_HOME", str(tmp_path / "state"))
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("TORCHXCONFIG", raising=False)
    monkeypatch.chdir(work)
    yield tmp_path
    from torchx.schedulers.local.scheduler import LocalScheduler

    sched = LocalScheduler("torchx")
    for app in sched.list():
        if not app.state.is_terminal():
            sched.cancel(app.app_id)
