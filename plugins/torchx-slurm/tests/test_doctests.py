"""The examples in the modules' docstrings run as shown (docs as a test)."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = ["torchx_slurm.options", "torchx_slurm.parse", "torchx_slurm.scheduler"]


@pytest.mark.parametrize("name", MODULES)
def test_doctests(name: str) -> None:
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0, f"{name} has no examples"
    assert result.failed == 0
