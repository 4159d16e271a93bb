"""Turning specs into JSON-safe data, JSON and YAML, and back, without losing anything.

One preconfigured cattrs converter knows every spec type (:class:`~torchx.specs.AppDef`,
:class:`~torchx.specs.Role`, :class:`~torchx.specs.Resource`, the mounts,
:class:`~torchx.specs.Workspace`, :class:`~torchx.specs.AppStatus` and its parts) and
any other attrs class built from the same kinds of fields. It backs ``--json`` output,
the local scheduler's records and AppDef files (``torchx run app.yaml``).

Three levels, from plain data to text:

- :func:`unstructure` / :func:`structure`: spec objects to JSON-safe dicts and lists, and back.
- :func:`to_document` / :func:`from_document`: the same payload wrapped with its format version
  and kind, ``{"apiVersion": "torchx.specs/v1", "kind": "AppDef", "spec": {...}}``, so a
  file says what it holds and which version of the format wrote it.
- :func:`dumps_json` / :func:`loads_json`, :func:`dumps_yaml` / :func:`loads_yaml` (YAML needs
  the ``torchx-specs[yaml]`` extra) and :func:`load_appdef_file`.

>>> from torchx.specs import AppDef, Role, Resource
>>> app = AppDef("echo", [Role("hello", image="/tmp", entrypoint="echo", args=["hi"])])
>>> doc = to_document(app)
>>> doc["apiVersion"], doc["kind"], doc["spec"]["roles"][0]["retry_policy"]
('torchx.specs/v1', 'AppDef', 'APPLICATION')
>>> from_document(doc) == app
True
>>> loads_json(dumps_json(app)) == app
True

Reading is strict, so a typo never passes silently: unknown keys, wrong types (no
coercion: ``"4"`` is not an int, ``true`` is not an int) and missing required fields all
raise one :class:`SerializationError` that names every bad field by its path:

>>> try:
...     structure({"cpu": 1, "gpu": "two", "memMB": 1024, "tagz": {}}, Resource)
... except SerializationError as e:
...     print(e)
invalid Resource: gpu: expected int, got 'two'; unknown field 'tagz' (did you mean 'tags'?)

The wire format in short: attrs field names as keys (``memMB`` stays ``memMB``), enums by
name (``"REPLICA"``, ``"RUNNING"``), mounts tagged by ``"type"`` (``bind``, ``volume``,
``device``), free-form fields (``Role.metadata``, ``Resource.capabilities``, ``tags``,
``overrides``) as plain JSON values. Fields with defaults may be left out when reading;
writing always writes every field, in declaration order.

Import this module explicitly: it imports cattrs, which ``import torchx.specs`` never does.
"""

from __future__ import annotations

import importlib
import json
import math
import os
import reprlib
import types
import typing
from collections.abc import Callable, Mapping
from enum import Enum
from pathlib import Path, PurePath
from typing import Any, Literal, TypeVar, overload

import attrs
import cattrs
from cattrs.errors import (
    AttributeValidationNote,
    BaseValidationError,
    ClassValidationError,
    ForbiddenExtraKeysError,
    IterableValidationError,
    IterableValidationNote,
)
from cattrs.fns import identity
from cattrs.gen import make_dict_structure_fn, make_dict_unstructure_fn

from torchx.specs.api import (
    AppDef,
    AppState,
    AppStatus,
    Mount,
    ReplicaStatus,
    Resource,
    RetryPolicy,
    Role,
    RoleStatus,
)
from torchx.specs.errors import SpecError, did_you_mean
from torchx.specs.mounts import BindMount, DeviceMount, VolumeMount
from torchx.specs.workspace import Workspace

__all__ = [
    "API_VERSION",
    "KINDS",
    "SUPPORTED_API_VERSIONS",
    "SerializationError",
    "dumps_json",
    "dumps_yaml",
    "from_document",
    "load_appdef_file",
    "loads_json",
    "loads_yaml",
    "structure",
    "to_document",
    "unstructure",
]

T = TypeVar("T")

#: The format version :func:`to_document` writes.
API_VERSION: str = "torchx.specs/v1"

# Every apiVersion this module has ever written, each with the function that upgrades a
# payload of that version to the current one: ``(kind, spec) -> spec``. When the format
# changes, bump API_VERSION, add the new version with _no_migration, and give the old
# one a function that rewrites its payloads (renamed fields, new tags) into the new shape.
# Never drop an entry: files written by older releases must keep loading.
_MIGRATIONS: dict[str, Callable[[str, Any], Any]] = {}


def _no_migration(kind: str, spec: Any) -> Any:
    return spec


_MIGRATIONS[API_VERSION] = _no_migration

#: Every apiVersion :func:`from_document` reads, oldest first.
SUPPORTED_API_VERSIONS: tuple[str, ...] = tuple(_MIGRATIONS)

_KIND_CLASSES: tuple[type, ...] = (
    AppDef,
    Role,
    Resource,
    RetryPolicy,
    AppState,
    BindMount,
    VolumeMount,
    DeviceMount,
    Workspace,
    AppStatus,
    RoleStatus,
    ReplicaStatus,
)
_KINDS: dict[str, type] = {cls.__name__: cls for cls in _KIND_CLASSES}
_CLASS_KIND: dict[type, str] = {cls: kind for kind, cls in _KINDS.items()}

#: The document kinds :func:`from_document` knows without being told the class.
KINDS: Mapping[str, type] = types.MappingProxyType(_KINDS)

_DOC_KEYS = ("apiVersion", "kind", "spec")

# Mounts are written as a tagged union: the "type" key says which class the rest is.
_MOUNT_TAG = "type"
_MOUNT_TYPES: dict[str, type] = {"bind": BindMount, "volume": VolumeMount, "device": DeviceMount}
_MOUNT_TAGS: dict[type, str] = {cls: tag for tag, cls in _MOUNT_TYPES.items()}

_MAX_ERRORS_SHOWN = 10


class SerializationError(SpecError):
    """A document or object could not be converted; the message names every bad field.

    ``errors`` holds one line per problem, ``path: what is wrong`` (``roles[1].resource.memMB:
    expected int, got 'lots'``); the message shows the first few after a short header.
    """

    def __init__(self, message: str, errors: list[str] | None = None) -> None:
        super().__init__(message)
        self.errors: list[str] = list(errors) if errors else [message]


# --------------------------------------------------------------------------- messages

_repr = reprlib.Repr()
_repr.maxstring = 60
_repr.maxother = 60
_repr.maxlist = _repr.maxdict = _repr.maxtuple = _repr.maxset = 4
_repr.maxlevel = 3


