"""What a component parameter's annotation means on the command line: its :class:`ParamType`.

A component's parameters are filled from ``torchx run`` arguments, so each annotation
must be one the command line can express: ``str``, ``int``, ``float``, ``bool``,
``list[X]``, ``dict[K, V]``, ``dict[K, list[V]]`` and ``Optional`` of these (see
:mod:`torchx.specs.builders` for how values are written). :func:`type_of_annotation`
reads an annotation, given as an object or as text (a module with ``from __future__
import annotations``), into a :class:`ParamType`, whose :meth:`~ParamType.parse`
converts one command-line value.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import attrs

__all__ = ["SUPPORTED", "ParamType", "type_of_annotation"]

_PRIMITIVES: Final = frozenset({"str", "int", "float", "bool"})
_LIST_NAMES: Final = frozenset({"list", "List"})
_DICT_NAMES: Final = frozenset({"dict", "Dict"})
SUPPORTED: Final = (
    "str, int, float, bool, list[X], dict[K, V], dict[K, list[V]] or Optional of these"
)
_TRUE: Final = frozenset({"true", "1", "yes", "y", "on", "t"})
_FALSE: Final = frozenset({"false", "0", "no", "n", "off", "f"})


@attrs.frozen
class ParamType:
    """The type of a component parameter, as the command line parser sees it.

    ``kind`` is ``"str"``, ``"int"``, ``"float"``, ``"bool"``, ``"list"`` or
    ``"dict"``; ``items`` the element kind of a list or the key and value kinds
    of a dict; ``optional`` whether ``None`` is allowed.

    >>> ParamType("dict", ("str", "int")).parse("a=1,b=2")
    {'a': 1, 'b': 2}
    >>> str(ParamType("list", ("float",), optional=True))
    'list[float] | None'
    """

    kind: str
    #: a dict's value kind may be ``"list[X]"`` (``dict[str, list[str]]``)
    items: tuple[str, ...] = ()
    optional: bool = False

    def __str__(self) -> str:
        text = f"{self.kind}[{', '.join(self.items)}]" if self.items else self.kind
        return f"{text} | None" if self.optional else text

    def parse(self, text: str) -> Any:
        """Converts one command line value; raises ValueError with what was expected."""
        if self.kind == "list":
            return [_primitive(self.items[0], v.strip()) for v in _split_list(text)]
        if self.kind == "dict":
            key_kind, value_kind = self.items
            return {
                _primitive(key_kind, k): _value(value_kind, v) for k, v in _split_dict(text).items()
            }
        return _primitive(self.kind, text)


def _value(kind: str, text: str) -> Any:
    """A dict value: a primitive, or ``list[X]`` split at ``,``."""
    if kind.startswith("list["):
        return [_primitive(kind[5:-1], v.strip()) for v in _split_list(text)]
    return _primitive(kind, text)


def _primitive(kind: str, text: str) -> Any:
    if kind == "str":
        return text
    if kind == "bool":
        word = text.strip().lower()
        if word in _TRUE:
            return True
        if word in _FALSE:
            return False
        raise ValueError(f"expected true or false, got {text!r}")
    try:
        return int(text) if kind == "int" else float(text)
    except ValueError:
        article = "an integer" if kind == "int" else "a number"
        raise ValueError(f"expected {article}, got {text!r}") from None


def _split_list(text: str) -> list[str]:
    return [] if not text.strip() else text.split(",")


def _split_dict(text: str) -> dict[str, str]:
    """``K1=v1,K2=v2`` (or ``;``); a piece without ``=`` continues the previous value."""
    out: dict[str, str] = {}
    if not text.strip():
        return out
    key: str | None = None
    value = ""
    delim = ""
    start = 0
    pieces: list[tuple[str, str]] = []  # (delimiter before, piece)
    for i, ch in enumerate(text):
        if ch in ",;":
            pieces.append((delim, text[start:i]))
            delim, start = ch, i + 1
    pieces.append((delim, text[start:]))
    for before, piece in pieces:
        if "=" in piece:
            if key is not None:
                out[key] = _unquote_empty(value.strip())
            k, _, value = piece.partition("=")
            key = k.strip()
            if not key:
                raise ValueError(f"expected KEY=VALUE pairs, got an empty key in {piece!r}")
        elif key is None:
            raise ValueError(
                f"expected KEY=VALUE pairs separated by ',' (e.g. A=1,B=2), got {text!r}"
            )
        else:
            value += before + piece
    assert key is not None
    out[key] = _unquote_empty(value.strip())
    return out


def _unquote_empty(value: str) -> str:
    return "" if value in ('""', "''") else value


def _type_from_string(text: str) -> ParamType | None:
    import ast

    try:
        node = ast.parse(text.strip(), mode="eval").body
    except SyntaxError:
        return None
    return _type_from_ast(node)


def _ast_name(node: Any) -> str | None:
    import ast

    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr  # typing.Optional, t.List, builtins.str
    return None


def _type_from_ast(node: Any) -> ParamType | None:
    import ast

    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return _type_from_string(node.value)
    members: list[Any] | None = None
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        members = _flatten_or(node)
    elif isinstance(node, ast.Subscript):
        base = _ast_name(node.value)
        elts = list(node.slice.elts) if isinstance(node.slice, ast.Tuple) else [node.slice]
        if base == "Optional" and len(elts) == 1:
            members = [elts[0], ast.Constant(value=None)]
        elif base == "Union":
            members = elts
        elif base in _LIST_NAMES and len(elts) == 1:
            item = _ast_name(elts[0])
            return ParamType("list", (item,)) if item in _PRIMITIVES else None
        elif base in _DICT_NAMES and len(elts) == 2:
            k, value = _ast_name(elts[0]), _type_from_ast(elts[1])
            if k in _PRIMITIVES and value is not None and not value.optional:
                assert k is not None
                if value.kind in _PRIMITIVES:
                    return ParamType("dict", (k, value.kind))
                if value.kind == "list":
                    return ParamType("dict", (k, str(value)))
            return None
        else:
            return None
    if members is not None:
        rest = [m for m in members if not _ast_is_none(m)]
        if len(rest) != 1 or len(rest) == len(members):
            return None
        inner = _type_from_ast(rest[0])
        return None if inner is None or inner.optional else attrs.evolve(inner, optional=True)
    name = _ast_name(node)
    return ParamType(name) if name in _PRIMITIVES else None


def _flatten_or(node: Any) -> list[Any]:
    import ast

    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        return _flatten_or(node.left) + _flatten_or(node.right)
    return [node]


def _ast_is_none(node: Any) -> bool:
    import ast

    return (isinstance(node, ast.Constant) and node.value is None) or _ast_name(node) in (
        "None",
        "NoneType",
    )


_PRIMITIVE_TYPES: Final[Mapping[type, str]] = {str: "str", int: "int", float: "float", bool: "bool"}


def type_of_annotation(ann: Any) -> ParamType | None:
    """The :class:`ParamType` of a parameter annotated ``ann`` (an object or its text, as
    under ``from __future__ import annotations``), or None when components cannot take it.

    >>> str(type_of_annotation("Optional[list[int]]"))
    'list[int] | None'
    >>> type_of_annotation(set) is None
    True
    """
    import types
    import typing

    if isinstance(ann, str):
        return _type_from_string(ann)
    if isinstance(ann, type) and ann in _PRIMITIVE_TYPES:
        return ParamType(_PRIMITIVE_TYPES[ann])
    origin = typing.get_origin(ann)
    args = typing.get_args(ann)
    if origin is typing.Union or origin is types.UnionType:
        rest = [a for a in args if a is not type(None)]
        if len(rest) != 1 or len(rest) == len(args):
            return None
        inner = type_of_annotation(rest[0])
        return None if inner is None or inner.optional else attrs.evolve(inner, optional=True)
    if origin is list and len(args) == 1 and args[0] in _PRIMITIVE_TYPES:
        return ParamType("list", (_PRIMITIVE_TYPES[args[0]],))
    if origin is dict and len(args) == 2 and args[0] in _PRIMITIVE_TYPES:
        value = type_of_annotation(args[1])
        if value is not None and not value.optional and value.kind != "dict":
            return ParamType("dict", (_PRIMITIVE_TYPES[args[0]], str(value)))
    return None
