"""Every docstring example in the installed torchx.specs runs and prints exactly what it shows.

The reference documentation's examples are copied into our docstrings, so this is
also the check that they behave as documented.
"""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import torchx.specs

MODULES = sorted(
    m.name for m in pkgutil.walk_packages(torchx.specs.__path__, prefix="torchx.specs.")
)


def test_every_module_is_found() -> None:
    assert "torchx.specs.api" in MODULES
    assert "torchx.specs.options" in MODULES


@pytest.mark.parametrize("name", MODULES)
def test_doctests(name: str) -> None:
    module = importlib.import_module(name)
    result = doctest.testmod(module, verbose=False, report=True)
    assert result.failed == 0, f"{result.failed} doctest(s) failed in {name}"


def test_package_docstring_examples_ran() -> None:
    result = doctest.testmod(torchx.specs)
    assert result.attempted >= 3 and result.failed == 0