def _show(value: object) -> str:
    """A short, one-line repr of a bad value for an error message."""
    try:
        text = _repr.repr(value)
    except Exception:
        text = f"<{type(value).__name__} object>"
    return text.replace("\n", "\\n")


class _Invalid(Exception):
    """Raised by this module's hooks; turned into one ``path: message`` line.

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
        return f"expected {self.expected}, got {_show(self.got)}"

    def __str__(self) -> str:
        return (f"{self.subpath}: " if self.subpath else "") + self.describe()


def _type_name(tp: Any) -> str:
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
        return " | ".join(_type_name(a) for a in args)
    if origin is Literal:
        return " | ".join(repr(a) for a in args)
    if origin is not None and args:
        return f"{_type_name(origin)}[{', '.join(_type_name(a) for a in args)}]"
    return getattr(tp, "__name__", None) or repr(tp)


def _join_attr(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def _line(path: str, message: str) -> str:
    return f"{path}: {message}" if path else message


def _field_names(cls: type) -> list[str]:
    try:
        return [a.name for a in attrs.fields(cls) if a.init]
    except Exception:
        return []


def _unknown_field(key: object, allowed: list[str]) -> str:
    if isinstance(key, str):
        hint = did_you_mean(key, allowed)
        if hint:
            return f"unknown field {key!r}{hint}"
    return f"unknown field {_show(key)} (expected one of {', '.join(allowed)})"


def _walk(exc: BaseException, path: str, out: list[str]) -> None:
    """Flattens cattrs' detailed-validation exception groups into ``path: message`` lines."""
    if isinstance(exc, BaseValidationError):
        for sub in exc.exceptions:
            sub_path = path
            # One note per level the exception passed without being wrapped: outermost last.
            for note in reversed(getattr(sub, "__notes__", [])):
                if isinstance(note, AttributeValidationNote):
                    sub_path = _join_attr(sub_path, note.name)
                elif isinstance(note, IterableValidationNote):
                    sub_path = f"{sub_path}[{note.index!r}]"
            if isinstance(sub, KeyError) and sub_path != path:
                out.append(_line(sub_path, "required field missing"))
            else:
                _walk(sub, sub_path, out)
    elif isinstance(exc, ForbiddenExtraKeysError):
        allowed = _field_names(exc.cl)
        for key in sorted(exc.extra_fields, key=repr):
            out.append(_line(path, _unknown_field(key, allowed)))
    elif isinstance(exc, _Invalid):
        out.append(_line((path + exc.subpath).removeprefix("."), exc.describe()))
    elif isinstance(exc, RecursionError):
        out.append(_line(path, "nested too deeply"))
    else:
        text = " ".join(str(exc).split()) or type(exc).__name__
        out.append(_line(path, text))


def _error(header: str, errors: list[str]) -> SerializationError:
    shown = "; ".join(errors[:_MAX_ERRORS_SHOWN])
    if len(errors) > _MAX_ERRORS_SHOWN:
        shown += f"; ... and {len(errors) - _MAX_ERRORS_SHOWN} more"
    return SerializationError(f"{header}: {shown}", errors)


# --------------------------------------------------------------------------- hooks
#
# Two converters share every hook factory: _FAST (no detailed validation) does the work;
# when it raises, the same call is re-run on _DETAILED, whose hooks wrap every field and
# element error with its location so that _walk can name each bad field. Valid input
# never pays for that bookkeeping. Both accept exactly the same input (a test holds
# them to it): the fast path checks common fields inline, in generated code, what the
# detailed one checks hook by hook.

_SHook = Callable[[Any, Any], Any]
_UHook = Callable[[Any], Any]

_JSON_EXPECTED = "a JSON value (dict, list, str, int, float, bool or null)"


def _json_value(value: Any) -> Any:
    """Validates and copies a free-form JSON value (metadata, capabilities, tags...)."""
    t = type(value)
    if t is str or t is int or t is bool or value is None:
        return value
    if t is dict:
        out: dict[str, Any] = {}
        key: Any = None
        try:
            for key, item in value.items():
                if type(key) is not str:
                    raise _Invalid("a str key", key, subpath=f"[{_show(key)}]")
                ti = type(item)
                if ti is str or ti is int or ti is bool or item is None:
                    out[key] = item
                else:
                    out[key] = _json_value(item)
        except _Invalid as e:
            if type(key) is str:
                e.subpath = f"[{key!r}]{e.subpath}"
            raise
        return out
    if t is list:
        items: list[Any] = []
        index = 0
        try:
            for index, item in enumerate(value):  # noqa: B007 - read by the handler
                ti = type(item)
                if ti is str or ti is int or ti is bool or item is None:
                    items.append(item)
                else:
                    items.append(_json_value(item))
        except _Invalid as e:
            e.subpath = f"[{index}]{e.subpath}"
            raise
        return items
    if t is float:
        if math.isfinite(value):
            return value
        raise _Invalid("a finite number", value)
    if isinstance(value, dict):
        return _json_value(dict(value))
    if isinstance(value, list):
        return _json_value(list(value))
    raise _Invalid(_JSON_EXPECTED, value)


def _s_json(value: Any, _: Any) -> Any:
    return _json_value(value)


def _json_dict(value: Any, _: Any = None) -> Any:
    """A ``dict[str, Any]`` field (both ways): ``_json_value`` inlined for flat dicts."""
    if type(value) is not dict:
        if isinstance(value, dict):
            return _json_value(dict(value))
        raise _Invalid("dict", value)
    out: dict[str, Any] = {}
    for key, item in value.items():
        t = type(item)
        if type(key) is not str or not (t is str or t is int or t is bool or item is None):
            return _json_value(value)  # nested or bad: the general path (and its error)
        out[key] = item
    return out


def _enum_hooks(cls: type[Enum]) -> tuple[_SHook, _UHook]:
    """Enums by member name, never by value: ``"RUNNING"``, not ``3``."""
    members: Mapping[str, Enum] = cls.__members__
    names = [m.name for m in cls]

    def structure_enum(value: Any, _: Any) -> Any:
        if type(value) is str:
            member = members.get(value)
            if member is not None:
                return member
        hint = ""
        if isinstance(value, str):
            folded = [n for n in names if n.casefold() == value.casefold()]
            hint = f" (did you mean {folded[0]!r}?)" if folded else did_you_mean(value, names)
        raise _Invalid(message=f"expected one of {', '.join(names)}, got {_show(value)}{hint}")

    def unstructure_enum(value: Any) -> Any:
        if isinstance(value, cls):
            return value.name
        if type(value) is str and value in members:  # a str Enum's field set to the plain name
            return value
        raise _Invalid(cls.__name__, value)

    return structure_enum, unstructure_enum


_ENUM_HOOKS: dict[type, tuple[_SHook, _UHook]] = {}


