"""Bump one distribution's version and open its next CHANGELOG section.

Each distribution is released on its own, with one version source (the
``_version.py`` hatch reads) and its own ``CHANGELOG.md``::

    python tools/bump_version.py torchx-specs 0.2.0

rewrites the ``__version__`` string in that distribution's ``_version.py`` and
inserts ``## 0.2.0 (unreleased)`` above the newest section of its CHANGELOG
(nothing else moves; write the entries under it as you go). It refuses, with one
line on stderr and exit status 1, an unknown distribution, a version that is not
PEP 440, and a version not greater than the current one. Siblings that pin the
bumped distribution to a range excluding the new version are named on stdout:
update their ``dependencies`` before releasing (``nox -s build`` checks it).
"""

from __future__ import annotations

import argparse
import difflib
import sys
from pathlib import Path

from _layout import ROOT, LayoutError, distributions, normalize, requirement_name, write_version


class BumpError(Exception):
    """The bump is refused; the message is the one line shown."""


def _changelog_with_section(text: str, version: str) -> str:
    """``text`` with ``## {version} (unreleased)`` inserted before its first ``## `` heading."""
    heading = f"## {version} (unreleased)"
    lines = text.splitlines(keepends=True)
    for i, line in enumerate(lines):
        if line.startswith("## "):
            if line.split()[1:2] == [version]:
                raise BumpError(f"CHANGELOG.md already has a section for {version}")
            return "".join([*lines[:i], heading + "\n", "\n", *lines[i:]])
    # no release section yet: after the title (and its blank line), or at the end
    body = text if text.endswith("\n") or not text else text + "\n"
    return body + ("" if body.endswith("\n\n") or not body else "\n") + heading + "\n"


def bump(dist_name: str, new_version: str, root: Path = ROOT) -> tuple[str, list[str]]:
    """Bump ``dist_name`` to ``new_version`` under ``root``.

    Returns the version written (PEP 440 normalized) and notes about dependents.
    """
    try:
        from packaging.requirements import Requirement
        from packaging.version import InvalidVersion, Version
    except ImportError:  # pragma: no cover - the dev environment has packaging
        raise BumpError("the 'packaging' library is needed: pip install packaging") from None

    dists = distributions(root)
    dist = dists.get(normalize(dist_name))
    if dist is None:
        close = difflib.get_close_matches(normalize(dist_name), list(dists), n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise BumpError(
            f"unknown distribution {dist_name!r}{hint}; expected one of {', '.join(dists)}"
        )
    try:
        wanted = Version(new_version)
    except InvalidVersion:
        raise BumpError(
            f"{new_version!r} is not a PEP 440 version; expected e.g. 0.2.0, 1.0.0rc1"
        ) from None
    current_text = dist.version
    try:
        current = Version(current_text)
    except InvalidVersion:
        raise BumpError(
            f"{dist.version_file}: current version {current_text!r} is not PEP 440"
        ) from None
    if wanted <= current:
        raise BumpError(
            f"{dist.name} is at {current_text}; the new version must be greater, got {new_version}"
        )
    changelog = dist.folder / "CHANGELOG.md"
    if not changelog.is_file():
        raise BumpError(f"{changelog} is missing; every distribution keeps a CHANGELOG.md")
    new_changelog = _changelog_with_section(changelog.read_text(encoding="utf-8"), str(wanted))

    write_version(dist.version_file, str(wanted))
    changelog.write_text(new_changelog, encoding="utf-8")

    notes: list[str] = []
    for other in dists.values():
        for req_text in other.dependencies:
            if requirement_name(req_text) != dist.name:
                continue
            req = Requirement(req_text)
            if not req.specifier.contains(wanted, prereleases=True):
                notes.append(
                    f"note: {other.name} requires {req_text!r}, which excludes {wanted}; "
                    f"update {other.folder.name}/pyproject.toml before releasing"
                )
    return str(wanted), notes


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dist", help="distribution name, e.g. torchx-specs")
    parser.add_argument("version", help="the new PEP 440 version, greater than the current one")
    parser.add_argument("--root", type=Path, default=ROOT, help="repository root")
    args = parser.parse_args(argv)
    try:
        written, notes = bump(args.dist, args.version, args.root.resolve())
    except (BumpError, LayoutError) as e:
        print(f"bump_version: {e}", file=sys.stderr)
        return 1
    print(f"bumped {normalize(args.dist)} to {written}")
    for note in notes:
        print(note)
    return 0


if __name__ == "__main__":
    sys.exit(main())
