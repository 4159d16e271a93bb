"""The examples in the modules' docstrings run as shown (docs as a test)."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest
import torchx_lsf

#: The modules whose docstrings show examples; each must have at least one.
MODULES = [
    "torchx_lsf.commands",
    "torchx_lsf.options",
    "torchx_lsf.parse",
    "torchx_lsf.request",
    "torchx_lsf.scheduler",
]


def test_the_modules_with_examples_are_the_listed_ones() -> None:
    found = pkgutil.walk_packages(torchx_lsf.__path__, prefix="torchx_lsf.")
    names = ["torchx_lsf", *sorted(m.name for m in found)]
    finder = doctest.DocTestFinder()
    with_examples = [
        name
        for name in names
        if any(test.examples for test in finder.find(importlib.import_module(name)))
    ]
    assert with_examples == MODULES


@pytest.mark.parametrize("name", MODULES)
def test_doctests(name: str) -> None:
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0, f"{name} has no examples"
    assert result.failed == 0
