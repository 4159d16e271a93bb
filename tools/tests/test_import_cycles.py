"""No two modules of a distribution import each other, lazily or not.

A loop (``a`` imports ``b`` at its top, ``b`` imports ``a`` inside a function) works
until someone moves an import, and makes the order modules load in matter. Imports
under ``if TYPE_CHECKING:`` do not count (they never run), nor imports of a package's
``__init__`` (importing ``pkg.mod`` always imports ``pkg`` first).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

from _layout import distributions
from check_imports import imported_modules
from conftest import REPO

# Loops kept on purpose, each with its reason (none today: ``resource(h=...)``, which
# looks the name up in the registry of named resources, moved from ``torchx.specs.api``
# to ``torchx.specs.resources``, so the core types import nothing above them).
ALLOWED: list[set[str]] = []


def _modules() -> dict[str, Path]:
    mods: dict[str, Path] = {}
    for dist in distributions(REPO).values():
        for path in sorted(dist.src.rglob("*.py")):
            parts = path.relative_to(dist.src).with_suffix("").parts
            mods[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return mods


def _runtime_imports(path: Path) -> Iterator[str]:
    tree = ast.parse(path.read_bytes())
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            node.body = []
    for _, module in imported_modules(tree):
        yield module


def _graph() -> dict[str, set[str]]:
    mods = _modules()
    graph: dict[str, set[str]] = {}
    for name, path in mods.items():
        deps = set()
        for module in _runtime_imports(path):
            while module and module not in mods:
                module = module.rpartition(".")[0]
            if module and module != name and mods[module].name != "__init__.py":
                deps.add(module)
        graph[name] = deps
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[set[str]]:
    """Strongly connected components of more than one module (Tarjan, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[set[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(component)
    return found


def test_cycles_are_found() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [{"a", "b", "c"}]


def test_no_import_loops_inside_the_distributions() -> None:
    graph = _graph()
    assert "torchx.cli.main" in graph and "torchx.specs.plugins" in graph
    loops = [c for c in _cycles(graph) if c not in ALLOWED]
    assert loops == [], f"modules importing each other: {loops}"


def test_the_loops_named_in_issue_11_are_gone() -> None:
    graph = _graph()
    assert "torchx.cli.main" not in graph["torchx.cli._parser"]
    assert "torchx.specs.plugins" not in graph["torchx.specs._plugin_reports"]
