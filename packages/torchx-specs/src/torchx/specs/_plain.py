"""The serializer's fast path: spec objects to JSON-safe data and back, standard library only.

:mod:`torchx.specs.serialize` answers every call here first and hands what this module
declines to its cattrs converter (:mod:`torchx.specs._converter`), which reads anything a
user may write (fields left out, a Role subclass, any attrs class) and names every bad
field. This module is what keeps cattrs off the clock of the calls that happen on every
command: a scheduler keeping the AppDef beside its job on ``torchx run`` and reading it
back on ``torchx status``, the local scheduler's records, ``--json`` output.

Nothing here is written per class. Each attrs class's reader and writer is derived, once,
from its fields (:func:`attrs.fields`, types resolved), so a field added to a spec is
read and written without a change here. The derivation knows the types the specs use:
``str``, ``int``, ``bool``, ``float``, ``None``, ``X | None``, ``list[X]``, ``dict[str, X]``,
free-form JSON (``Any``, ``object``), enums (by member name), attrs classes, and
:data:`torchx.specs.Mount` (tagged by ``"type"``). A class with any other field is
declined whole.

It never guesses: it writes a value only when the value has exactly its field's type, and
reads only data holding every field with exactly its type, no more keys. Everything else
raises :class:`Decline`, and the converter decides, so the two always give the same
answer (the tests check that with hypothesis on random and mutated input).

>>> from torchx.specs import Resource
>>> data = unstructure(Resource(cpu=1, gpu=0, memMB=64))
>>> data
{'cpu': 1, 'gpu': 0, 'memMB': 64, 'capabilities': {}, 'devices': {}, 'tags': {}}
>>> structure(data, Resource) == Resource(cpu=1, gpu=0, memMB=64)
True
>>> structure({"cpu": 1, "gpu": 0, "memMB": 64}, Resource)  # defaults: the converter's job
Traceback (most recent call last):
...
torchx.specs._plain.Decline: Resource
"""

from __future__ import annotations

import _thread
import math
import types
import typing
from collections.abc import Callable
from enum import Enum
from typing import Any

import attrs

from torchx.specs._messages import Invalid, show
from torchx.specs.api import Mount
from torchx.specs.mounts import BindMount, DeviceMount, VolumeMount

#: How a mount is tagged in data: the ``"type"`` key names its class.
MOUNT_TAG = "type"
#: The tag of each mount class (the converter reads the same table).
MOUNT_TYPES: dict[str, type] = {"bind": BindMount, "volume": VolumeMount, "device": DeviceMount}

_Fn = Callable[[Any], Any]


class Decline(Exception):
    """A value (or a class) this module leaves to the converter."""


def unstructure(obj: Any) -> Any:
    """``obj`` (an attrs object) as JSON-safe data; :class:`Decline` when unsure."""
    return _codec(type(obj))[0](obj)


def structure(data: Any, cls: type) -> Any:
    """A ``cls`` from data holding exactly its fields; :class:`Decline` otherwise."""
    return _codec(cls)[1](data)


# -- derivation -----------------------------------------------------------------------------

_CODECS: dict[Any, tuple[_Fn, _Fn]] = {}
# One derivation at a time: another thread must not see a class half derived (_DERIVING).
_DERIVE_LOCK = _thread.RLock()


def _codec(cls: Any) -> tuple[_Fn, _Fn]:
    """The (writer, reader) of an attrs class, derived on first use."""
    try:
        found = _CODECS.get(cls)
    except TypeError:  # unhashable: no class
        raise Decline(repr(cls)) from None
    if found is None:
        with _DERIVE_LOCK:
            found = _CODECS.get(cls)
            if found is None:
                try:
                    found = _derive_class(cls, tag=None)
                except Decline:
                    found = (_declined(cls), _declined(cls))
                _CODECS[cls] = found
    return found


def _declined(cls: Any) -> _Fn:
    def decline(_: Any) -> Any:
        raise Decline(getattr(cls, "__name__", repr(cls)))

    return decline


# Classes being derived: a class that holds itself (a tree) resolves its own codec lazily.
_DERIVING: set[type] = set()


