"""The serializer's cattrs converter: any spec or attrs class, read strictly, every error named.

:mod:`torchx.specs.serialize` sends here what its standard-library fast path
(:mod:`torchx.specs._plain`) declines: data with fields left out (hand-written AppDef files),
a Role subclass, any other attrs class, and every bad input, whose errors this converter
names by path. It is one cattrs converter made in cattrs' preconf style (a
:func:`make_converter` that registers the hooks of the wire format on a
``cattrs.Converter(detailed_validation=True, forbid_extra_keys=True)``); attrs classes are
read by cattrs' own generated functions (:func:`cattrs.gen.make_dict_structure_fn`).

The wire format, the same both ways: attrs field names as keys, scalars never coerced
(``"4"`` is not an int, ``true`` is not an int), enums by member name, mounts tagged by
``"type"``, free-form fields as plain JSON values.

Errors: cattrs raises exception groups whose notes say where each error happened (an
attribute, a list index, a dict key); :func:`torchx.specs._messages.error_lines` walks
them, as cattrs' ``transform_error`` does, into one ``path: what is wrong`` line each
(``roles[0].resource.memMB: expected int, got 'lots'``).

>>> from torchx.specs import Resource
>>> structure({"cpu": 1, "gpu": 0, "memMB": 8}, Resource)
Resource(cpu=1, gpu=0, memMB=8, capabilities={}, devices={}, tags={})
>>> from torchx.specs._messages import error_lines
>>> try:
...     structure({"cpu": "1", "gpu": 0, "memMB": 8, "tagz": {}}, Resource)
... except Exception as e:
...     print(error_lines(e))
["cpu: expected int, got '1'", "unknown field 'tagz' (did you mean 'tags'?)"]
"""

from __future__ import annotations

import math
import typing
from collections.abc import Callable, Mapping
from enum import Enum
from pathlib import Path, PurePath
from typing import Any, Literal

import attrs
import cattrs
from cattrs.errors import (
    AttributeValidationNote,
    ClassValidationError,
    IterableValidationError,
    IterableValidationNote,
)
from cattrs.gen import make_dict_structure_fn

from torchx.specs._messages import Invalid, show, type_name
from torchx.specs._plain import MOUNT_TAG, MOUNT_TYPES, json_value
from torchx.specs.api import AppState, Mount, RetryPolicy
from torchx.specs.errors import did_you_mean

__all__ = ["make_converter", "structure", "unstructure"]

_SHook = Callable[[Any, Any], Any]
_UHook = Callable[[Any], Any]


def structure(data: Any, cls: Any) -> Any:
    """``cls`` from ``data``; raises cattrs' exception groups (read by ``error_lines``)."""
    _HOOKS.prepare_once(cls)
    return _CONVERTER.structure(data, cls)


def unstructure(obj: Any, cls: Any) -> Any:
    """``obj`` as JSON-safe data, written as a ``cls``."""
    _HOOKS.prepare_once(cls)
    return _CONVERTER.unstructure(obj, unstructure_as=cls)


# --------------------------------------------------------------------------- scalar hooks


def _s_json(value: Any, _: Any) -> Any:
    return json_value(value)


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
        raise Invalid(message=f"expected one of {', '.join(names)}, got {show(value)}{hint}")

    def unstructure_enum(value: Any) -> Any:
        if isinstance(value, cls):
            return value.name
        if type(value) is str and value in members:  # a str Enum's field set to the plain name
            return value
        raise Invalid(cls.__name__, value)

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
        raise Invalid(base.__name__, value)
    return cls(value)


# Strict scalars: no coercion, and bool is not an int.
def _s_str(value: Any, cls: Any) -> Any:
    if cls is str:
        if type(value) is str:
            return value
        raise Invalid("str", value)
    return _s_subclass(value, cls, str)


def _s_int(value: Any, cls: Any) -> Any:
    if cls is int:
        if type(value) is int:
            return value
        raise Invalid("int", value)
    return _s_subclass(value, cls, int)


def _s_float(value: Any, _: Any) -> Any:
    t = type(value)
    if (t is float or t is int) and math.isfinite(value):
        return float(value)
    raise Invalid("a finite number", value)


def _s_path(value: Any, cls: Any) -> Any:
    if type(value) is str:
        return cls(value)
    raise Invalid("str", value)


def _exact(tp: type, name: str) -> _UHook:
    def check(value: Any) -> Any:
        if type(value) is tp:
            return value
        raise Invalid(name, value)

    return check


def _u_float(value: Any) -> Any:
    return _s_float(value, float)


def _u_path(value: Any) -> Any:
    if isinstance(value, PurePath):
        return str(value)
    raise Invalid("a path", value)


# --------------------------------------------------------------------------- type tests


def _is_union(tp: Any) -> bool:
    return typing.get_origin(tp) in (typing.Union, type(int | str))


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


