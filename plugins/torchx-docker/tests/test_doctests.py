"""The examples in the modules' docstrings run as shown (docs as a test)."""

from __future__ import annotations

import pytest

from torchx.schedulers.testing import modules_with_examples, run_examples

#: The modules whose docstrings show examples; each must have at least one.
MODULES = [
    "torchx_docker.labels",
    "torchx_docker.logs",
    "torchx_docker.options",
    "torchx_docker.status",
    "torchx_docker.wire",
]


def test_the_modules_with_examples_are_the_listed_ones() -> None:
    # a module that gains examples is listed (so they run); one that loses them is not
    assert modules_with_examples("torchx_docker") == MODULES


@pytest.mark.parametrize("name", MODULES)
def test_doctests(name: str) -> None:
    run_examples(name)