def _enum_hooks_cached(cls: type[Enum]) -> tuple[_SHook, _UHook]:
    hooks = _ENUM_HOOKS.get(cls)
    if hooks is None:
        hooks = _ENUM_HOOKS[cls] = _enum_hooks(cls)
    return hooks


def _s_subclass(value: Any, cls: Any, base: type) -> Any:
    # Only reached for a subclass of str or int that _Hooks.prepare has not registered.
    if isinstance(cls, type) and issubclass(cls, Enum):
        return _enum_hooks_cached(cls)[0](value, cls)
    if type(value) is not base:
        raise _Invalid(base.__name__, value)
    return cls(value)


# Strict scalars: no coercion, and bool is not an int.
def _s_str(value: Any, cls: Any) -> Any:
    if cls is str:
        if type(value) is str:
            return value
        raise _Invalid("str", value)
    return _s_subclass(value, cls, str)


def _s_int(value: Any, cls: Any) -> Any:
    if cls is int:
        if type(value) is int:
            return value
        raise _Invalid("int", value)
    return _s_subclass(value, cls, int)


def _s_bool(value: Any, _: Any) -> Any:
    if type(value) is bool:
        return value
    raise _Invalid("bool", value)


def _s_float(value: Any, _: Any) -> Any:
    t = type(value)
    if (t is float or t is int) and math.isfinite(value):
        return float(value)
    raise _Invalid("a finite number", value)


def _s_none(value: Any, _: Any) -> Any:
    if value is None:
        return None
    raise _Invalid("null", value)


def _s_path(value: Any, cls: Any) -> Any:
    if type(value) is str:
        return cls(value)
    raise _Invalid("str", value)


def _u_str(value: Any) -> Any:
    if type(value) is str:
        return value
    raise _Invalid("str", value)


def _u_int(value: Any) -> Any:
    if type(value) is int:
        return value
    raise _Invalid("int", value)


def _u_bool(value: Any) -> Any:
    if type(value) is bool:
        return value
    raise _Invalid("bool", value)


def _u_float(value: Any) -> Any:
    t = type(value)
    if (t is float or t is int) and math.isfinite(value):
        return float(value)
    raise _Invalid("a finite number", value)


def _u_none(value: Any) -> Any:
    if value is None:
        return None
    raise _Invalid("null", value)


def _u_path(value: Any) -> Any:
    if isinstance(value, PurePath):
        return str(value)
    raise _Invalid("a path", value)


_EXACT_SCALARS = (str, int, bool)


def _is_union(tp: Any) -> bool:
    return typing.get_origin(tp) in (typing.Union, types.UnionType)


def _is_optional(tp: Any) -> bool:
    args = typing.get_args(tp) if _is_union(tp) else ()
    return len(args) == 2 and type(None) in args


def _optional_inner(tp: Any) -> Any:
    return next(a for a in typing.get_args(tp) if a is not type(None))


_PRIMITIVES = frozenset({str, int, float, bool, type(None)})


def _is_primitive_union(tp: Any) -> bool:
    return _is_union(tp) and all(a in _PRIMITIVES for a in typing.get_args(tp))


def _is_literal(tp: Any) -> bool:
    return typing.get_origin(tp) is Literal and all(
        type(a) in (str, int, bool, type(None)) for a in typing.get_args(tp)
    )


def _is_list(tp: Any) -> bool:
    return tp is list or typing.get_origin(tp) is list


def _is_dict(tp: Any) -> bool:
    return tp is dict or typing.get_origin(tp) is dict


def _is_enum(tp: Any) -> bool:
    return isinstance(tp, type) and issubclass(tp, Enum)


def _is_mount(tp: Any) -> bool:
    return _is_union(tp) and tp == Mount


def _scalar_test(expr: str, tp: Any) -> str | None:
    """Inline type test of ``expr`` for a str/int/bool type (or an Optional one), else None.

    Exactly what the scalar hooks accept, so fast and detailed paths agree.
    """
    if tp in _EXACT_SCALARS:
        return f"type({expr}) is {tp.__name__}"
    if _is_optional(tp) and _optional_inner(tp) in _EXACT_SCALARS:
        return f"({expr} is None or type({expr}) is {_optional_inner(tp).__name__})"
    return None


class _Absent:
    """Marks a key missing from the input (None is a value)."""


_ABSENT = _Absent()


