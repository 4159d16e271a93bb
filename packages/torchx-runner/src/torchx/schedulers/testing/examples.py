"""Docstring examples as tests: every module that shows examples runs them, none forgotten.

A plugin's examples are its documentation, so they run in its tests. A module that
gains examples must be listed (else they never run) and one that loses them must leave
the list (else it passes while testing nothing). :class:`DocstringExamples` holds both
checks; a distribution's ``tests/test_doctests.py`` names its package and its list::

    from torchx.schedulers.testing import DocstringExamples


    class TestExamples(DocstringExamples):
        package = "acme_torchx"
        modules = ["acme_torchx.batch"]

``run_examples`` and ``modules_with_examples`` are the two checks as functions, for a
test that needs them otherwise.
"""

from __future__ import annotations

import doctest
import importlib
import pkgutil
from collections.abc import Sequence
from typing import Any, ClassVar

__all__ = ["DocstringExamples", "modules_with_examples", "run_examples"]


def modules_with_examples(package: str) -> list[str]:
    """The modules of ``package`` (itself first, then the others sorted) whose docstrings
    hold examples: compared with a plugin's list of them, so none is forgotten."""
    top = importlib.import_module(package)
    names = [package]
    if hasattr(top, "__path__"):
        found = pkgutil.walk_packages(top.__path__, prefix=package + ".")
        names += sorted(m.name for m in found if not m.name.endswith("__main__"))
    finder = doctest.DocTestFinder()
    return [
        name
        for name in names
        if any(test.examples for test in finder.find(importlib.import_module(name)))
    ]


def run_examples(name: str) -> None:
    """Run the examples in module ``name``'s docstrings (``...`` matches anything); fail
    naming the module when none ran (a listed module lost its examples) or one failed."""
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0, f"{name} has no examples: remove it from the list"
    assert result.failed == 0, f"{result.failed} example(s) failed in {name}"


class DocstringExamples:
    """The docstring-example tests of one package; subclass it as ``Test*`` and set both.

    ``test_examples`` runs each listed module's examples (one test per module);
    ``test_the_modules_with_examples_are_the_listed_ones`` fails when the list and the
    modules that have examples differ.
    """

    #: The package whose modules are searched (``"acme_torchx"``).
    package: ClassVar[str]
    #: The modules with examples: the package first if it has some, then sorted.
    modules: ClassVar[Sequence[str]]

    def pytest_generate_tests(self, metafunc: Any) -> None:
        # one test per listed module, named by it (read from the subclass)
        if "module_name" in metafunc.fixturenames:
            metafunc.parametrize("module_name", list(metafunc.cls.modules))

    def test_the_modules_with_examples_are_the_listed_ones(self) -> None:
        # a module that gains examples is listed (so they run); one that loses them is not
        assert modules_with_examples(self.package) == list(self.modules)

    def test_examples(self, module_name: str) -> None:
        run_examples(module_name)