def _derive_class(cls: Any, tag: str | None) -> tuple[_Fn, _Fn]:
    if not (isinstance(cls, type) and attrs.has(cls)) or cls in _DERIVING:
        raise Decline(getattr(cls, "__name__", repr(cls)))
    _DERIVING.add(cls)
    try:
        fields = attrs.fields(attrs.resolve_types(cls))
        if any(not a.init for a in fields):
            raise Decline(cls.__name__)
        parts = [(a.name, a.alias, *_derive(a.type)) for a in fields]
    finally:
        _DERIVING.discard(cls)
    # One plain loop over the fields: for a handful of values it beats the C helpers
    # (attrgetter, zip, map), whose set-up costs more than the loop. A field of exactly
    # str, int or bool is checked in the loop; every other field calls its conversion.
    plan = [
        (a.name, None if a.type in _EXACT else w, a.type) for a, (_, _, w, _) in zip(fields, parts)
    ]
    reads = [
        (a.name, None if a.type in _EXACT else r, a.type) for a, (_, _, _, r) in zip(fields, parts)
    ]
    positional = not any(a.kw_only for a in fields)
    aliases = [a.alias for a in fields]
    size = len(fields) + (tag is not None)
    name = cls.__name__

    def write(obj: Any) -> Any:
        if type(obj) is not cls:
            raise Decline(name)
        out = {} if tag is None else {MOUNT_TAG: tag}  # a mount's tag first
        for key, fn, tp in plan:
            v = getattr(obj, key)
            if fn is not None:
                out[key] = fn(v)
            elif type(v) is tp:
                out[key] = v
            else:
                raise Decline(name)
        return out

    def read(data: Any) -> Any:
        if type(data) is not dict or len(data) != size:
            raise Decline(name)
        args = []
        try:
            for key, fn, tp in reads:
                v = data[key]
                if fn is not None:
                    args.append(fn(v))
                elif type(v) is tp:
                    args.append(v)
                else:
                    raise Decline(name)
        except KeyError:
            raise Decline(name) from None
        return cls(*args) if positional else cls(**dict(zip(aliases, args)))

    return write, read


def _derive(tp: Any) -> tuple[_Fn, _Fn]:
    """The (writer, reader) of a field of type ``tp``; :class:`Decline` for any other type."""
    if tp in _EXACT:
        check = _exact(tp)
        return check, check
    if tp is float:
        return _float, _float
    if tp is type(None):
        return _none, _none
    if tp is Any or tp is object:
        return json_value, json_value
    if tp == Mount:
        return _mount_writer(), _mount_reader()
    if isinstance(tp, type) and issubclass(tp, Enum):
        return _enum(tp)
    if isinstance(tp, type) and attrs.has(tp):
        if tp in _DERIVING:  # the class holds itself: look its codec up when called
            return (lambda v: _codec(tp)[0](v)), (lambda v: _codec(tp)[1](v))
        return _codec(tp)
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin in (typing.Union, types.UnionType) and len(args) == 2 and type(None) in args:
        (inner,) = [a for a in args if a is not type(None)]
        if inner in _EXACT:
            check = _exact_or_none(inner)
            return check, check
        write, read = _derive(inner)
        return _optional(write), _optional(read)
    if origin is list and len(args) == 1:
        return _list(*_derive(args[0]), elem=args[0])
    if origin is dict and len(args) == 2 and args[0] is str:
        return _dict(*_derive(args[1]), value=args[1])
    raise Decline(repr(tp))


# -- the field conversions (each raises Decline for a value not exactly of its type) ---------

_EXACT = (str, int, bool)


def _exact(tp: type) -> _Fn:
    def check(v: Any) -> Any:
        if type(v) is tp:
            return v
        raise Decline(tp.__name__)

    return check


def _exact_or_none(tp: type) -> _Fn:
    def check(v: Any) -> Any:
        if v is None or type(v) is tp:
            return v
        raise Decline(tp.__name__)

    return check


def _float(v: Any) -> Any:
    t = type(v)
    if (t is float or t is int) and math.isfinite(v):
        return float(v)
    raise Decline("float")


def _none(v: Any) -> Any:
    if v is None:
        return None
    raise Decline("None")


JSON_EXPECTED = "a JSON value (dict, list, str, int, float, bool or null)"