class _Hooks:
    """The hook factories of one converter (fast or detailed)."""

    def __init__(self, conv: cattrs.Converter) -> None:
        self.conv = conv
        self.detailed = conv.detailed_validation
        self.enums: set[type] = set()
        self.prepared: set[Any] = set()
        self.generating: set[type] = set()

    def prepare(self, tp: Any) -> None:
        """Registers exact hooks for the Enums in ``tp``.

        cattrs dispatches classes before factories and matches subclasses, so a ``str``
        Enum would otherwise get the strict str hook; an exact registration wins.
        """
        if _is_enum(tp):
            if tp not in self.enums:
                self.enums.add(tp)
                s_hook, u_hook = _enum_hooks_cached(tp)
                self.conv.register_structure_hook(tp, s_hook)
                self.conv.register_unstructure_hook(tp, u_hook)
            return
        for arg in typing.get_args(tp):
            self.prepare(arg)

    def prepare_once(self, tp: Any) -> None:
        try:
            if tp in self.prepared:
                return
            self.prepared.add(tp)
        except TypeError:  # unhashable: not a type cattrs can handle anyway
            return
        self.prepare(tp)

    # Hook lookups that survive self-referencing classes (a Node with children: list[Node]).
    def shook(self, tp: Any) -> _SHook:
        self.prepare(tp)
        try:
            return self.conv.get_structure_hook(tp)
        except RecursionError:
            return lambda value, _: self.conv.get_structure_hook(tp)(value, tp)

    def uhook(self, tp: Any) -> _UHook:
        self.prepare(tp)
        try:
            return self.conv.get_unstructure_hook(tp)
        except RecursionError:
            return lambda value: self.conv.get_unstructure_hook(tp)(value)

    def by_class(self, value: Any) -> Any:
        """Unstructures an item of a bare ``list`` or ``dict`` by its own class."""
        self.prepare_once(type(value))
        return self.conv.unstructure(value)

    # --- attrs classes
    def _init_fields(self, cls: Any) -> list[attrs.Attribute[Any]]:
        attrs.resolve_types(cls)
        fields = [a for a in attrs.fields(cls) if a.init]
        for a in fields:
            self.prepare(a.type)
        return fields

    def _fast_structure_fn(self, cls: Any, tag_key: str | None = None) -> _SHook:
        """Generates the fast structuring function of an attrs class.

        Like cattrs' ``make_dict_structure_fn`` (which the detailed converter uses), but
        common fields (scalars, enums, lists and dicts of scalars) are checked inline
        instead of through a hook call each, defaults are resolved here instead of by a
        ``**kwargs`` call, and unknown keys are found by counting: calls and dicts per
        object are most of the cost of reading an AppDef with many roles. Any failure
        raises, and the detailed re-run explains it.
        ``tag_key`` names one extra key to tolerate (a mount's ``"type"``).
        """
        fields = self._init_fields(cls)
        if cls in self.generating:  # a class that contains itself: callers bind lazily
            raise RecursionError(cls)
        self.generating.add(cls)
        try:
            globs: dict[str, Any] = {"_Invalid": _Invalid, "_cls": cls, "_M": _ABSENT}
            lines = [
                "def structure(o, _=None):",
                "  if not isinstance(o, dict):",
                "    raise _Invalid('dict', o)",
                f"  n = {(tag_key is not None) + sum(a.default is attrs.NOTHING for a in fields)}",
            ]
            # Every argument is passed explicitly (defaults resolved here), so no kwargs
            # dict is built per object; factories that need ``self`` are left to attrs.
            args: list[str] = []
            kwargs: list[str] = []
            for i, a in enumerate(fields):
                default: Any = a.default
                self_factory = isinstance(default, attrs.Factory) and default.takes_self  # type: ignore[arg-type]
                if default is attrs.NOTHING:
                    lines.append(f"  v = o[{a.name!r}]")
                    indent = "  "
                else:
                    lines += [f"  v = o.get({a.name!r}, _M)", "  if v is _M:"]
                    if self_factory:  # left to attrs: pass the argument only when given
                        lines.append(f"    f{i} = _M")
                        kwargs.append(f"**({{}} if f{i} is _M else {{{a.alias!r}: f{i}}})")
                    elif isinstance(default, attrs.Factory):  # type: ignore[arg-type]
                        globs[f"d{i}"] = default.factory
                        lines.append(f"    f{i} = d{i}()")
                    else:
                        globs[f"d{i}"] = default
                        lines.append(f"    f{i} = d{i}")
                    lines += ["  else:", "    n += 1"]
                    indent = "    "
                lines += [indent + line for line in self._inline_field(a.type, i, globs)]
                if not self_factory:
                    args.append(f"{a.alias}=f{i}")
            lines += [
                "  if len(o) != n:",
                "    raise _Invalid('known keys only', o)",
                f"  return _cls({', '.join(args + kwargs)})",
            ]
            exec(
                compile("\n".join(lines), f"<torchx fast structure {cls.__qualname__}>", "exec"),
                globs,
            )
            fn: _SHook = globs["structure"]
            return fn
        finally:
            self.generating.discard(cls)

    def _inline_field(self, tp: Any, i: int, globs: dict[str, Any]) -> list[str]:
        """Code that checks and converts the input value ``v`` of type ``tp`` into ``f{i}``.

        The common field types are checked inline, exactly as their hooks would (see
        the hooks above); the rest call the hook. Every failure raises ``_Invalid``.
        """
        bad = f"raise _Invalid({_type_name(tp)!r}, v)"
        test = _scalar_test("v", tp)
        if test is not None:
            return [f"if not ({test}): {bad}", f"f{i} = v"]
        if _is_enum(tp):
            globs[f"e{i}"] = tp.__members__
            return [f"f{i} = e{i}.get(v) if type(v) is str else None", f"if f{i} is None: {bad}"]
        args = typing.get_args(tp)
        if _is_list(tp) and args and args[0] in _EXACT_SCALARS:
            return [
                f"if not isinstance(v, list): {bad}",
                "for x in v:",
                f"  if type(x) is not {args[0].__name__}: {bad}",
                f"f{i} = list(v)",
            ]
        if _is_dict(tp) and len(args) == 2 and args[0] is str and args[1] in _EXACT_SCALARS:
            return [
                f"if not isinstance(v, dict): {bad}",
                "for k, x in v.items():",
                f"  if type(k) is not str or type(x) is not {args[1].__name__}: {bad}",
                f"f{i} = dict(v)",
            ]
        if _is_optional(tp):  # None without a call (an unset workspace)
            inner = _optional_inner(tp)
            globs[f"h{i}"], globs[f"t{i}"] = self.shook(inner), inner
            return [f"f{i} = None if v is None else h{i}(v, t{i})"]
        globs[f"h{i}"], globs[f"t{i}"] = self.shook(tp), tp
        if _is_dict(tp) or _is_list(tp):  # empty containers without a call
            empty = "{}" if _is_dict(tp) else "[]"
            kind = "dict" if _is_dict(tp) else "list"
            return [f"f{i} = {empty} if type(v) is {kind} and not v else h{i}(v, t{i})"]
        return [f"f{i} = h{i}(v, t{i})"]

    def attrs_structure(self, cls: Any) -> _SHook:
        if self.detailed:
            self._init_fields(cls)
            fn = make_dict_structure_fn(cls, self.conv)

            def structure_attrs_detailed(value: Any, _: Any) -> Any:
                if isinstance(value, dict):
                    return fn(value)
                raise _Invalid("dict", value)

            return structure_attrs_detailed
        return self._fast_structure_fn(cls)

    def attrs_unstructure(self, cls: Any) -> _UHook:
        fields = self._init_fields(cls)
        if not self.detailed:
            # str/int/bool fields are copied as they are (cattrs inlines identity hooks)
            # and checked all at once by one generated expression.
            checks: list[str] = []
            overrides: dict[str, Any] = {}
            for a in fields:
                check = _scalar_test(f"v.{a.name}", a.type)
                if check is not None:
                    checks.append(check)
                    overrides[a.name] = cattrs.override(unstruct_hook=identity)
            fn = make_dict_unstructure_fn(cls, self.conv, **overrides)
            scalars_ok: Callable[[Any], bool] = eval(
                f"lambda v: {' and '.join(checks) or 'True'}", {}
            )

            def unstructure_attrs(value: Any) -> Any:
                if isinstance(value, cls) and scalars_ok(value):
                    return fn(value)
                raise _Invalid(cls.__name__, value)  # the detailed re-run says which field

            return unstructure_attrs

        resolved: list[tuple[str, Any, _UHook]] = []

        def unstructure_attrs_detailed(value: Any) -> Any:
            if not isinstance(value, cls):
                raise _Invalid(cls.__name__, value)
            if not resolved:  # resolved on first use: the class may refer to itself
                resolved.extend((a.name, a.type, self.uhook(a.type)) for a in fields)
            out: dict[str, Any] = {}
            errors: list[Exception] = []
            for name, tp, hook in resolved:
                try:
                    out[name] = hook(getattr(value, name))
                except Exception as e:
                    e.add_note(AttributeValidationNote(f"@ attribute {name}", name, tp))
                    errors.append(e)
            if errors:
                raise ClassValidationError(f"While unstructuring {cls.__name__}", errors, cls)
            return out

        return unstructure_attrs_detailed

    # --- lists
    def list_structure(self, tp: Any) -> _SHook:
        args = typing.get_args(tp)
        elem = args[0] if args else Any
        hook = _s_json if elem is Any or elem is object else self.shook(elem)
        if self.detailed:

            def structure_list_detailed(value: Any, _: Any) -> Any:
                if not isinstance(value, list):
                    raise _Invalid("list", value)
                out: list[Any] = []
                errors: list[Exception] = []
                for index, item in enumerate(value):
                    try:
                        out.append(hook(item, elem))
                    except Exception as e:
                        e.add_note(IterableValidationNote(f"@ index {index}", index, elem))
                        errors.append(e)
                if errors:
                    raise IterableValidationError("While structuring a list", errors, list)
                return out

            return structure_list_detailed
        if elem in _EXACT_SCALARS:

            def structure_scalar_list(value: Any, _: Any, elem: type = elem) -> Any:
                if not isinstance(value, list):
                    raise _Invalid("list", value)
                for item in value:
                    if type(item) is not elem:
                        raise _Invalid(elem.__name__, item)
                return list(value)

            return structure_scalar_list

        def structure_list(value: Any, _: Any) -> Any:
            if isinstance(value, list):
                return [hook(item, elem) for item in value]
            raise _Invalid("list", value)

        return structure_list

    def list_unstructure(self, tp: Any) -> _UHook:
        args = typing.get_args(tp)
        elem = args[0] if args else None
        if elem is Any or elem is object:
            hook: _UHook = _json_value
        elif elem is None:  # a bare list: each item by its own class
            hook = self.by_class
        else:
            hook = self.uhook(elem)
        # Writing also accepts a tuple where a list is declared (Role(args=("a", "b"))).
        if self.detailed:

            def unstructure_list_detailed(value: Any) -> Any:
                if not isinstance(value, list | tuple):
                    raise _Invalid("list", value)
                out: list[Any] = []
                errors: list[Exception] = []
                for index, item in enumerate(value):
                    try:
                        out.append(hook(item))
                    except Exception as e:
                        e.add_note(IterableValidationNote(f"@ index {index}", index, elem))
                        errors.append(e)
                if errors:
                    raise IterableValidationError("While unstructuring a list", errors, list)
                return out

            return unstructure_list_detailed
        if elem in _EXACT_SCALARS:

            def unstructure_scalar_list(value: Any, elem: type = elem) -> Any:
                if not isinstance(value, list | tuple):
                    raise _Invalid("list", value)
                for item in value:
                    if type(item) is not elem:
                        raise _Invalid(elem.__name__, item)
                return list(value)

            return unstructure_scalar_list

        def unstructure_list(value: Any) -> Any:
            if isinstance(value, list | tuple):
                return [hook(item) for item in value]
            raise _Invalid("list", value)

        return unstructure_list

    # --- dicts (JSON object keys are always strings)
    def dict_structure(self, tp: Any) -> _SHook:
        args = typing.get_args(tp)
        key, val = args if len(args) == 2 else (str, Any)
        if key is not str and key is not Any:
            return self.unsupported_structure(tp)
        if val is Any or val is object:
            if not self.detailed:
                return _json_dict
            hook: _SHook = _s_json
        else:
            hook = self.shook(val)
        if self.detailed:

            def structure_dict_detailed(value: Any, _: Any) -> Any:
                if not isinstance(value, dict):
                    raise _Invalid("dict", value)
                out: dict[str, Any] = {}
                errors: list[Exception] = []
                for k, item in value.items():
                    try:
                        if type(k) is not str:
                            raise _Invalid("a str key", k)
                        out[k] = hook(item, val)
                    except Exception as e:
                        e.add_note(IterableValidationNote(f"@ key {k!r}", k, val))
                        errors.append(e)
                if errors:
                    raise IterableValidationError("While structuring a dict", errors, dict)
                return out

            return structure_dict_detailed
        if val in _EXACT_SCALARS:

            def structure_scalar_dict(value: Any, _: Any, val: type = val) -> Any:
                if not isinstance(value, dict):
                    raise _Invalid("dict", value)
                for k, item in value.items():
                    if type(k) is not str or type(item) is not val:
                        raise _Invalid(val.__name__, item)
                return dict(value)

            return structure_scalar_dict

        def structure_dict(value: Any, _: Any) -> Any:
            if not isinstance(value, dict):
                raise _Invalid("dict", value)
            out: dict[str, Any] = {}
            for k, item in value.items():
                if type(k) is not str:
                    raise _Invalid("a str key", k)
                out[k] = hook(item, val)
            return out

        return structure_dict

    def dict_unstructure(self, tp: Any) -> _UHook:
        args = typing.get_args(tp)
        key, val = args if len(args) == 2 else (str, None)
        if key is not str and key is not Any:
            return self.unsupported_unstructure(tp)
        if val is Any or val is object:
            if not self.detailed:
                return _json_dict
            hook: _UHook = _json_value
        elif val is None:  # a bare dict: each value by its own class
            hook = self.by_class
        else:
            hook = self.uhook(val)
        if self.detailed:

            def unstructure_dict_detailed(value: Any) -> Any:
                if not isinstance(value, dict):
                    raise _Invalid("dict", value)
                out: dict[str, Any] = {}
                errors: list[Exception] = []
                for k, item in value.items():
                    try:
                        if type(k) is not str:
                            raise _Invalid("a str key", k)
                        out[k] = hook(item)
                    except Exception as e:
                        e.add_note(IterableValidationNote(f"@ key {k!r}", k, val))
                        errors.append(e)
                if errors:
                    raise IterableValidationError("While unstructuring a dict", errors, dict)
                return out

            return unstructure_dict_detailed
        if val in _EXACT_SCALARS:

            def unstructure_scalar_dict(value: Any, val: type = val) -> Any:
                if not isinstance(value, dict):
                    raise _Invalid("dict", value)
                for k, item in value.items():
                    if type(k) is not str or type(item) is not val:
                        raise _Invalid(val.__name__, item)
                return dict(value)

            return unstructure_scalar_dict

        def unstructure_dict(value: Any) -> Any:
            if not isinstance(value, dict):
                raise _Invalid("dict", value)
            out: dict[str, Any] = {}
            for k, item in value.items():
                if type(k) is not str:
                    raise _Invalid("a str key", k)
                out[k] = hook(item)
            return out

        return unstructure_dict

    # --- Optional[X]
    def optional_structure(self, tp: Any) -> _SHook:
        inner = _optional_inner(tp)
        hook = self.shook(inner)
        if self.detailed:

            def structure_optional_detailed(value: Any, _: Any) -> Any:
                if value is None:
                    return None
                try:
                    return hook(value, inner)
                except _Invalid as e:
                    if e.expected and not e.subpath:
                        e.expected += " or null"
                    raise

            return structure_optional_detailed

        if inner in _EXACT_SCALARS:

            def structure_optional_scalar(value: Any, _: Any, inner: type = inner) -> Any:
                if value is None or type(value) is inner:
                    return value
                raise _Invalid(inner.__name__, value)

            return structure_optional_scalar

        def structure_optional(value: Any, _: Any) -> Any:
            return None if value is None else hook(value, inner)

        return structure_optional

    def optional_unstructure(self, tp: Any) -> _UHook:
        hook = self.uhook(_optional_inner(tp))

        def unstructure_optional(value: Any) -> Any:
            return None if value is None else hook(value)

        return unstructure_optional

    # --- unions of JSON scalars (str | int) and Literals of them
    @staticmethod
    def primitive_union(tp: Any) -> _UHook:
        allowed = frozenset(typing.get_args(tp))
        expected = _type_name(tp)

        def check_union(value: Any) -> Any:
            t = type(value)
            if t in allowed and (t is not float or math.isfinite(value)):
                return value
            if t is int and float in allowed:
                return float(value)
            raise _Invalid(expected, value)

        return check_union

    @staticmethod
    def literal(tp: Any) -> _UHook:
        values = typing.get_args(tp)
        expected = "one of " + ", ".join(repr(v) for v in values)

        def check_literal(value: Any) -> Any:
            for v in values:
                if type(value) is type(v) and value == v:
                    return value
            raise _Invalid(expected, value)

        return check_literal

    # --- mounts: {"type": "bind", "src_path": ..., ...}
    def mount_structure(self, _: Any) -> _SHook:
        tags = ", ".join(_MOUNT_TYPES)
        if not self.detailed:
            fast = {
                tag: (cls, self._fast_structure_fn(cls, tag_key=_MOUNT_TAG))
                for tag, cls in _MOUNT_TYPES.items()
            }

            def structure_mount(value: Any, _: Any) -> Any:
                if isinstance(value, dict):
                    found = fast.get(value.get(_MOUNT_TAG))  # type: ignore[arg-type]
                    if found is not None:
                        return found[1](value, found[0])  # tolerates the "type" key
                raise _Invalid("a mount", value)

            return structure_mount

        detailed = {tag: (cls, self.shook(cls)) for tag, cls in _MOUNT_TYPES.items()}

        def structure_mount_detailed(value: Any, _: Any) -> Any:
            if not isinstance(value, dict):
                raise _Invalid("dict", value)
            if _MOUNT_TAG not in value:
                raise _Invalid(message=f"required field missing (one of {tags})", subpath=".type")
            tag = value[_MOUNT_TAG]
            found = detailed.get(tag) if type(tag) is str else None
            if found is None:
                hint = did_you_mean(tag, _MOUNT_TYPES) if isinstance(tag, str) else ""
                raise _Invalid(
                    message=f"expected one of {tags}, got {_show(tag)}{hint}", subpath=".type"
                )
            cls, hook = found
            body = dict(value)
            del body[_MOUNT_TAG]
            return hook(body, cls)

        return structure_mount_detailed

    def mount_unstructure(self, _: Any) -> _UHook:
        hooks = {cls: (tag, self.uhook(cls)) for cls, tag in _MOUNT_TAGS.items()}

        def unstructure_mount(value: Any) -> Any:
            found = hooks.get(type(value))
            if found is None:
                for cls, candidate in hooks.items():
                    if isinstance(value, cls):
                        found = candidate
                        break
                else:
                    raise _Invalid("BindMount, VolumeMount or DeviceMount", value)
            tag, hook = found
            return {_MOUNT_TAG: tag, **hook(value)}

        return unstructure_mount

    # --- anything else
    @staticmethod
    def unsupported_structure(tp: Any) -> _SHook:
        def structure_unsupported(value: Any, _: Any) -> Any:
            raise _Invalid(message=f"cannot read values of type {_type_name(tp)}")

        return structure_unsupported

    @staticmethod
    def unsupported_unstructure(tp: Any) -> _UHook:
        def unstructure_unsupported(value: Any) -> Any:
            raise _Invalid(
                message=f"cannot write {_show(value)}: values of type {_type_name(tp)} "
                "have no JSON form"
            )

        return unstructure_unsupported


