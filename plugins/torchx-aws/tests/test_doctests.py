"""The examples in the modules' docstrings run as shown (docs as a test)."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest
import torchx_aws

#: The modules whose docstrings show examples; each must have at least one.
MODULES = [
    "torchx_aws.batch.options",
    "torchx_aws.batch.request",
    "torchx_aws.batch.scheduler",
    "torchx_aws.batch.status",
    "torchx_aws.errors",
    "torchx_aws.sagemaker.options",
    "torchx_aws.sagemaker.request",
    "torchx_aws.sagemaker.scheduler",
]


def test_the_modules_with_examples_are_the_listed_ones() -> None:
    # a module that gains examples is listed (so they run); one that loses them is not
    found = pkgutil.walk_packages(torchx_aws.__path__, prefix="torchx_aws.")
    names = ["torchx_aws", *sorted(m.name for m in found)]
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
