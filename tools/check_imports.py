"""Check that no distribution imports a sibling it does not declare, nor a plugin's SDK,
nor uses a sibling's private names.

Each distribution must work with only itself and its declared dependencies
installed (DESIGN.md). The per-distribution test sessions catch an undeclared
import only if a test happens to execute it; this check reads every Python file
with :mod:`ast` instead, so an import inside a function, a ``TYPE_CHECKING``
block or an untested branch is caught too::

    python tools/check_imports.py            # the repository this file lives in
    python tools/check_imports.py --root DIR # another checkout (the tests use a fake tree)

Rules, all derived from the tree (see ``_layout``):

* A file under ``<dist>/src`` or ``<dist>/tests`` may import packages of its own
  distribution and of siblings it depends on, transitively, through
  ``dependencies`` or an optional extra (a plugin may use another plugin's public
  API through an extra; such an import is expected to be lazy or guarded).
* The SDKs the scheduler plugins wrap (kubernetes, boto3/botocore, docker) are
  imported only by their plugin, so a core package never grows a cloud dependency.
* Nothing imports another distribution's private module or name (a dotted part that
  starts with ``_``, dunders such as ``__version__`` aside): what one distribution
  needs from another must be public API (``torchx.specs.__version__``, not
  ``torchx.specs._version``), or it could change under it in any release.
* Nor does it use a sibling's private attribute, ``info._scheduler = name`` on an
  object of a class of torchx-specs (see ``_private_attrs`` for how that is told from
  names alone, with few false alarms).

The example distributions under ``examples/`` (the vendor plugin) are checked by the
same rules; loose example scripts (``examples/ddp/train.py``) may import any
distribution, but nothing private of any.

Imports counted: ``import a.b``, ``from a.b import c`` (``c`` is checked as the
module ``a.b.c`` too, so ``from torchx import runner`` counts), and
``importlib.import_module("a.b")`` / ``__import__("a.b")`` with a literal name.
Relative imports stay inside the importing package and are skipped.

One line per problem, ``path:line: what is wrong``; exit status 1 when any.
"""

from __future__ import annotations

import argparse
import ast
import sys
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path

from _layout import ROOT, Dist, LayoutError, distributions, owner_of, owners
from _private_attrs import Definitions, collect_definitions, problems_in

#: Folders whose sub-folders with a pyproject are example distributions, checked too.
EXAMPLE_GROUPS = ("examples",)

#: Third-party SDK -> the only distribution allowed to import it.
SDK_OWNERS: Mapping[str, str] = {
    "kubernetes": "torchx-k8s",
    "boto3": "torchx-aws",
    "botocore": "torchx-aws",
    "docker": "torchx-docker",
}


