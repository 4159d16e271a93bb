"""The pieces of the serializer's error messages, shared by its two halves.

:mod:`torchx.specs.serialize` (documents, JSON, YAML) and :mod:`torchx.specs._converter`
(cattrs) both say what is wrong in one line per problem, ``path: what is wrong``
(``roles[1].resource.memMB: expected int, got 'lots'``), with bad values shown short.
Standard library only: the serializer imports it without cattrs (:func:`error_lines` reads
cattrs' errors, so it runs only once cattrs has raised one).
"""

from __future__ import annotations

import reprlib
import types
import typing
from typing import Any, Literal

from torchx.specs.errors import did_you_mean

_repr = reprlib.Repr()
_repr.maxstring = 60
_repr.maxother = 60
_repr.maxlist = _repr.maxdict = _repr.maxtuple = _repr.maxset = 4
_repr.maxlevel = 3


def show(value: object) -> str:
    """A short, one-line repr of a bad value for an error message."""
    try:
        text = _repr.repr(value)
    except Exception:
        text = f"<{type(value).__name__} object>"
    return text.replace("\n", "\\n")


class Invalid(Exception):
    """Raised by the converter's hooks; turned into one ``path: message`` line.

    ``subpath`` locates the problem below the value the hook was given (inside a JSON
    value), ``expected`` lets an Optional hook widen "expected int" to "int or null".
    """

    def __init__(
        self,
        expected: str | None = None,
        got: object = None,
        *,
        message: str | None = None,
        subpath: str = "",
    ) -> None:
        super().__init__(expected, message)
        self.expected = expected
        self.got = got
        self.message = message
        self.subpath = subpath

    def describe(self) -> str:
        if self.message is not None:
            return self.message
        return f"expected {self.expected}, got {show(self.got)}"

    def __str__(self) -> str:
        return (f"{self.subpath}: " if self.subpath else "") + self.describe()


def type_name(tp: Any) -> str:
    """``list[str]``, ``Resource``, ``BindMount | VolumeMount``: short names for messages."""
    if tp is type(None) or tp is None:
        return "null"
    if tp is Any:
        return "Any"
    if tp is Ellipsis:
        return "..."
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin in (typing.Union, types.UnionType):
        return " | ".join(type_name(a) for a in args)
    if origin is Literal:
        return " | ".join(repr(a) for a in args)
    if origin is not None and args:
        return f"{type_name(origin)}[{', '.join(type_name(a) for a in args)}]"
    return getattr(tp, "__name__", None) or repr(tp)


def unknown_field(key: object, allowed: list[str]) -> str:
    """``unknown field 'imagee' (did you mean 'image'?)``, else the fields it may be."""
    if isinstance(key, str):
        hint = did_you_mean(key, allowed)
        if hint:
            return f"unknown field {key!r}{hint}"
    return f"unknown field {show(key)} (expected one of {', '.join(allowed)})"


def line(path: str, message: str) -> str:
    """One error line: ``path: message``, or the message alone at the top."""
    return f"{path}: {message}" if path else message


def error_lines(exc: BaseException) -> list[str]:
    """One ``path: what is wrong`` line per error in ``exc``, a cattrs exception group.

    cattrs notes on each error where it happened (an attribute, a list index, a dict key),
    as its ``transform_error`` reads them; so do these lines, in this package's words.
    """
    out: list[str] = []
    _walk(exc, "", out)
    return out


def _walk(exc: BaseException, path: str, out: list[str]) -> None:
    from cattrs.errors import (  # loaded already: cattrs raised exc
        AttributeValidationNote,
        BaseValidationError,
        ForbiddenExtraKeysError,
        IterableValidationNote,
    )

    if isinstance(exc, BaseValidationError):
        for sub in exc.exceptions:
            sub_path = path
            # One note per level the exception passed without being wrapped: outermost last.
            for note in reversed(getattr(sub, "__notes__", [])):
                if isinstance(note, AttributeValidationNote):
                    sub_path = f"{sub_path}.{note.name}" if sub_path else note.name
                elif isinstance(note, IterableValidationNote):
                    sub_path = f"{sub_path}[{note.index!r}]"
            if isinstance(sub, KeyError) and sub_path != path:
                out.append(line(sub_path, "required field missing"))
            else:
                _walk(sub, sub_path, out)
    elif isinstance(exc, ForbiddenExtraKeysError):
        allowed = _field_names(exc.cl)
        for key in sorted(exc.extra_fields, key=repr):
            out.append(line(path, unknown_field(key, allowed)))
    elif isinstance(exc, Invalid):
        out.append(line((path + exc.subpath).removeprefix("."), exc.describe()))
    elif isinstance(exc, RecursionError):
        out.append(line(path, "nested too deeply"))
    else:
        text = " ".join(str(exc).split()) or type(exc).__name__
        out.append(line(path, text))


def _field_names(cls: type) -> list[str]:
    import attrs

    try:
        return [a.name for a in attrs.fields(cls) if a.init]
    except Exception:
        return []
