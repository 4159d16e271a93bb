"""Every docstring example in the installed torchx-runner packages runs as shown."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import torchx.components
import torchx.functions
import torchx.runner
import torchx.schedulers
import torchx.workspace

PACKAGES = (
    torchx.runner,
    torchx.schedulers,
    torchx.components,
    torchx.workspace,
    torchx.functions,
)
MODULES = sorted(
    [pkg.__name__ for pkg in PACKAGES]
    + [
        m.name
        for pkg in PACKAGES
        for m in pkgutil.walk_packages(pkg.__path__, prefix=pkg.__name__ + ".")
        if not m.name.endswith("__main__")
    ]
)

#: The modules whose docstrings show examples. Each must have at least one: a module run
#: through doctest without any passes while testing nothing.
EXAMPLES = [
    "torchx.components",
    "torchx.components.args",
    "torchx.components.dist",
    "torchx.components.finder",
    "torchx.components.metrics",
    "torchx.components.serve",
    "torchx.components.structured_arg",
    "torchx.components.utils",
    "torchx.runner._config_shared",
    "torchx.runner.api",
    "torchx.runner.config",
    "torchx.runner.config_writing",
    "torchx.runner.first_party",
    "torchx.schedulers",
    "torchx.schedulers._moved",
    "torchx.schedulers.contract.api",
    "torchx.schedulers.contract.capabilities",
    "torchx.schedulers.contract.errors",
    "torchx.schedulers.contract.states",
    "torchx.schedulers.helpers.appstore",
    "torchx.schedulers.helpers.clients",
    "torchx.schedulers.helpers.commands",
    "torchx.schedulers.helpers.files",
    "torchx.schedulers.helpers.follow",
    "torchx.schedulers.helpers.ids",
    "torchx.schedulers.helpers.labels",
    "torchx.schedulers.helpers.privatedir",
    "torchx.schedulers.helpers.replica_errors",
    "torchx.schedulers.helpers.retry",
    "torchx.schedulers.helpers.scriptroles",
    "torchx.schedulers.helpers.window",
    "torchx.schedulers.local.classic",
    "torchx.schedulers.local.scheduler",
    "torchx.schedulers.testing.cli",
    "torchx.schedulers.testing.functions",
    "torchx.schedulers.testing.registration",
    "torchx.schedulers.testing.sweeps",
    "torchx.workspace.dir_workspace",
]


def _examples(name: str) -> int:
    found = doctest.DocTestFinder().find(importlib.import_module(name))
    return sum(len(test.examples) for test in found)


def test_modules_found() -> None:
    assert "torchx.schedulers.contract.api" in MODULES


def test_the_modules_with_examples_are_the_listed_ones() -> None:
    # a module that gains examples is listed (so they run); one that loses them is not
    assert [name for name in MODULES if _examples(name)] == EXAMPLES


@pytest.mark.parametrize("name", EXAMPLES)
def test_doctests(name: str) -> None:
    result = doctest.testmod(importlib.import_module(name))
    assert result.attempted > 0, f"{name} has no examples: remove it from EXAMPLES"
    assert result.failed == 0, f"{result.failed} doctest(s) failed in {name}"
