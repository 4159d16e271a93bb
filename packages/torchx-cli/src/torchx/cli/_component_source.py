"""``torchx builtins --print NAME``: a component's source as a file that runs on its own.

Printing only the component's function left out what it uses from its module (the
imports, ``DEFAULT_IMAGE``, helper functions): the file failed with ``NameError``. Here
the module is read with :mod:`ast`, and the file gets, in the module's order, the
``from __future__`` imports, every top-level import, constant and function that the
component needs (following helpers to what they need in turn), then the component.
So ``torchx builtins --print dist.ddp > ddp.py`` gives a file to edit and to run with
``torchx run ddp.py:ddp ...``; a header comment says so.
"""

from __future__ import annotations

import ast
import inspect
from typing import Any

__all__ = ["standalone_source"]


def _bound_names(node: ast.stmt) -> set[str]:
    """Names a top-level statement binds (imports, assignments, defs, classes)."""
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return {(a.asname or a.name).split(".")[0] for a in node.names}
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {node.name}
    if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        return {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
    return set()


def _used_names(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def standalone_source(name: str, fn: Any) -> str:
    """The source of component ``fn`` (named ``name``) with what it needs from its module."""
    module = inspect.getmodule(fn)
    fn_name = fn.__name__
    if module is None:  # defined somewhere we cannot read: the function alone
        return inspect.getsource(fn)
    source = inspect.getsource(module)
    tree = ast.parse(source)
    lines = source.splitlines(keepends=True)
    defined: dict[str, list[int]] = {}  # name -> indexes of the statements binding it
    for i, node in enumerate(tree.body):
        for bound in _bound_names(node):
            defined.setdefault(bound, []).append(i)
    keep: set[int] = set()
    todo = [i for i, node in enumerate(tree.body) if fn_name in _bound_names(node)]
    while todo:
        i = todo.pop()
        if i in keep:
            continue
        keep.add(i)
        for used in _used_names(tree.body[i]):
            todo.extend(j for j in defined.get(used, []) if j not in keep)
    for i, node in enumerate(tree.body):
        if isinstance(node, ast.ImportFrom) and node.module == "__future__":
            keep.add(i)
    parts = []
    for i in sorted(keep):
        node = tree.body[i]
        start = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))])
        end = node.end_lineno or node.lineno
        parts.append("".join(lines[start - 1 : end]))
    stem = fn_name if fn_name != "<lambda>" else "component"
    header = (
        f"# {name}: the component of {module.__name__}, with what it uses from its module.\n"
        f"# Save it (torchx builtins --print {name} > {stem}.py), edit it, and run it:\n"
        f"#   torchx run {stem}.py:{fn_name} --help\n"
    )
    body = ""
    previous_block = False
    for part in parts:
        block = part.startswith(("def ", "class ", "@", "async "))
        if body:  # two blank lines around functions and classes, none between imports
            if block or previous_block:
                body += "\n\n"
            elif body.startswith("from __future__") and body.count("\n") == 1:
                body += "\n"
        body += part
        previous_block = block
    return header + "\n" + body
