"""The vendor plugin (examples/vendor-plugin) uses only what any third party could use.

It must reach TorchX through the public API alone: the hookspecs, the registry,
``torchx.specs`` and the Scheduler contract in ``torchx.schedulers.contract.api``, never a
private module or name. Its dependency on torchx-runner is a compatible range that
admits the version in this repository, and no distribution here knows about it.
"""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

import pytest
from _layout import distributions, requirement_name
from check_imports import imported_modules
from conftest import REPO
from packaging.requirements import Requirement
from packaging.version import Version

VENDOR = REPO / "examples" / "vendor-plugin"
SOURCES = sorted((VENDOR / "src").rglob("*.py"))


def test_the_sources_are_found() -> None:
    assert {p.name for p in SOURCES} >= {"plugin.py", "scheduler.py", "cli.py", "batch.py"}


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: p.name)
def test_only_public_torchx_modules_and_names_are_imported(path: Path) -> None:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    private = [
        f"{path.name}:{line}: {module}"
        for line, module in imported_modules(tree)
        if module.split(".")[0] == "torchx"
        and any(part.startswith("_") for part in module.split(".")[1:])
    ]
    assert private == [], "the vendor plugin imports private TorchX modules or names"


def test_it_depends_on_a_compatible_range_of_torchx_runner() -> None:
    project = tomllib.loads((VENDOR / "pyproject.toml").read_text())["project"]
    reqs = [Requirement(r) for r in project["dependencies"]]
    torchx_reqs = [r for r in reqs if r.name.startswith("torchx")]
    assert [r.name for r in torchx_reqs] == ["torchx-runner"]
    (runner,) = torchx_reqs
    current = Version(distributions(REPO)["torchx-runner"].version)
    assert runner.specifier.contains(current, prereleases=True)
    assert any(s.operator == "<" for s in runner.specifier), "give it an upper bound"


def test_no_distribution_of_the_repository_imports_it() -> None:
    for dist in distributions(REPO).values():
        for path in sorted(dist.folder.rglob("*.py")):
            tree = ast.parse(path.read_bytes())
            for line, module in imported_modules(tree):
                assert requirement_name(module.split(".")[0]) != "acme-torchx", f"{path}:{line}"
