"""Private attributes used across distributions: ``info._scheduler = ...`` in the Runner.

A name that starts with ``_`` is private to the distribution that defines it: another
distribution that reads or writes it depends on a detail that may change in any release
(the import rule of ``check_imports`` catches ``from torchx.specs._version import ...``;
this catches ``obj._field`` on an object of a sibling's class). Without type inference
the rule works on names, and is built to report few false alarms:

* **Defined in a distribution**: a ``def``/``class`` named ``_x``; ``_x = ...`` or
  ``_x: T`` (a module global, a class attribute or field); ``self._x = ...`` (or
  ``cls._x``) in its methods; ``import y as _x``; a module or package file ``_x``.
* **Used**: every ``obj._x`` in the distribution's code, ``_x`` neither a dunder
  (``__x__``) nor a "sunder" of :mod:`enum` (``_value_``), nor one of the few public
  names of the standard library that start with ``_`` (``os._exit``, ``sys._getframe``,
  a namedtuple's ``_replace``).
* **Reported**: a use of ``_x`` defined by a distribution this one depends on (the only
  places an object of another distribution's class can come from) and not by this one.
  A *write* ``obj._x = v`` (``obj`` not ``self``/``cls``) must be matched by a data
  definition here (an assignment, not only a method of that name), so writing a
  sibling's field is caught even where a method shares its name.

What it cannot see: a private name defined both here and in the sibling and read here
(``dryrun_info._app`` where this distribution has an ``_app`` too), and ``getattr`` with
a string. Standard library only.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

#: Names of the standard library that start with ``_`` and are its public API.
STDLIB_PUBLIC = frozenset(
    {
        "_exit",  # os._exit
        "_getframe",  # sys._getframe
        "_current_frames",
        "_xoptions",
        "_replace",  # namedtuple API
        "_asdict",
        "_fields",
        "_field_defaults",
        "_make",
    }
)

_SELF = frozenset({"self", "cls"})


def is_private(name: str) -> bool:
    """``_x`` and ``__x`` are private; ``__x__`` (dunder) and ``_x_`` (enum's sunder) are not.

    >>> [is_private(n) for n in ("_app", "__mangled", "__init__", "_value_", "app", "_")]
    [True, True, False, False, False, False]
    """
    if not name.startswith("_") or name == "_" or name in STDLIB_PUBLIC:
        return False
    if name.startswith("__") and name.endswith("__"):
        return False
    return not (name.endswith("_") and not name.startswith("__"))


@dataclass
class Definitions:
    """The private names one distribution defines: all of them, and those defined as data."""

    names: set[str] = field(default_factory=set)
    data: set[str] = field(default_factory=set)

    def add(self, name: str, *, data: bool) -> None:
        if is_private(name):
            self.names.add(name)
            if data:
                self.data.add(name)


def _targets(node: ast.AST) -> Iterator[ast.expr]:
    if isinstance(node, ast.Assign):
        for target in node.targets:
            yield from _unpack(target)
    elif isinstance(
        node, ast.AnnAssign | ast.AugAssign | ast.For | ast.AsyncFor | ast.comprehension
    ):
        yield from _unpack(node.target)
    elif isinstance(node, ast.withitem) and node.optional_vars is not None:
        yield from _unpack(node.optional_vars)
    elif isinstance(node, ast.NamedExpr):
        yield node.target


def _unpack(target: ast.expr) -> Iterator[ast.expr]:
    if isinstance(target, ast.Tuple | ast.List):
        for elt in target.elts:
            yield from _unpack(elt)
    elif isinstance(target, ast.Starred):
        yield from _unpack(target.value)
    else:
        yield target


def _is_self(node: ast.expr) -> bool:
    return isinstance(node, ast.Name) and node.id in _SELF


def collect_definitions(trees: Iterable[ast.AST], paths: Iterable[Path], into: Definitions) -> None:
    """Adds what ``trees`` (and the module files ``paths``) define to ``into``.

    A plain name counts where it becomes an attribute: at module or class level (a
    function's local ``_x`` makes no ``obj._x``); ``self._x``/``cls._x`` anywhere.
    """
    for path in paths:
        into.add(path.stem if path.name != "__init__.py" else path.parent.name, data=True)
    for tree in trees:
        _define(tree, into, attribute_level=True)


def _define(node: ast.AST, into: Definitions, *, attribute_level: bool) -> None:
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        into.add(node.name, data=False)
    elif isinstance(node, ast.Import | ast.ImportFrom):
        for alias in node.names:
            into.add(alias.asname or alias.name.split(".")[0], data=True)
    else:
        for target in _targets(node):
            if isinstance(target, ast.Name) and attribute_level:
                into.add(target.id, data=True)
            elif isinstance(target, ast.Attribute) and _is_self(target.value):
                into.add(target.attr, data=True)
    # a class body's names are attributes; a function body's are locals
    inner = isinstance(node, ast.ClassDef) or (
        attribute_level
        and not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda)
    )
    for child in ast.iter_child_nodes(node):
        _define(child, into, attribute_level=inner)


def uses(tree: ast.AST) -> Iterator[tuple[int, str, bool]]:
    """``(line, name, is_write)`` of every ``obj._name`` in ``tree`` (writes: to a non-self)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and is_private(node.attr):
            write = isinstance(node.ctx, ast.Store | ast.Del) and not _is_self(node.value)
            yield node.lineno, node.attr, write


def problems_in(
    tree: ast.AST, shown: str, own: Definitions, theirs: dict[str, Definitions], who: str
) -> list[str]:
    """One line per use in ``tree`` of a private name of a distribution in ``theirs``."""
    found: list[str] = []
    seen: set[tuple[int, str]] = set()
    for line, name, write in sorted(uses(tree)):
        defined_here = name in (own.data if write else own.names)
        owners = sorted(dist for dist, defs in theirs.items() if name in defs.names)
        if defined_here or not owners or (line, name) in seen:
            continue
        seen.add((line, name))
        found.append(
            f"{shown}:{line}: {'writes' if write else 'uses'} .{name}, private to "
            f"{' and '.join(owners)} (defined there, not in {who}); use the public API, "
            "or make what is needed public there"
        )
    return found
