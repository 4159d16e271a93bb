"""The examples in acme_torchx's docstrings run as shown, through the kit's helpers."""

from __future__ import annotations

import pytest

from torchx.schedulers.testing import modules_with_examples, run_examples

#: The modules whose docstrings show examples; each must have at least one.
MODULES = ["acme_torchx.batch"]


def test_the_modules_with_examples_are_the_listed_ones() -> None:
    # a module that gains examples is listed (so they run); one that loses them is not
    assert modules_with_examples("acme_torchx") == MODULES


@pytest.mark.parametrize("name", MODULES)
def test_doctests(name: str) -> None:
    run_examples(name)