# --------------------------------------------------------------------------- hook factories


class _Hooks:
    """The hook factories of the converter, each wrapping errors with where they happened."""

    def __init__(self, conv: cattrs.Converter) -> None:
        self.conv = conv
        self.enums: set[type] = set()
        self.prepared: set[Any] = set()

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

    def attrs_structure(self, cls: Any) -> _SHook:
        self._init_fields(cls)
        fn = make_dict_structure_fn(
            cls, self.conv, _cattrs_forbid_extra_keys=True, _cattrs_detailed_validation=True
        )

        def structure_attrs(value: Any, _: Any) -> Any:
            if isinstance(value, dict):
                return fn(value)
            raise Invalid("dict", value)

        return structure_attrs

    def attrs_unstructure(self, cls: Any) -> _UHook:
        # cattrs' generated unstructure functions say nothing of where an error happened,
        # so each field's error is noted here, as cattrs notes them when structuring.
        fields = self._init_fields(cls)
        resolved: list[tuple[str, Any, _UHook]] = []

        def unstructure_attrs(value: Any) -> Any:
            if not isinstance(value, cls):
                raise Invalid(cls.__name__, value)
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

        return unstructure_attrs

    # --- lists (writing also accepts a tuple where a list is declared: Role(args=("a",)))
    def list_structure(self, tp: Any) -> _SHook:
        args = typing.get_args(tp)
        elem = args[0] if args else Any
        hook = _s_json if elem is Any or elem is object else self.shook(elem)
        return _items(lambda v: isinstance(v, list), lambda item: hook(item, elem), elem, "")

    def list_unstructure(self, tp: Any) -> _UHook:
        args = typing.get_args(tp)
        elem = args[0] if args else None
        if elem is Any or elem is object:
            hook: _UHook = json_value
        elif elem is None:  # a bare list: each item by its own class
            hook = self.by_class
        else:
            hook = self.uhook(elem)
        return _items(lambda v: isinstance(v, list | tuple), hook, elem, "un")

    # --- dicts (JSON object keys are always strings)
    def dict_structure(self, tp: Any) -> _SHook:
        args = typing.get_args(tp)
        key, val = args if len(args) == 2 else (str, Any)
        if key is not str and key is not Any:
            return self.unsupported_structure(tp)
        hook = _s_json if val is Any or val is object else self.shook(val)
        return _values(lambda item: hook(item, val), val, "")

    def dict_unstructure(self, tp: Any) -> _UHook:
        args = typing.get_args(tp)
        key, val = args if len(args) == 2 else (str, None)
        if key is not str and key is not Any:
            return self.unsupported_unstructure(tp)
        if val is Any or val is object:
            hook: _UHook = json_value
        elif val is None:  # a bare dict: each value by its own class
            hook = self.by_class
        else:
            hook = self.uhook(val)
        return _values(hook, val, "un")

    # --- Optional[X]
    def optional_structure(self, tp: Any) -> _SHook:
        inner = _optional_inner(tp)
        hook = self.shook(inner)

        def structure_optional(value: Any, _: Any) -> Any:
            if value is None:
                return None
            try:
                return hook(value, inner)
            except Invalid as e:
                if e.expected and not e.subpath:
                    e.expected += " or null"
                raise

        return structure_optional

    def optional_unstructure(self, tp: Any) -> _UHook:
        hook = self.uhook(_optional_inner(tp))
        return lambda value: None if value is None else hook(value)

    # --- unions of JSON scalars (str | int) and Literals of them
    @staticmethod
    def primitive_union(tp: Any) -> _UHook:
        allowed = frozenset(typing.get_args(tp))
        expected = type_name(tp)

        def check_union(value: Any) -> Any:
            t = type(value)
            if t in allowed and (t is not float or math.isfinite(value)):
                return value
            if t is int and float in allowed:
                return float(value)
            raise Invalid(expected, value)

        return check_union

    @staticmethod
    def literal(tp: Any) -> _UHook:
        values = typing.get_args(tp)
        expected = "one of " + ", ".join(repr(v) for v in values)

        def check_literal(value: Any) -> Any:
            for v in values:
                if type(value) is type(v) and value == v:
                    return value
            raise Invalid(expected, value)

        return check_literal

    # --- mounts: {"type": "bind", "src_path": ..., ...}
    def mount_structure(self, _: Any) -> _SHook:
        tags = ", ".join(MOUNT_TYPES)
        hooks = {tag: (cls, self.shook(cls)) for tag, cls in MOUNT_TYPES.items()}

        def structure_mount(value: Any, _: Any) -> Any:
            if not isinstance(value, dict):
                raise Invalid("dict", value)
            if MOUNT_TAG not in value:
                raise Invalid(message=f"required field missing (one of {tags})", subpath=".type")
            tag = value[MOUNT_TAG]
            found = hooks.get(tag) if type(tag) is str else None
            if found is None:
                hint = did_you_mean(tag, MOUNT_TYPES) if isinstance(tag, str) else ""
                raise Invalid(
                    message=f"expected one of {tags}, got {show(tag)}{hint}", subpath=".type"
                )
            cls, hook = found
            body = dict(value)
            del body[MOUNT_TAG]
            return hook(body, cls)

        return structure_mount

    def mount_unstructure(self, _: Any) -> _UHook:
        hooks = {cls: (tag, self.uhook(cls)) for tag, cls in MOUNT_TYPES.items()}

        def unstructure_mount(value: Any) -> Any:
            found = hooks.get(type(value))
            if found is None:
                for cls, candidate in hooks.items():
                    if isinstance(value, cls):
                        found = candidate
                        break
                else:
                    raise Invalid("BindMount, VolumeMount or DeviceMount", value)
            tag, hook = found
            return {MOUNT_TAG: tag, **hook(value)}

        return unstructure_mount

    # --- anything else
    @staticmethod
    def unsupported_structure(tp: Any) -> _SHook:
        def structure_unsupported(value: Any, _: Any) -> Any:
            raise Invalid(message=f"cannot read values of type {type_name(tp)}")

        return structure_unsupported

    @staticmethod
    def unsupported_unstructure(tp: Any) -> _UHook:
        def unstructure_unsupported(value: Any) -> Any:
            raise Invalid(
                message=f"cannot write {show(value)}: values of type {type_name(tp)} "
                "have no JSON form"
            )

        return unstructure_unsupported


