"""Check a distribution's built sdist and wheel before they are published.

``nox -s build`` builds every distribution into ``dist/<name>/`` and runs this on
each; run it by hand the same way::

    python tools/check_dist.py torchx-specs dist/torchx-specs          # stdlib + packaging
    python tools/check_dist.py torchx-specs dist/torchx-specs --twine  # also twine check --strict
    python tools/check_dist.py --all dist --twine                      # every distribution

What is checked (each problem is one line, ``<dist>: <artifact>: what is wrong``):

* exactly one sdist (``.tar.gz``) and one wheel (``.whl``), named after the
  distribution and its version;
* their metadata (wheel ``METADATA``, sdist ``PKG-INFO``) parses and validates
  (:mod:`packaging.metadata`), has a summary and a long description with its
  content type, a ``License-Expression`` (or ``License``), and every
  ``License-File`` it names is in the archive; with ``--twine`` the long
  description must also render (``twine check --strict``);
* ``Version`` equals the distribution's ``_version.py``;
* every sibling distribution it requires is given a compatible range with both
  bounds (``torchx-specs>=0.1,<0.2``) that admits the sibling's current version;
* the wheel ships ``py.typed`` in each package it owns (what is under ``src/``),
  no ``torchx/__init__.py`` (``torchx`` is a PEP 420 namespace shared by every
  distribution; the sdist must not carry ``src/torchx/__init__.py`` either), no
  ``tests/`` and no top-level package or module other than the ones it owns.

Exit status 1 when anything is wrong. Ownership and versions come from the source
tree (``_layout``), so the check needs the repository, not just the artifacts.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tarfile
import zipfile
from collections.abc import Iterable, Mapping
from pathlib import Path, PurePosixPath

from _layout import NOT_PACKAGES, ROOT, Dist, LayoutError, distributions, normalize

_ANSI = re.compile(r"\x1b\[[0-9;]*m")


class Artifact:
    """The member names of one archive and a way to read them, sdist or wheel alike."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.kind = "wheel" if path.suffix == ".whl" else "sdist"
        if self.kind == "wheel":
            with zipfile.ZipFile(path) as zf:
                self.names = [n for n in zf.namelist() if not n.endswith("/")]
        else:
            with tarfile.open(path) as tf:
                self.names = [m.name for m in tf.getmembers() if m.isfile()]

    def read(self, name: str) -> bytes:
        if self.kind == "wheel":
            with zipfile.ZipFile(self.path) as zf:
                return zf.read(name)
        with tarfile.open(self.path) as tf:
            member = tf.extractfile(name)
            if member is None:
                raise KeyError(name)
            return member.read()


def _file_stem(name: str) -> str:
    """Distribution name as it appears in artifact file names (``torchx_specs``)."""
    return normalize(name).replace("-", "_")