def imported_modules(tree: ast.AST) -> Iterator[tuple[int, str]]:
    """``(line, dotted module name)`` for every absolute import in ``tree``."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level or not node.module:
                continue  # relative: inside the importing package
            yield node.lineno, node.module
            for alias in node.names:
                if alias.name != "*":
                    yield node.lineno, f"{node.module}.{alias.name}"
        elif isinstance(node, ast.Call) and node.args:
            func = node.func
            name = (
                func.attr
                if isinstance(func, ast.Attribute)
                else func.id
                if isinstance(func, ast.Name)
                else None
            )
            arg = node.args[0]
            if (
                name in ("import_module", "__import__")
                and isinstance(arg, ast.Constant)
                and isinstance(arg.value, str)
                and not arg.value.startswith(".")
            ):
                yield node.lineno, arg.value


def private_part(module: str) -> str | None:
    """The first private dotted part of ``module`` (``_x``, not ``__x__``), or None.

    >>> private_part("torchx.specs._version"), private_part("torchx.specs.__version__")
    ('_version', None)
    """
    for part in module.split(".")[1:]:
        if part.startswith("_") and not (part.startswith("__") and part.endswith("__")):
            return part
    return None


def _python_files(folder: Path) -> Iterator[Path]:
    if folder.is_dir():
        for path in sorted(folder.rglob("*.py")):
            if "__pycache__" not in path.parts and not any(p.startswith(".") for p in path.parts):
                yield path


Parsed = list[tuple[Path, ast.AST]]


def _shown(path: Path, root: Path) -> Path:
    return path.relative_to(root) if path.is_relative_to(root) else path


def parse_files(paths: Iterable[Path], root: Path, problems: list[str]) -> Parsed:
    """``(path, tree)`` of each file; one that does not parse is a problem."""
    parsed: Parsed = []
    for path in paths:
        try:
            parsed.append((path, ast.parse(path.read_bytes(), str(path))))
        except SyntaxError as e:
            problems.append(f"{_shown(path, root)}:{e.lineno}: cannot parse: {e.msg}")
    return parsed


def dist_files(dist: Dist) -> list[Path]:
    """The Python files of a distribution that are checked: ``src/`` and ``tests/``."""
    return [p for folder in (dist.src, dist.folder / "tests") for p in _python_files(folder)]


def import_problems(
    tree: ast.AST,
    shown: str,
    name: str,
    may_import: Iterable[str],
    package_owners: Mapping[str, str],
) -> list[str]:
    """The import problems of one file of distribution ``name``.

    ``may_import``: the siblings it may import. Required and optional siblings alike:
    an import of an extra's package is expected to be lazy or guarded, which reading
    the source cannot judge.
    """
    allowed = set(may_import)
    problems: list[str] = []
    reported: set[tuple[int, str]] = set()
    for line, module in sorted(imported_modules(tree)):
        owner = owner_of(module, package_owners)
        top = module.split(".")[0]
        sdk_owner = SDK_OWNERS.get(top)
        if owner is not None and owner != name and owner not in allowed:
            if (line, owner) not in reported:
                reported.add((line, owner))
                problems.append(
                    f"{shown}:{line}: imports {module} (owned by {owner}), which "
                    f"{name} does not declare as a dependency; add "
                    f'"{owner}" to its pyproject dependencies or drop the import'
                )
        elif (
            owner is not None
            and owner != name
            and private_part(module) is not None
            and (line, owner) not in reported
        ):
            reported.add((line, owner))
            problems.append(
                f"{shown}:{line}: imports {module}, private to {owner} "
                f"({private_part(module)!r} starts with '_'); use {owner}'s public "
                "API, or make what is needed public there"
            )
        elif sdk_owner is not None and sdk_owner != name and (line, top) not in reported:
            reported.add((line, top))
            problems.append(
                f"{shown}:{line}: imports {top}, which only {sdk_owner} may import "
                f"(the SDK of that plugin); use {sdk_owner}'s public API instead"
            )
    return problems


def check(root: Path = ROOT) -> list[str]:
    """Every problem in the repository at ``root``, one line each."""
    try:
        dists = {**distributions(root), **distributions(root, groups=EXAMPLE_GROUPS)}
        package_owners = owners(dists)
    except LayoutError as e:
        return [str(e)]
    problems: list[str] = []
    parsed = {name: parse_files(dist_files(d), root, problems) for name, d in dists.items()}
    defined = {name: _definitions(files) for name, files in parsed.items()}
    for name, dist in dists.items():
        siblings = dist.sibling_closure(dists, extras=("*",))
        theirs = {sibling: defined[sibling] for sibling in siblings}
        for path, tree in parsed[name]:
            shown = str(_shown(path, root))
            problems += import_problems(tree, shown, name, siblings, package_owners)
            problems += problems_in(tree, shown, defined[name], theirs, name)
    # Example scripts outside any distribution (examples/ddp/train.py) are a user's
    # code: they may import every distribution's public API, and nothing private of any.
    folders = [dist.folder for dist in dists.values()]
    for group in EXAMPLE_GROUPS:
        scripts = [
            path
            for path in _python_files(root / group)
            if not any(path.is_relative_to(folder) for folder in folders)
        ]
        for path, tree in parse_files(scripts, root, problems):
            shown = str(_shown(path, root))
            problems += import_problems(tree, shown, shown, dists, package_owners)
            problems += problems_in(tree, shown, _definitions([(path, tree)]), defined, shown)
    return problems


def _definitions(files: Parsed) -> Definitions:
    found = Definitions()
    collect_definitions((tree for _, tree in files), (path for path, _ in files), found)
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=ROOT, help="repository root")
    args = parser.parse_args(argv)
    problems = check(args.root.resolve())
    for problem in problems:
        print(problem)
    if problems:
        print(f"check_imports: {len(problems)} problem(s)", file=sys.stderr)
        return 1
    found = distributions(args.root.resolve()) | distributions(args.root.resolve(), EXAMPLE_GROUPS)
    print(f"check_imports: OK ({len(found)} distributions)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
