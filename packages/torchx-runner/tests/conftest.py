"""Shared test setup: keep the plugin cache and the local state out of the user's home."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from torchx.schedulers.local.scheduler import LocalScheduler, create_scheduler
from torchx.schedulers.testing.fake_tools import private_env_dir

collect_ignore_glob = ["fixtures/*"]


@pytest.fixture(autouse=True, scope="session")
def _private_cache_dir() -> Iterator[str]:
    with private_env_dir("XDG_CACHE_HOME", prefix="torchx-test-cache-") as d:
        yield d


@pytest.fixture(autouse=True, scope="session")
def _private_state_dir() -> Iterator[str]:
    """The local scheduler's default state directory (links, apps) is never the user's."""
    with private_env_dir("TORCHX_HOME", prefix="torchx-test-home-") as d:
        yield d


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


@pytest.fixture
def helpers_importable(monkeypatch: pytest.MonkeyPatch) -> None:
    """The tests' folder first on ``sys.path``: the functions tests' helpers module
    (``fn_helpers_torchx_functions``) imports by name here, and so on the replica, which
    gets the submitter's ``sys.path``."""
    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parent))


@pytest.fixture
def fh(helpers_importable: None) -> Any:
    """The functions tests' helpers module."""
    import fn_helpers_torchx_functions

    return fn_helpers_torchx_functions