def check_metadata(
    dist: Dist, art: Artifact, text: str, dists: Mapping[str, Dist], license_root: str
) -> list[str]:
    """Problems in one METADATA/PKG-INFO text."""
    problems: list[str] = []
    try:
        from packaging.metadata import Metadata, parse_email
        from packaging.specifiers import SpecifierSet
        from packaging.version import InvalidVersion, Version
    except ImportError:  # pragma: no cover - the nox sessions install packaging
        return ["the 'packaging' library is needed to check metadata: pip install packaging"]

    raw, unparsed = parse_email(text)
    for key in sorted(unparsed):
        problems.append(f"metadata field {key!r} is not valid core metadata")
    try:
        meta = Metadata.from_raw(raw, validate=True)
    except ExceptionGroup as group:
        for exc in group.exceptions:
            problems.append(f"invalid metadata: {' '.join(str(exc).split())}")
        return problems

    if normalize(meta.name) != dist.name:
        problems.append(f"Name is {meta.name!r}, expected {dist.name!r}")
    try:
        same = str(meta.version) == dist.version or meta.version == Version(dist.version)
    except InvalidVersion:
        same = False
    if not same:
        problems.append(
            f"Version is {meta.version} but {dist.version_file.name} says {dist.version}"
        )
    if not meta.summary:
        problems.append("no Summary: set [project] description")
    if not (meta.description or "").strip():
        problems.append("no long description: set [project] readme")
    elif not meta.description_content_type:
        problems.append("no Description-Content-Type: set [project] readme to a .md file")
    if not meta.license_expression and not meta.license:
        problems.append('no License-Expression: set [project] license = "BSD-3-Clause"')
    license_files = meta.license_files or []
    if not license_files:
        problems.append('no License-File: add [project] license-files = ["LICENSE"]')
    for license_file in license_files:
        if f"{license_root}{license_file}" not in art.names:
            problems.append(f"License-File {license_file} is not in the archive")

    for req in meta.requires_dist or []:
        sibling = normalize(req.name)
        if sibling not in dists:
            continue
        where = f"requirement {str(req)!r}"
        if req.marker is not None and "extra" not in str(req.marker):
            problems.append(f"{where} has an environment marker; siblings are always required")
        specs: SpecifierSet = req.specifier
        has_lower = any(s.operator in (">=", "~=", ">") for s in specs)
        has_upper = any(s.operator in ("<", "~=", "<=") for s in specs)
        if not specs or any(s.operator in ("==", "===", "!=") for s in specs):
            problems.append(
                f"{where}: give sibling {sibling} a compatible range such as "
                f"{sibling}{_suggest(dists[sibling].version)}, not a pin or no bound"
            )
            continue
        if not (has_lower and has_upper):
            problems.append(
                f"{where}: sibling {sibling} needs a lower and an upper bound, "
                f"e.g. {sibling}{_suggest(dists[sibling].version)}"
            )
            continue
        try:
            current = Version(dists[sibling].version)
        except InvalidVersion:
            problems.append(f"{sibling}'s version {dists[sibling].version!r} is not PEP 440")
            continue
        if not specs.contains(current, prereleases=True):
            problems.append(
                f"{where} excludes {sibling} {current}, the version in this repository; "
                f"use {sibling}{_suggest(str(current))}"
            )
    return problems


def _suggest(version: str) -> str:
    """The compatible range for ``version``: ``>=0.1,<0.2`` (0.x) or ``>=1.2,<2``."""
    parts = [int(p) for p in re.findall(r"\d+", version)[:2]] + [0, 0]
    major, minor = parts[0], parts[1]
    if major == 0:
        return f">=0.{minor},<0.{minor + 1}"
    return f">={major}.{minor},<{major + 1}"


def _is_public_testing(dist: Dist, parts: tuple[str, ...]) -> bool:
    """Whether ``parts`` is a ``testing`` package the source tree really has.

    A ``testing`` package below an owned one (``torchx.schedulers.testing``, the
    conformance kit) is public API that vendors import, as ``numpy.testing`` is;
    ``tests/`` and a ``testing/`` with no ``__init__.py`` in ``src/`` are strays.
    """
    return (
        len(parts) > 2
        and parts[-1] == "testing"
        and (dist.src.joinpath(*parts) / "__init__.py").is_file()
    )