def _items(is_list: Callable[[Any], bool], hook: _UHook, elem: Any, un: str) -> Callable[..., Any]:
    """A list hook (structure if ``un`` is empty) that notes the index of each bad item."""

    def convert(value: Any, *_: Any) -> Any:
        if not is_list(value):
            raise Invalid("list", value)
        out: list[Any] = []
        errors: list[Exception] = []
        for index, item in enumerate(value):
            try:
                out.append(hook(item))
            except Exception as e:
                e.add_note(IterableValidationNote(f"@ index {index}", index, elem))
                errors.append(e)
        if errors:
            raise IterableValidationError(f"While {un}structuring a list", errors, list)
        return out

    return convert


def _values(hook: _UHook, val: Any, un: str) -> Callable[..., Any]:
    """A dict hook (structure if ``un`` is empty) that notes the key of each bad value."""

    def convert(value: Any, *_: Any) -> Any:
        if not isinstance(value, dict):
            raise Invalid("dict", value)
        out: dict[str, Any] = {}
        errors: list[Exception] = []
        for k, item in value.items():
            try:
                if type(k) is not str:
                    raise Invalid("a str key", k)
                out[k] = hook(item)
            except Exception as e:
                e.add_note(IterableValidationNote(f"@ key {k!r}", k, val))
                errors.append(e)
        if errors:
            raise IterableValidationError(f"While {un}structuring a dict", errors, dict)
        return out

    return convert


def _as_structure_hook(check: _UHook) -> _SHook:
    return lambda value, _: check(value)


def make_converter() -> tuple[cattrs.Converter, _Hooks]:
    """The converter of the wire format, with its hook factories (cattrs' preconf style)."""
    conv = cattrs.Converter(detailed_validation=True, forbid_extra_keys=True)
    h = _Hooks(conv)
    # Factories: the last registered is tried first, so the catch-all goes in first.
    conv.register_structure_hook_factory(lambda t: True, h.unsupported_structure)
    conv.register_unstructure_hook_factory(lambda t: True, h.unsupported_unstructure)
    conv.register_structure_hook_func(lambda t: t is Any or t is object, _s_json)
    conv.register_unstructure_hook_func(lambda t: t is Any or t is object, json_value)
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
    exact = {tp: _exact(tp, name) for tp, name in ((str, "str"), (int, "int"), (bool, "bool"))}
    none = _exact(type(None), "null")
    for cls, s_hook, u_hook in (
        (str, _s_str, exact[str]),
        (int, _s_int, exact[int]),
        (bool, _as_structure_hook(exact[bool]), exact[bool]),
        (float, _s_float, _u_float),
        (type(None), _as_structure_hook(none), none),
        (PurePath, _s_path, _u_path),
        (Path, _s_path, _u_path),
        (bytes, h.unsupported_structure(bytes), h.unsupported_unstructure(bytes)),
    ):
        conv.register_structure_hook(cls, s_hook)
        conv.register_unstructure_hook(cls, u_hook)
    for enum_cls in (AppState, RetryPolicy):
        h.prepare(enum_cls)
    return conv, h


_CONVERTER, _HOOKS = make_converter()
