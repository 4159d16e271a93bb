"""The monorepo's layout as the release tools see it: distributions, versions, ownership.

Every distribution is a folder under ``packages/`` or ``plugins/`` with its own
``pyproject.toml``. From that folder alone the tools derive everything they check:

* its name and dependencies (``[project]`` of its pyproject),
* its version (the ``_version.py`` named by ``[tool.hatch.version] path``),
* the import packages it owns (what is under its ``src/``: ``src/torchx/specs/``
  gives ``torchx.specs`` because ``src/torchx`` is the PEP 420 namespace with no
  ``__init__.py``; ``src/torchx_slurm/__init__.py`` gives ``torchx_slurm``).

Nothing here is hard-coded per distribution, so a new plugin folder is checked
the day it appears::

    from _layout import distributions
    dists = distributions(root)                 # {"torchx-specs": Dist(...), ...}
    dists["torchx-runner"].owned_packages()     # ("torchx.components", "torchx.runner", ...)
    dists["torchx-cli"].sibling_closure(dists)  # ("torchx-runner", "torchx-specs")

Standard library only (``tomllib``), so ``check_imports`` runs anywhere.
"""

from __future__ import annotations

import ast
import re
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

#: The repository root (this file is tools/_layout.py).
ROOT = Path(__file__).resolve().parent.parent

#: Folders holding one distribution per sub-folder.
DIST_GROUPS = ("packages", "plugins")

#: Folder names that are never import packages a distribution may ship.
NOT_PACKAGES = frozenset({"tests", "test", "testing", "__pycache__"})

_VERSION_RE = re.compile(r"""^(__version__\s*=\s*)(["'])([^"']*)\2""", re.MULTILINE)


class LayoutError(Exception):
    """The repository is not laid out as the tools expect (the message says where)."""


def normalize(name: str) -> str:
    """PEP 503 normalized distribution name: ``Torchx_Specs`` -> ``torchx-specs``."""
    return re.sub(r"[-_.]+", "-", name).lower()


def requirement_name(requirement: str) -> str:
    """The normalized distribution name a PEP 508 requirement string starts with."""
    match = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._\-]*)", requirement)
    return normalize(match.group(1)) if match else ""


@dataclass(frozen=True)
class Dist:
    """One distribution folder and what its pyproject says."""

    name: str
    folder: Path
    project: Mapping[str, Any] = field(repr=False)
    tool: Mapping[str, Any] = field(repr=False)

    @property
    def src(self) -> Path:
        return self.folder / "src"

    @property
    def version_file(self) -> Path:
        """The file hatch reads the version from (``[tool.hatch.version] path``)."""
        path: str | None = self.tool.get("hatch", {}).get("version", {}).get("path")
        if not path:
            raise LayoutError(
                f"{self.folder / 'pyproject.toml'}: no [tool.hatch.version] path; "
                "expected path = 'src/.../_version.py'"
            )
        return self.folder / path

    @property
    def version(self) -> str:
        """The version string in :attr:`version_file` (``__version__ = "..."``)."""
        return read_version(self.version_file)

    @property
    def dependencies(self) -> tuple[str, ...]:
        return tuple(self.project.get("dependencies", ()))

    @property
    def optional_dependencies(self) -> Mapping[str, tuple[str, ...]]:
        extras = self.project.get("optional-dependencies", {})
        return {extra: tuple(reqs) for extra, reqs in extras.items()}

    def sibling_closure(
        self, dists: Mapping[str, Dist], *, extras: Iterable[str] = ()
    ) -> tuple[str, ...]:
        """Sibling distributions this one depends on, transitively, sorted.

        ``extras`` adds the siblings named in those optional-dependency groups
        (and what they depend on); ``"*"`` means every extra.
        """
        start = list(self.dependencies)
        wanted = set(extras)
        for extra, reqs in self.optional_dependencies.items():
            if "*" in wanted or extra in wanted:
                start.extend(reqs)
        found: set[str] = set()
        todo = [requirement_name(r) for r in start]
        while todo:
            name = todo.pop()
            if name in dists and name not in found and name != self.name:
                found.add(name)
                todo.extend(requirement_name(r) for r in dists[name].dependencies)
        return tuple(sorted(found))

    def owned_packages(self) -> tuple[str, ...]:
        """Import packages (and top-level modules) under ``src/``, by dotted name, sorted.

        A directory without ``__init__.py`` directly under ``src/`` is a PEP 420
        namespace (``torchx``): what the distribution owns is one level below it.
        """
        if not self.src.is_dir():
            return ()
        owned: list[str] = []
        for entry in sorted(self.src.iterdir()):
            if entry.name.startswith(".") or entry.name.endswith((".egg-info", ".dist-info")):
                continue
            if entry.is_dir():
                if entry.name in NOT_PACKAGES:
                    continue
                if (entry / "__init__.py").exists():
                    owned.append(entry.name)
                else:  # namespace: its children are the owned packages
                    for child in sorted(entry.iterdir()):
                        if child.is_dir() and child.name not in NOT_PACKAGES:
                            if not child.name.startswith("."):
                                owned.append(f"{entry.name}.{child.name}")
                        elif child.suffix == ".py" and child.name != "__init__.py":
                            owned.append(f"{entry.name}.{child.stem}")
            elif entry.suffix == ".py":
                owned.append(entry.stem)
        return tuple(owned)

    def namespaces(self) -> tuple[str, ...]:
        """Top-level directories under ``src/`` without ``__init__.py`` (``("torchx",)``)."""
        if not self.src.is_dir():
            return ()
        return tuple(
            sorted(
                entry.name
                for entry in self.src.iterdir()
                if entry.is_dir()
                and not entry.name.startswith(".")
                and entry.name not in NOT_PACKAGES
                and not (entry / "__init__.py").exists()
            )
        )