def check_wheel(dist: Dist, art: Artifact, dists: Mapping[str, Dist]) -> list[str]:
    problems: list[str] = []
    info_dirs = {n.split("/")[0] for n in art.names if n.split("/")[0].endswith(".dist-info")}
    if len(info_dirs) != 1:
        return [f"expected one .dist-info directory, found {sorted(info_dirs) or 'none'}"]
    info = info_dirs.pop()
    if f"{info}/METADATA" not in art.names:
        return [f"{info}/METADATA is missing"]
    text = art.read(f"{info}/METADATA").decode("utf-8", "replace")
    problems += check_metadata(dist, art, text, dists, f"{info}/licenses/")

    owned = dist.owned_packages()
    namespaces = set(dist.namespaces())
    allowed_top = {p.split(".")[0] for p in owned} | {info, info.replace(".dist-info", ".data")}
    for namespace in sorted(namespaces):
        if f"{namespace}/__init__.py" in art.names:
            problems.append(
                f"ships {namespace}/__init__.py, but {namespace} is a PEP 420 namespace shared "
                f"by every distribution: delete src/{namespace}/__init__.py"
            )
    strays: set[str] = set()
    for name in art.names:
        parts = PurePosixPath(name).parts
        top = parts[0]
        if top not in allowed_top:
            strays.add(top + ("/" if len(parts) > 1 else ""))
        elif (
            top in namespaces
            and len(parts) > 1
            and parts[1] != "__init__.py"
            and f"{top}.{parts[1].removesuffix('.py')}" not in owned
        ):
            strays.add(f"{top}/{parts[1]}" + ("/" if len(parts) > 2 else ""))
        for i, part in enumerate(parts[:-1]):
            if part in NOT_PACKAGES and not _is_public_testing(dist, parts[: i + 1]):
                strays.add("/".join(parts[: i + 1]) + "/")  # tests/, __pycache__/ inside
                break
        if name.endswith((".pyc", ".pyo")):
            strays.add(name)
    for stray in sorted(strays):
        problems.append(
            f"ships {stray}, which is not a package this distribution owns "
            f"({', '.join(owned) or 'none under src/'}); exclude it from the wheel"
        )
    for package in owned:
        path = package.replace(".", "/")
        is_package = any(n.startswith(f"{path}/") for n in art.names)
        if is_package and f"{path}/py.typed" not in art.names:
            problems.append(f"{path}/py.typed is missing: add an empty src/{path}/py.typed")
        if not is_package and f"{path}.py" not in art.names:
            problems.append(f"{package} (under src/) is not in the wheel")
    return problems


def check_sdist(dist: Dist, art: Artifact, dists: Mapping[str, Dist]) -> list[str]:
    problems: list[str] = []
    tops = {n.split("/")[0] for n in art.names}
    if len(tops) != 1:
        return [f"expected one top-level directory, found {sorted(tops)}"]
    top = tops.pop()
    if f"{top}/PKG-INFO" not in art.names:
        return [f"{top}/PKG-INFO is missing"]
    text = art.read(f"{top}/PKG-INFO").decode("utf-8", "replace")
    problems += check_metadata(dist, art, text, dists, f"{top}/")
    for required in ("pyproject.toml", "README.md", "CHANGELOG.md"):
        if f"{top}/{required}" not in art.names:
            problems.append(f"{required} is missing from the sdist")
    for namespace in dist.namespaces():
        for candidate in (f"{top}/src/{namespace}/__init__.py", f"{top}/{namespace}/__init__.py"):
            if candidate in art.names:
                problems.append(
                    f"ships {candidate.removeprefix(top + '/')}, but {namespace} is a PEP 420 "
                    f"namespace shared by every distribution: delete src/{namespace}/__init__.py"
                )
    for package in dist.owned_packages():
        path = package.replace(".", "/")
        shipped = any(n.startswith(f"{top}/src/{path}/") for n in art.names)
        if shipped and f"{top}/src/{path}/py.typed" not in art.names:
            problems.append(f"src/{path}/py.typed is missing from the sdist")
    return problems