def _as_structure_hook(check: _UHook) -> _SHook:
    return lambda value, _: check(value)


def _make_converter(detailed: bool) -> tuple[cattrs.Converter, _Hooks]:
    conv = cattrs.Converter(detailed_validation=detailed, forbid_extra_keys=True)
    h = _Hooks(conv)
    # Factories: the last registered is tried first, so the catch-all goes in first.
    conv.register_structure_hook_factory(lambda t: True, h.unsupported_structure)
    conv.register_unstructure_hook_factory(lambda t: True, h.unsupported_unstructure)
    conv.register_structure_hook_func(lambda t: t is Any or t is object, _s_json)
    conv.register_unstructure_hook_func(lambda t: t is Any or t is object, _json_value)
    conv.register_structure_hook_factory(attrs.has, h.attrs_structure)
    conv.register_unstructure_hook_factory(attrs.has, h.attrs_unstructure)
    conv.register_structure_hook_factory(_is_list, h.list_structure)
    conv.register_unstructure_hook_factory(_is_list, h.list_unstructure)
    conv.register_structure_hook_factory(_is_dict, h.dict_structure)
    conv.register_unstructure_hook_factory(_is_dict, h.dict_unstructure)
    conv.register_structure_hook_factory(_is_enum, lambda t: _enum_hooks_cached(t)[0])
    conv.register_unstructure_hook_factory(_is_enum, lambda t: _enum_hooks_cached(t)[1])
    conv.register_structure_hook_factory(_is_literal, lambda t: _as_structure_hook(h.literal(t)))
    conv.register_unstructure_hook_factory(_is_literal, h.literal)
    conv.register_structure_hook_factory(
        _is_primitive_union, lambda t: _as_structure_hook(h.primitive_union(t))
    )
    conv.register_unstructure_hook_factory(_is_primitive_union, h.primitive_union)
    conv.register_structure_hook_factory(_is_optional, h.optional_structure)
    conv.register_unstructure_hook_factory(_is_optional, h.optional_unstructure)
    conv.register_structure_hook_factory(_is_mount, h.mount_structure)
    conv.register_unstructure_hook_factory(_is_mount, h.mount_unstructure)
    # Class hooks win over every factory above and also match subclasses (hence
    # _Hooks.prepare, which registers each Enum class exactly before it is used).
    for cls, s_hook, u_hook in (
        (str, _s_str, _u_str),
        (int, _s_int, _u_int),
        (bool, _s_bool, _u_bool),
        (float, _s_float, _u_float),
        (type(None), _s_none, _u_none),
        (PurePath, _s_path, _u_path),
        (Path, _s_path, _u_path),
        (bytes, h.unsupported_structure(bytes), h.unsupported_unstructure(bytes)),
    ):
        conv.register_structure_hook(cls, s_hook)
        conv.register_unstructure_hook(cls, u_hook)
    for enum_cls in (AppState, RetryPolicy):
        h.prepare(enum_cls)
    return conv, h


