"""Shared test setup: keep the plugin cache and the local state out of the user's home."""

from __future__ import annotations

import os
import tempfile

import pytest

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
