"""Every docstring example in the installed torchx-runner packages runs as shown."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import torchx.components
import torchx.runner
import torchx.schedulers
import torchx.workspace

MODULES = sorted(
    m.name
    for pkg in (torchx.runner, torchx.schedulers, torchx.components, torchx.workspace)
    for m in pkgutil.walk_packages(pkg.__path__, prefix=pkg.__name__ + ".")
    if not m.name.endswith("__main__")
)


def test_modules_found() -> None:
    assert "torchx.schedulers.api" in MODULES


@pytest.mark.parametrize("name", MODULES)
def test_doctests(name: str) -> None:
    result = doctest.testmod(importlib.import_module(name))
    assert result.failed == 0, f"{result.failed} doctest(s) failed in {name}"