_FAST, _FAST_HOOKS = _make_converter(detailed=False)
_DETAILED, _DETAILED_HOOKS = _make_converter(detailed=True)


# --------------------------------------------------------------------------- public API


def unstructure(obj: Any) -> Any:
    """Converts a spec object (or any attrs object) into JSON-safe dicts, lists and scalars.

    Every field is written, in declaration order, so the output is deterministic. Free-form
    fields must already hold JSON values: anything else raises :class:`SerializationError`
    naming where it is.

    >>> from torchx.specs import Resource
    >>> unstructure(Resource(cpu=2, gpu=0, memMB=1024, capabilities={"zone": "us-east-1a"}))
    {'cpu': 2, 'gpu': 0, 'memMB': 1024, 'capabilities': {'zone': 'us-east-1a'}, 'devices': {}, 'tags': {}}
    """
    return _unstructure_as(obj, None)


def _unstructure_as(obj: Any, cls: type | None) -> Any:
    target = cls if cls is not None else type(obj)
    try:
        _FAST_HOOKS.prepare_once(target)
        return _FAST.unstructure(obj, unstructure_as=target)
    except Exception as fast_error:

        def rerun() -> Any:
            _DETAILED_HOOKS.prepare_once(target)
            return _DETAILED.unstructure(obj, unstructure_as=target)

        raise _explain(rerun, fast_error, f"cannot serialize {_type_name(target)}") from None