def read_version(path: Path) -> str:
    """The ``__version__`` string literal assigned in ``path``."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise LayoutError(f"{path}: cannot read the version file ({e.strerror})") from None
    for node in ast.parse(text, str(path)).body:
        if (
            isinstance(node, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id == "__version__" for t in node.targets)
            and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, str)
        ):
            return node.value.value
    raise LayoutError(f'{path}: no __version__ = "..." string assignment')


def write_version(path: Path, version: str) -> None:
    """Replace the ``__version__`` string literal in ``path``, keeping the rest of the file."""
    text = path.read_text(encoding="utf-8")
    new, count = _VERSION_RE.subn(lambda m: f"{m.group(1)}{m.group(2)}{version}{m.group(2)}", text)
    if count != 1:
        raise LayoutError(f'{path}: expected exactly one __version__ = "..." line, found {count}')
    path.write_text(new, encoding="utf-8")


def distributions(root: Path = ROOT, groups: Iterable[str] = DIST_GROUPS) -> dict[str, Dist]:
    """Every distribution folder under ``packages/`` and ``plugins/``, by normalized name.

    ``groups``: other folders to look in instead (``("examples",)``: the example vendor
    plugin, which the import checks read too but the release tools leave alone).
    """
    found: dict[str, Dist] = {}
    for group in groups:
        for pyproject in sorted((root / group).glob("*/pyproject.toml")):
            try:
                data = tomllib.loads(pyproject.read_text(encoding="utf-8"))
            except tomllib.TOMLDecodeError as e:
                raise LayoutError(f"{pyproject}: invalid TOML ({e})") from None
            project = data.get("project")
            if not isinstance(project, dict) or not project.get("name"):
                raise LayoutError(f"{pyproject}: no [project] name")
            name = normalize(project["name"])
            found[name] = Dist(name, pyproject.parent, project, data.get("tool", {}))
    return found


def owners(dists: Mapping[str, Dist]) -> dict[str, str]:
    """Import package -> the distribution owning it, across the repository.

    Raises :class:`LayoutError` when two distributions ship the same package.
    """
    out: dict[str, str] = {}
    for dist in dists.values():
        for package in dist.owned_packages():
            if package in out and out[package] != dist.name:
                raise LayoutError(
                    f"{package} is shipped by both {out[package]} and {dist.name}; "
                    "every package belongs to exactly one distribution"
                )
            out[package] = dist.name
    return out


def owner_of(module: str, package_owners: Mapping[str, str]) -> str | None:
    """The distribution owning ``module`` (longest owned prefix), or None."""
    parts = module.split(".")
    for end in range(len(parts), 0, -1):
        owner = package_owners.get(".".join(parts[:end]))
        if owner is not None:
            return owner
    return None
