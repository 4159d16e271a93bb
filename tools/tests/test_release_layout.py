"""Each distribution of the repository is released on its own: version, changelog, ranges.

Checked on the source tree (``nox -s build`` checks the same on the built metadata):

* one version source per distribution: ``dynamic = ["version"]`` read by hatch from
  its ``_version.py``, never a static ``version`` in pyproject.toml;
* its own CHANGELOG.md whose newest section is that version;
* every sibling it requires is given a compatible range (a lower and an upper
  bound, no pin) that admits the sibling's version in this repository.
"""

from __future__ import annotations

import re

import pytest
from _layout import Dist, distributions, requirement_name
from conftest import REPO
from packaging.requirements import Requirement
from packaging.version import Version

DISTS = distributions(REPO)


def test_the_distributions_are_found() -> None:
    assert {"torchx-specs", "torchx-runner", "torchx-cli"} <= set(DISTS)


@pytest.mark.parametrize("dist", DISTS.values(), ids=lambda d: d.name)
def test_one_version_source(dist: Dist) -> None:
    assert "version" not in dist.project, "the version lives in _version.py only"
    assert "version" in dist.project.get("dynamic", [])
    assert dist.version_file.is_relative_to(dist.src)
    Version(dist.version)  # PEP 440


@pytest.mark.parametrize("dist", DISTS.values(), ids=lambda d: d.name)
def test_own_changelog_opens_with_the_current_version(dist: Dist) -> None:
    text = (dist.folder / "CHANGELOG.md").read_text(encoding="utf-8")
    headings = re.findall(r"^## (\S+)", text, re.MULTILINE)
    assert headings, f"{dist.name}: CHANGELOG.md has no '## <version>' section"
    assert Version(headings[0]) == Version(dist.version), (
        f"{dist.name} is at {dist.version} but its CHANGELOG's newest section is {headings[0]}"
    )


@pytest.mark.parametrize("dist", DISTS.values(), ids=lambda d: d.name)
def test_siblings_are_required_with_compatible_ranges(dist: Dist) -> None:
    reqs = [*dist.dependencies, *(r for rs in dist.optional_dependencies.values() for r in rs)]
    for text in reqs:
        if requirement_name(text) not in DISTS:
            continue
        req = Requirement(text)
        sibling = DISTS[requirement_name(text)]
        operators = {s.operator for s in req.specifier}
        assert operators & {">=", "~=", ">"}, f"{dist.name}: {text!r} needs a lower bound"
        assert operators & {"<", "~="}, f"{dist.name}: {text!r} needs an upper bound"
        assert not operators & {"==", "===", "!="}, f"{dist.name}: {text!r} pins a sibling"
        assert req.specifier.contains(Version(sibling.version), prereleases=True), (
            f"{dist.name}: {text!r} excludes {sibling.name} {sibling.version}"
        )
