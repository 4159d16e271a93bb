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

MODULES = [
    "torchx.specs",
    *sorted(m.name for m in pkgutil.walk_packages(torchx.specs.__path__, prefix="torchx.specs.")),
    "torchx.version",  # torchx-specs' one module outside torchx.specs
]

#: The modules whose docstrings show examples. Each must have at least one: a module run
#: through doctest without any passes while testing nothing.
EXAMPLES = [
    "torchx.specs",
    "torchx.specs._converter",
    "torchx.specs._dataclass_view",
    "torchx.specs._option_types",
    "torchx.specs._plain",
    "torchx.specs.api",
    "torchx.specs.appdef_json",
    "torchx.specs.builders",
    "torchx.specs.builtin_plugin",
    "torchx.specs.docstrings",
    "torchx.specs.durations",
    "torchx.specs.errors",
    "torchx.specs.file_linter",
    "torchx.specs.handles",
    "torchx.specs.help_formatter",
    "torchx.specs.mounts",
    "torchx.specs.named_resources_aws",
    "torchx.specs.named_resources_generic",
    "torchx.specs.options",
    "torchx.specs.options_text",
    "torchx.specs.overlay_merge",
    "torchx.specs.overlays",
    "torchx.specs.param_types",
    "torchx.specs.plugins",
    "torchx.specs.plugins.entries",
    "torchx.specs.resources",
    "torchx.specs.secrets",
    "torchx.specs.serialize",
    "torchx.specs.status",
    "torchx.specs.structured_errors",
    "torchx.specs.structured_opts",
    "torchx.specs.templating",
    "torchx.specs.workspace",
    "torchx.version",
]


def _examples(name: str) -> int:
    found = doctest.DocTestFinder().find(importlib.import_module(name))
    return sum(len(test.examples) for test in found)


def test_every_module_is_found() -> None:
    assert "torchx.specs.api" in MODULES
    assert "torchx.specs.options" in MODULES


def test_the_modules_with_examples_are_the_listed_ones() -> None:
    # a module that gains examples is listed (so they run); one that loses them is not
    assert [name for name in MODULES if _examples(name)] == EXAMPLES


@pytest.mark.parametrize("name", EXAMPLES)
def test_doctests(name: str) -> None:
    module = importlib.import_module(name)
    result = doctest.testmod(module, verbose=False, report=True)
    assert result.attempted > 0, f"{name} has no examples: remove it from EXAMPLES"
    assert result.failed == 0, f"{result.failed} doctest(s) failed in {name}"
