"""Shared test setup: a private plugin cache for the run, a private torchx world per test."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers import Cli

collect_ignore_glob = ["fixtures/*"]
if os.environ.get("TORCHX_E2E") != "1":
    # end-to-end runs need torch: only `nox -s e2e` collects them
    collect_ignore_glob.append("e2e/*")


@pytest.fixture(autouse=True, scope="session")
def _private_cache_dir() -> Iterator[str]:
    with tempfile.TemporaryDirectory(prefix="torchx-test-cache-") as d:
        old = os.environ.get("XDG_CACHE_HOME")
        os.environ["XDG_CACHE_HOME"] = d
        os.environ.pop("TORCHXCONFIG", None)
        yield d
        if old is None:
            os.environ.pop("XDG_CACHE_HOME", None)
        else:
            os.environ["XDG_CACHE_HOME"] = old


@pytest.fixture
def cli(tmp_path: Path) -> Iterator[Cli]:
    """The torchx command with this test's own TORCHX_HOME, HOME and working directory."""
    c = Cli(tmp_path)
    yield c
    c.cleanup()