def twine_problems(paths: Iterable[Path]) -> list[str]:
    """``twine check --strict`` on ``paths``; its complaints folded to one line per artifact."""
    proc = subprocess.run(
        [sys.executable, "-m", "twine", "check", "--strict", *map(str, paths)],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "COLUMNS": "100000", "NO_COLOR": "1"},  # no wrapping, no colour
    )
    if proc.returncode == 0:
        return []
    out = _ANSI.sub("", proc.stdout + proc.stderr)
    if "No module named twine" in out:
        return ["twine is not installed in this environment (pip install twine), or drop --twine"]
    problems: list[str] = []
    current: str | None = None
    detail: list[str] = []
    for line in out.splitlines():
        match = re.match(r"Checking (\S+): (\w+)", line.strip())
        if match:
            if current and detail:
                problems.append(f"{Path(current).name}: twine check: {' '.join(detail)}")
            current, detail = match.group(1), []
        elif line.strip() and current:
            detail.append(" ".join(line.split()))
    if current and detail:
        problems.append(f"{Path(current).name}: twine check: {' '.join(detail)}")
    return problems or [f"twine check failed: {' '.join(out.split())[:300]}"]


def check(dist_name: str, artifact_dir: Path, root: Path = ROOT, twine: bool = False) -> list[str]:
    """Every problem with the artifacts of ``dist_name`` in ``artifact_dir``, one line each."""
    try:
        dists = distributions(root)
        dist = dists.get(normalize(dist_name))
        if dist is None:
            return [f"{dist_name}: unknown distribution; expected one of {', '.join(dists)}"]
        version = dist.version
    except LayoutError as e:
        return [f"{dist_name}: {e}"]
    stem = _file_stem(dist.name)
    wheels = sorted(artifact_dir.glob("*.whl"))
    sdists = sorted(artifact_dir.glob("*.tar.gz"))
    problems: list[str] = []
    for kind, found in (("wheel", wheels), ("sdist", sdists)):
        if len(found) != 1:
            shown = ", ".join(p.name for p in found) or "none"
            problems.append(f"{dist.name}: expected one {kind} in {artifact_dir}, found {shown}")
    if problems:
        return problems
    for path in (*sdists, *wheels):
        prefix = f"{stem}-{version}{'-' if path.suffix == '.whl' else '.tar.gz'}"
        if not path.name.startswith(prefix):
            problems.append(
                f"{dist.name}: {path.name}: file name does not start with {prefix!r} "
                f"(name and version {version} from {dist.version_file.name})"
            )
        try:
            art = Artifact(path)
        except (OSError, zipfile.BadZipFile, tarfile.TarError) as e:
            problems.append(f"{dist.name}: {path.name}: cannot read the archive ({e})")
            continue
        checker = check_wheel if art.kind == "wheel" else check_sdist
        problems += [f"{dist.name}: {path.name}: {p}" for p in checker(dist, art, dists)]
    if twine:
        problems += [f"{dist.name}: {p}" for p in twine_problems((*sdists, *wheels))]
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dist", nargs="?", help="distribution name, e.g. torchx-specs")
    parser.add_argument("artifacts", nargs="?", type=Path, help="folder of its sdist and wheel")
    parser.add_argument(
        "--all",
        type=Path,
        metavar="DIR",
        help="check every distribution of the repository, its artifacts in DIR/<name>/",
    )
    parser.add_argument("--root", type=Path, default=ROOT, help="repository root")
    parser.add_argument("--twine", action="store_true", help="also run twine check --strict")
    args = parser.parse_args(argv)
    root = args.root.resolve()
    if args.all is not None:
        if args.dist or args.artifacts:
            parser.error("give either --all DIR or DIST ARTIFACTS, not both")
        try:
            targets = [(name, args.all / name) for name in distributions(root)]
        except LayoutError as e:
            print(e)
            return 1
    elif args.dist and args.artifacts:
        targets = [(args.dist, args.artifacts)]
    else:
        parser.error("give DIST ARTIFACTS (e.g. torchx-specs dist/torchx-specs) or --all DIR")
    failed = False
    for name, folder in targets:
        problems = check(name, folder, root, twine=args.twine)
        for problem in problems:
            print(problem)
        if problems:
            failed = True
            continue
        built = sorted(p.name for p in folder.iterdir() if p.name.endswith((".whl", ".tar.gz")))
        print(f"{normalize(name)}: OK ({', '.join(built)})")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