def _explain(rerun: Callable[[], Any], fast_error: Exception, header: str) -> SerializationError:
    """Re-runs a failed conversion with detailed validation to name every bad field."""
    try:
        rerun()
    except Exception as detailed_error:
        errors: list[str] = []
        _walk(detailed_error, "", errors)
    else:  # the detailed hooks found nothing: report what the fast ones saw
        errors = []
        _walk(fast_error, "", errors)
    return _error(header, errors)


def structure(data: Any, cls: type[T]) -> T:
    """Builds a ``cls`` from JSON-safe data, strictly: the inverse of :func:`unstructure`.

    Raises :class:`SerializationError` (and nothing else) for any malformed input, naming
    every bad field by its path.

    >>> from torchx.specs import AppDef
    >>> bad = {"name": "a", "roles": [{"name": "r", "image": "i", "num_replicas": "2"}]}
    >>> try:
    ...     structure(bad, AppDef)
    ... except SerializationError as e:
    ...     print(e)
    invalid AppDef: roles[0].num_replicas: expected int, got '2'
    """
    try:
        _FAST_HOOKS.prepare_once(cls)
        return _FAST.structure(data, cls)
    except Exception as fast_error:

        def rerun() -> Any:
            _DETAILED_HOOKS.prepare_once(cls)
            return _DETAILED.structure(data, cls)

        raise _explain(rerun, fast_error, f"invalid {_type_name(cls)}") from None


def _kind_of(obj: Any, kind: str | None) -> tuple[str, type]:
    cls = type(obj)
    if kind is None:
        for base in cls.__mro__:  # a Role subclass is written as a Role
            found = _CLASS_KIND.get(base)
            if found is not None:
                return found, base
        if attrs.has(cls):
            return cls.__name__, cls
        raise SerializationError(
            f"cannot make a document of a {cls.__name__}: expected a spec object such as "
            f"an AppDef or AppStatus (or any attrs object)"
        )
    if not isinstance(kind, str):
        raise SerializationError(f"kind must be a str such as 'AppDef', got {_show(kind)}")
    target = _KINDS.get(kind)
    if target is not None:
        if not isinstance(obj, target):
            raise SerializationError(f"kind {kind!r} does not fit a {cls.__name__} object")
        return kind, target
    if kind == cls.__name__ and attrs.has(cls):
        return kind, cls
    raise SerializationError(
        f"unknown kind {kind!r}{did_you_mean(kind, _KINDS)}: expected one of "
        f"{', '.join(_KINDS)} or the object's class name {cls.__name__!r}"
    )


def to_document(obj: Any, kind: str | None = None) -> dict[str, Any]:
    """Wraps :func:`unstructure` output with the format version and kind.

    ``kind`` defaults to the object's spec type (a subclass of Role is written as a
    ``Role``); pass it to write an object as one of its spec base classes explicitly.

    >>> from torchx.specs import Resource
    >>> to_document(Resource(cpu=1, gpu=0, memMB=512))
    {'apiVersion': 'torchx.specs/v1', 'kind': 'Resource', 'spec': {'cpu': 1, 'gpu': 0, 'memMB': 512, 'capabilities': {}, 'devices': {}, 'tags': {}}}
    """
    kind, cls = _kind_of(obj, kind)
    return {"apiVersion": API_VERSION, "kind": kind, "spec": _unstructure_as(obj, cls)}


@overload
def from_document(doc: Any, cls: None = None) -> Any: ...


@overload
def from_document(doc: Any, cls: type[T]) -> T: ...


