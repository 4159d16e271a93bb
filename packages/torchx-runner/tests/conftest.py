"""Shared test setup: keep the plugin cache and the local state out of the user's home."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from torchx.schedulers.local_scheduler import LocalScheduler, create_scheduler

collect_ignore_glob = ["fixtures/*"]


@pytest.fixture(autouse=True, scope="session")
def _private_cache_dir() -> object:
    with tempfile.TemporaryDirectory(prefix="torchx-test-cache-") as d:
        old = os.environ.get("XDG_CACHE_HOME")
        os.environ["XDG_CACHE_HOME"] = d
        yield d
        if old is None:
            os.environ.pop("XDG_CACHE_HOME", None)
        else:
            os.environ["XDG_CACHE_HOME"] = old


@pytest.fixture(autouse=True, scope="session")
def _private_state_dir() -> object:
    """The local scheduler's default state directory (links, apps) is never the user's."""
    with tempfile.TemporaryDirectory(prefix="torchx-test-home-") as d:
        old = os.environ.get("TORCHX_HOME")
        os.environ["TORCHX_HOME"] = d
        yield d
        if old is None:
            os.environ.pop("TORCHX_HOME", None)
        else:
            os.environ["TORCHX_HOME"] = old


@pytest.fixture
def state_dir(tmp_path: Path) -> Path:
    """The state directory of the ``sched`` fixture's local scheduler."""
    return tmp_path / "state"


@pytest.fixture
def sched(state_dir: Path) -> Iterator[LocalScheduler]:
    """A local scheduler of its own; a failed test leaves nothing running behind."""
    scheduler = create_scheduler("test", state_dir=str(state_dir))
    yield scheduler
    for app in scheduler.list():
        scheduler.delete(app.app_id, force=True)
