"""Checks of the repository's tracked text files that no other tool makes.

A merge-conflict marker once landed in a CHANGELOG (a rebase resolved in a hurry): the
packaging and lint checks read Markdown as prose and let it through. And the repository
must stand alone: no file points at notes kept outside it.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
_MARKER = re.compile(r"^(<{7}|>{7}) |^={7}$|^\|{7} ")


def _tracked_text_files() -> list[Path]:
    out = subprocess.run(
        ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True
    ).stdout
    paths = [ROOT / p for p in out.decode().split("\0") if p]
    texts = []
    for path in paths:
        try:
            data = path.read_bytes()
        except (FileNotFoundError, IsADirectoryError):
            continue  # deleted in the working tree, or a submodule
        if b"\0" not in data[:8192]:
            texts.append(path)
    return texts


def test_no_merge_conflict_markers() -> None:
    found = []
    for path in _tracked_text_files():
        for n, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            if _MARKER.match(line):
                found.append(f"{path.relative_to(ROOT)}:{n}: {line[:40]}")
    assert not found, "merge-conflict markers left in:\n" + "\n".join(found)


def test_the_marker_pattern_finds_each_kind_of_marker() -> None:
    for line in ("<<<<<<< HEAD", ">>>>>>> 3a72698 (x)", "=======", "||||||| base"):
        assert _MARKER.match(line), line
    for line in ("=" * 8, "<<< not one", "a ======="):
        assert not _MARKER.match(line), line


_OUTSIDE = re.compile(r"(\.\./|/work/)shared/|\bshared/(notes|reference|k8s-crds)\b")

# The one exemption, line by line: .ci/run hands tests and dev scripts data that the
# project's own CI machines keep beside the checkout (the upstream CRD manifests, Volcano's
# source archive), through environment variables and only when it is there. Nothing else
# may name that folder. (Spelt in two pieces so that this file does not name it itself.)
_BESIDE = "/".join(["..", "shared", ""])
_CI_RUN_LINES = frozenset(
    {
        f"if [ -d {_BESIDE}k8s-crds ]; then",
        f'  export TORCHX_K8S_UPSTREAM_CRDS="$PWD/{_BESIDE}k8s-crds"',
        f"if [ -f {_BESIDE}third_party/volcano-v1.5.1.tar.gz ]; then",
        f'  export TORCHX_DEV_K8S_VOLCANO_ARCHIVE="$PWD/{_BESIDE}third_party/volcano-v1.5.1.tar.gz"',
    }
)


def test_no_file_points_outside_the_repository() -> None:
    """The repository stands alone: its files never point at a shared folder beside it."""
    found = []
    for path in _tracked_text_files():
        text = path.read_text(errors="replace")
        exempt = _CI_RUN_LINES if path == ROOT / ".ci" / "run" else frozenset()
        for n, line in enumerate(text.splitlines(), 1):
            if _OUTSIDE.search(line) and line not in exempt:
                found.append(f"{path.relative_to(ROOT)}:{n}")
    assert not found, "files pointing outside the repository:\n" + "\n".join(found)


def test_the_exemption_is_exactly_cis_data_lines() -> None:
    """Each exempt line is in .ci/run (no stale exemption) and would be refused elsewhere."""
    lines = (ROOT / ".ci" / "run").read_text().splitlines()
    for line in _CI_RUN_LINES:
        assert line in lines, line
        assert _OUTSIDE.search(line), line


# what a README says of a plugin still being written: once its tests pass (they run in
# the same CI as this check), the words are no longer true
_UNFINISHED = re.compile(
    r"\b(being built|work in progress|coming soon|under construction|(is|are) (still )?unfinished)\b",
    re.IGNORECASE,
)


def _docs() -> list[Path]:
    return [
        p
        for p in _tracked_text_files()
        if p.suffix == ".md" and "CHANGELOG" not in p.name and "tests" not in p.parts
    ]


def test_no_readme_or_page_calls_a_plugin_unfinished() -> None:
    found = []
    for path in _docs():
        # a sentence may wrap: lines are joined before matching
        text = " ".join(path.read_text(errors="replace").split())
        for match in _UNFINISHED.finditer(text):
            found.append(
                f"{path.relative_to(ROOT)}: ...{text[max(0, match.start() - 60) : match.end() + 20]}..."
            )
    assert not found, (
        "a README or page calls something unfinished, but every plugin's tests pass in the same "
        "CI as this check: say what works, and what is left as a precise gap\n" + "\n".join(found)
    )


def test_the_unfinished_pattern_finds_the_words_and_not_their_neighbours() -> None:
    for text in (
        "plugins are being built (see",
        "Work in progress",
        "is unfinished",
    ):
        assert _UNFINISHED.search(text), text
    for text in ("unfinished jobs: LSF ends them", "built (see", "(skipped: not implemented)"):
        assert not _UNFINISHED.search(text), text
