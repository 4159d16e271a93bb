"""tools/bump_version.py on a copy of the repository's distributions."""

from __future__ import annotations

from pathlib import Path

import bump_version
import pytest
from conftest import REPO, copy_tree

SPECS_VERSION = Path("packages/torchx-specs/src/torchx/specs/_version.py")
SPECS_CHANGELOG = Path("packages/torchx-specs/CHANGELOG.md")


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    copy_tree(REPO / "packages", root / "packages")
    return root


def _snapshot(root: Path) -> dict[Path, bytes]:
    return {p.relative_to(root): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_bump_rewrites_version_and_opens_a_changelog_section(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = _snapshot(repo)
    old_changelog = (repo / SPECS_CHANGELOG).read_text()
    assert bump_version.main(["torchx-specs", "0.2.0", "--root", str(repo)]) == 0

    from _layout import read_version

    assert read_version(repo / SPECS_VERSION) == "0.2.0"
    new_changelog = (repo / SPECS_CHANGELOG).read_text()
    first = old_changelog.index("\n## ") + 1
    # the new heading goes above the newest section; nothing else moves
    assert (
        new_changelog == old_changelog[:first] + "## 0.2.0 (unreleased)\n\n" + old_changelog[first:]
    )
    changed = {p for p, data in _snapshot(repo).items() if before.get(p) != data}
    assert changed == {SPECS_VERSION, SPECS_CHANGELOG}

    out = capsys.readouterr().out.splitlines()
    assert out[0] == "bumped torchx-specs to 0.2.0"
    # torchx-runner's range torchx-specs>=0.1,<0.2 no longer admits the new version
    assert any(
        line.startswith("note: torchx-runner requires 'torchx-specs>=0.1,<0.2'") for line in out
    )


@pytest.mark.parametrize(
    ("dist", "version", "message"),
    [
        (
            "torchx-specs",
            "0.1.0",
            "bump_version: torchx-specs is at 0.1.0; the new version must be greater, got 0.1.0",
        ),
        (
            "torchx-specs",
            "0.0.9",
            "bump_version: torchx-specs is at 0.1.0; the new version must be greater, got 0.0.9",
        ),
        (
            "torchx-specs",
            "0.2.x",
            "bump_version: '0.2.x' is not a PEP 440 version; expected e.g. 0.2.0, 1.0.0rc1",
        ),
        (
            "torchx-spec",
            "0.2.0",
            "bump_version: unknown distribution 'torchx-spec' (did you mean 'torchx-specs'?); expected one of ",
        ),
    ],
)
def test_refusals_change_nothing_and_say_why_in_one_line(
    repo: Path, capsys: pytest.CaptureFixture[str], dist: str, version: str, message: str
) -> None:
    before = _snapshot(repo)
    assert bump_version.main([dist, version, "--root", str(repo)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert err.startswith(message)
    assert _snapshot(repo) == before


def test_prerelease_and_normalization(repo: Path) -> None:
    written, _ = bump_version.bump("torchx_specs", "0.2.0-RC1", repo)
    assert written == "0.2.0rc1"
    assert (repo / SPECS_VERSION).read_text() == '__version__ = "0.2.0rc1"\n'
    bump_version.bump("torchx-specs", "0.2.0", repo)
    changelog = (repo / SPECS_CHANGELOG).read_text()
    assert changelog.index("## 0.2.0 (unreleased)") < changelog.index("## 0.2.0rc1 (unreleased)")


def test_changelog_without_sections_gets_its_first() -> None:
    assert (
        bump_version._changelog_with_section("# Changelog of x\n", "0.1.0")
        == "# Changelog of x\n\n## 0.1.0 (unreleased)\n"
    )