def json_value(value: Any) -> Any:
    """Checks and copies a free-form JSON value (metadata, capabilities, tags, overrides).

    The converter uses it too: its :class:`~torchx.specs._messages.Invalid` names where,
    inside the value, the first bad part is (``['a'][1]``).
    """
    t = type(value)
    if t is str or t is int or t is bool or value is None:
        return value
    if t is dict:
        out: dict[str, Any] = {}
        key: Any = None
        try:
            for key, item in value.items():
                if type(key) is not str:
                    raise Invalid("a str key", key, subpath=f"[{show(key)}]")
                ti = type(item)  # flat values without a call: most metadata is flat
                if ti is str or ti is int or ti is bool or item is None:
                    out[key] = item
                else:
                    out[key] = json_value(item)
        except Invalid as e:
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
                    items.append(json_value(item))
        except Invalid as e:
            e.subpath = f"[{index}]{e.subpath}"
            raise
        return items
    if t is float:
        if math.isfinite(value):
            return value
        raise Invalid("a finite number", value)
    if isinstance(value, dict):
        return json_value(dict(value))
    if isinstance(value, list):
        return json_value(list(value))
    raise Invalid(JSON_EXPECTED, value)


def _optional(fn: _Fn) -> _Fn:
    return lambda v: None if v is None else fn(v)


def _list(write: _Fn, read: _Fn, elem: Any) -> tuple[_Fn, _Fn]:
    if elem in _EXACT:  # list[str]: one loop, no call per item

        def scalars(v: Any) -> Any:
            if type(v) is not list:
                raise Decline("list")
            for x in v:
                if type(x) is not elem:
                    raise Decline(elem.__name__)
            return list(v)

        return scalars, scalars

    def of(fn: _Fn) -> _Fn:
        def items(v: Any) -> Any:
            if type(v) is not list:
                raise Decline("list")
            return list(map(fn, v))

        return items

    return of(write), of(read)


def _dict(write: _Fn, read: _Fn, value: Any) -> tuple[_Fn, _Fn]:
    if value in _EXACT:  # dict[str, str]: one loop, no call per item

        def scalars(v: Any) -> Any:
            if type(v) is not dict:
                raise Decline("dict")
            for k, x in v.items():
                if type(k) is not str or type(x) is not value:
                    raise Decline(value.__name__)
            return dict(v)

        return scalars, scalars
    if write is json_value:  # dict[str, Any]: the JSON copy checks the keys
        return _json_dict, _json_dict

    def of(fn: _Fn) -> _Fn:
        def items(v: Any) -> Any:
            if type(v) is not dict:
                raise Decline("dict")
            out = {}
            for k, x in v.items():
                if type(k) is not str:
                    raise Decline("a str key")
                out[k] = fn(x)
            return out

        return items

    return of(write), of(read)


def _json_dict(v: Any) -> Any:
    """A ``dict[str, Any]`` field: :func:`json_value` inlined for flat dicts (most are)."""
    if type(v) is not dict:
        raise Decline("dict")
    out = {}
    for key, item in v.items():
        t = type(item)
        if type(key) is not str or not (t is str or t is int or t is bool or item is None):
            return json_value(v)  # nested, or bad: the general walk (and its error)
        out[key] = item
    return out


def _enum(cls: type[Enum]) -> tuple[_Fn, _Fn]:
    members = cls.__members__

    def write(v: Any) -> Any:
        if type(v) is not cls:
            raise Decline(cls.__name__)
        return v._name_  # what ``.name`` gives, without its descriptor

    def read(v: Any) -> Any:
        if type(v) is str:
            member = members.get(v)
            if member is not None:
                return member
        raise Decline(cls.__name__)

    return write, read


def _mount_writer() -> _Fn:
    writers = {cls: _derive_class(cls, tag=tag)[0] for tag, cls in MOUNT_TYPES.items()}

    def write(v: Any) -> Any:
        fn = writers.get(type(v))
        if fn is None:
            raise Decline("a mount")
        return fn(v)  # the tag first, then the fields

    return write


def _mount_reader() -> _Fn:
    readers = {tag: _derive_class(cls, tag=tag)[1] for tag, cls in MOUNT_TYPES.items()}

    def read(v: Any) -> Any:
        if type(v) is not dict:
            raise Decline("a mount")
        tag = v.get(MOUNT_TAG)
        fn = readers.get(tag) if type(tag) is str else None
        if fn is None:
            raise Decline("a mount")
        return fn(v)  # holds every field and the tag: no more, no fewer keys

    return read
