"""The examples in the aws_sagemaker modules' docstrings run as shown (docs as a test)."""

from __future__ import annotations

import pytest

from torchx.schedulers.testing import modules_with_examples, run_examples

#: The sagemaker modules whose docstrings show examples; each must have at least one.
MODULES = [
    "torchx_aws.sagemaker.options",
    "torchx_aws.sagemaker.request",
    "torchx_aws.sagemaker.scheduler",
]


def test_the_modules_with_examples_are_the_listed_ones() -> None:
    # a module that gains examples is listed (so they run); one that loses them is not
    found = [m for m in modules_with_examples("torchx_aws") if m.startswith("torchx_aws.sagemaker")]
    assert found == MODULES


@pytest.mark.parametrize("name", MODULES)
def test_doctests(name: str) -> None:
    run_examples(name)