def from_document(doc: Any, cls: type[T] | None = None) -> T | Any:
    """Reads a document written by :func:`to_document` by this or any earlier release.

    Without ``cls`` the document's kind picks the class (one of :data:`KINDS`); with it, the
    kind must match. Field paths in errors are relative to ``spec``.

    >>> try:
    ...     from_document({"apiVersion": "torchx.specs/v9", "kind": "AppDef", "spec": {}})
    ... except SerializationError as e:
    ...     print(e)
    invalid document: apiVersion: unsupported version 'torchx.specs/v9' (this release of torchx-specs reads torchx.specs/v1)
    """
    if not isinstance(doc, dict):
        raise SerializationError(
            f"invalid document: expected a dict with keys apiVersion, kind and spec, got {_show(doc)}"
        )
    errors: list[str] = []
    for key in doc:
        if key not in _DOC_KEYS:
            errors.append(_unknown_field(key, list(_DOC_KEYS)))
    errors.extend(f"{key}: required field missing" for key in _DOC_KEYS if key not in doc)
    version = doc.get("apiVersion")
    if "apiVersion" in doc and (type(version) is not str or version not in _MIGRATIONS):
        errors.append(
            f"apiVersion: unsupported version {_show(version)} (this release of torchx-specs "
            f"reads {', '.join(SUPPORTED_API_VERSIONS)})"
        )
    kind = doc.get("kind")
    target: type | None = cls
    if "kind" in doc:
        if type(kind) is not str:
            errors.append(f"kind: expected str, got {_show(kind)}")
        elif cls is None:
            target = _KINDS.get(kind)
            if target is None:
                errors.append(
                    f"kind: unknown kind {kind!r}{did_you_mean(kind, _KINDS)} "
                    f"(expected one of {', '.join(_KINDS)})"
                )
        else:
            accepted = [k for k, c in _KINDS.items() if c is cls] or [cls.__name__]
            if kind not in accepted and kind != cls.__name__:
                errors.append(f"kind: expected {accepted[0]!r}, got {kind!r}")
    if errors:
        raise _error("invalid document", errors)
    assert isinstance(version, str) and isinstance(kind, str) and target is not None
    try:
        spec = _MIGRATIONS[version](kind, doc["spec"])
    except SerializationError:
        raise
    except Exception as e:
        raise SerializationError(
            f"invalid {kind} document: cannot upgrade from {version}: {e}"
        ) from None
    return structure(spec, target)


def _reject_constant(name: str) -> Any:
    raise _Invalid(message=f"{name} is not a valid JSON number")


def _parse_json(text: Any) -> Any:
    if not isinstance(text, str | bytes | bytearray):
        raise SerializationError(f"expected JSON text (str or bytes), got {_show(text)}")
    try:
        return json.loads(text, parse_constant=_reject_constant)
    except json.JSONDecodeError as e:
        raise SerializationError(
            f"invalid JSON at line {e.lineno} column {e.colno}: {e.msg}"
        ) from None
    except RecursionError:
        raise SerializationError("invalid JSON: nested too deeply") from None
    except Exception as e:
        raise SerializationError(f"invalid JSON: {' '.join(str(e).split())}") from None


def dumps_json(obj: Any, *, kind: str | None = None, indent: int | None = None) -> str:
    """Writes ``obj`` as a JSON document (see :func:`to_document`).

    Compact by default: the standard library only uses its fast C encoder without
    ``indent``; pass ``indent=2`` for output meant for people.
    """
    return json.dumps(to_document(obj, kind), indent=indent, ensure_ascii=False, allow_nan=False)


@overload
def loads_json(text: str | bytes, cls: None = None) -> Any: ...


@overload
def loads_json(text: str | bytes, cls: type[T]) -> T: ...


def loads_json(text: str | bytes, cls: type[T] | None = None) -> T | Any:
    """Reads a JSON document written by :func:`dumps_json`; raises only :class:`SerializationError`."""
    return from_document(_parse_json(text), cls)


def _yaml() -> Any:
    """PyYAML, imported on first use: it is an optional extra."""
    try:
        return importlib.import_module("yaml")
    except ImportError:
        raise SerializationError(
            "YAML support needs PyYAML, which is not installed: pip install PyYAML "
            "(what the torchx-specs[yaml] extra installs; torchx-cli depends on it)"
        ) from None


def _parse_yaml(text: Any) -> Any:
    yaml = _yaml()
    if not isinstance(text, str | bytes):
        raise SerializationError(f"expected YAML text (str or bytes), got {_show(text)}")
    loader = getattr(yaml, "CSafeLoader", None) or yaml.SafeLoader
    try:
        return yaml.load(text, Loader=loader)
    except yaml.MarkedYAMLError as e:
        where = (
            f" at line {e.problem_mark.line + 1} column {e.problem_mark.column + 1}"
            if e.problem_mark
            else ""
        )
        problem = " ".join(", ".join(p for p in (e.context, e.problem) if p).split()) or "malformed"
        raise SerializationError(f"invalid YAML{where}: {problem}") from None
    except RecursionError:
        raise SerializationError("invalid YAML: nested too deeply") from None
    except Exception as e:
        raise SerializationError(f"invalid YAML: {' '.join(str(e).split())}") from None


def dumps_yaml(obj: Any, *, kind: str | None = None) -> str:
    """Writes ``obj`` as a YAML document (needs ``pip install 'torchx-specs[yaml]'``)."""
    yaml = _yaml()
    dumper = getattr(yaml, "CSafeDumper", None) or yaml.SafeDumper
    doc = to_document(obj, kind)
    try:
        text: str = yaml.dump(
            doc, Dumper=dumper, sort_keys=False, allow_unicode=True, default_flow_style=False
        )
    except Exception as e:
        raise SerializationError(f"cannot write YAML: {' '.join(str(e).split())}") from None
    return text


@overload
def loads_yaml(text: str | bytes, cls: None = None) -> Any: ...


@overload
def loads_yaml(text: str | bytes, cls: type[T]) -> T: ...


def loads_yaml(text: str | bytes, cls: type[T] | None = None) -> T | Any:
    """Reads a YAML document (safe loading only); raises only :class:`SerializationError`."""
    return from_document(_parse_yaml(text), cls)


def load_appdef_file(path: str | os.PathLike[str]) -> AppDef:
    """Reads an AppDef from a ``.json``, ``.yaml`` or ``.yml`` file.

    Other extensions are sniffed: text starting with ``{`` is JSON, anything else YAML.
    The file may hold a document (``apiVersion``, ``kind: AppDef``, ``spec``) or, for
    hand-written files, just the AppDef's fields. Errors start with the file's path.
    """
    name = os.fspath(path)
    try:
        text = Path(name).read_text(encoding="utf-8-sig")
    except OSError as e:
        raise SerializationError(f"{name}: cannot read AppDef file: {e.strerror or e}") from None
    except UnicodeDecodeError as e:
        raise SerializationError(f"{name}: not a UTF-8 text file ({e.reason})") from None
    suffix = Path(name).suffix.lower()
    try:
        if suffix == ".json" or (suffix not in (".yaml", ".yml") and text.lstrip().startswith("{")):
            data = _parse_json(text)
        else:
            data = _parse_yaml(text)
        if isinstance(data, dict) and not any(key in data for key in _DOC_KEYS):
            return structure(data, AppDef)
        return from_document(data, AppDef)
    except SerializationError as e:
        raise SerializationError(f"{name}: {e}", [f"{name}: {line}" for line in e.errors]) from None
