"""Every distribution (and the example vendor plugin) runs its docstring examples.

A new plugin copied from an old one without its tests/test_doctests.py would ship
examples nobody runs. Each must have that file, and it must run examples through
doctest: a subclass of the kit's ``DocstringExamples`` (torchx.schedulers.testing: it
runs each listed module's examples and compares the list with the modules that have
examples), or the kit's ``run_examples`` or ``doctest.testmod`` with the list of the
modules that have examples compared against the modules found.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import REPO

FOLDERS = sorted(
    [p.parent for p in REPO.glob("packages/*/pyproject.toml")]
    + [p.parent for p in REPO.glob("plugins/*/pyproject.toml")]
    + [p.parent for p in REPO.glob("examples/*/pyproject.toml")]
)


def test_the_distributions_are_found() -> None:
    names = {folder.name for folder in FOLDERS}
    assert {"torchx-specs", "torchx-runner", "torchx-cli", "torchx-slurm", "vendor-plugin"} <= names


@pytest.mark.parametrize("folder", FOLDERS, ids=[f.name for f in FOLDERS])
def test_each_runs_its_docstring_examples(folder: Path) -> None:
    test = folder / "tests" / "test_doctests.py"
    where = test.relative_to(REPO)
    assert test.is_file(), f"{where}: missing: run this distribution's docstring examples there"
    text = test.read_text(encoding="utf-8")
    if "(DocstringExamples):" in text:  # the kit's class runs both checks below
        assert "package = " in text and "modules = " in text, (
            f"{where}: a DocstringExamples subclass names its package and its modules"
        )
        return
    assert "run_examples(" in text or "doctest.testmod(" in text, (
        f"{where} runs no example: call torchx.schedulers.testing.run_examples (or doctest.testmod)"
    )
    assert "modules_with_examples(" in text or "DocTestFinder" in text, (
        f"{where} does not compare its list of modules with the modules that have examples"
    )
