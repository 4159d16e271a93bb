"""Turning specs into JSON-safe data, JSON and YAML, and back, without losing anything.

One codec knows every spec type (:class:`~torchx.specs.AppDef`,
:class:`~torchx.specs.Role`, :class:`~torchx.specs.Resource`, the mounts,
:class:`~torchx.specs.Workspace`, :class:`~torchx.specs.AppStatus` and its parts) and
any other attrs class built from the same kinds of fields. It backs ``--json`` output,
the local scheduler's records, the AppDef a scheduler keeps beside its job
(:mod:`torchx.specs.appdef_json`) and AppDef files (``torchx run app.yaml``).

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

How it is made: every call is answered first by a standard-library fast path derived from
the attrs fields (``torchx.specs._plain``), which handles complete, well-typed data and
objects; whatever it declines (fields left out, a Role subclass, a Path field, any bad
input) goes to one cattrs converter (``torchx.specs._converter``), which reads it or
names every bad field. So ``torchx run`` and ``torchx status`` read and write AppDefs
without importing cattrs, and ``import torchx.specs`` never imports this module.
"""

from __future__ import annotations

import importlib
import json
import os
import types
from collections.abc import Callable, Mapping
from typing import Any, TypeVar, overload

import attrs

from torchx.specs import _plain
from torchx.specs._messages import Invalid, error_lines, show, type_name, unknown_field
from torchx.specs.api import (
    AppDef,
    AppState,
    AppStatus,
    ReplicaStatus,
    Resource,
    RetryPolicy,
    Role,
    RoleStatus,
)
from torchx.specs.api import Mount as Mount  # the union the wire format tags by "type"
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
#: As :data:`torchx.specs.appdef_json.RUN_OPTIONS_KEY` (which imports this module).
_RUN_OPTIONS_KEY = "torchx.runOptions"

_MAX_ERRORS_SHOWN = 10


class SerializationError(SpecError):
    """A document or object could not be converted; the message names every bad field.

    ``errors`` holds one line per problem, ``path: what is wrong`` (``roles[1].resource.memMB:
    expected int, got 'lots'``); the message shows the first few after a short header.
    """

    def __init__(self, message: str, errors: list[str] | None = None) -> None:
        super().__init__(message)
        self.errors: list[str] = list(errors) if errors else [message]


def _error(header: str, errors: list[str]) -> SerializationError:
    shown = "; ".join(errors[:_MAX_ERRORS_SHOWN])
    if len(errors) > _MAX_ERRORS_SHOWN:
        shown += f"; ... and {len(errors) - _MAX_ERRORS_SHOWN} more"
    return SerializationError(f"{header}: {shown}", errors)


def _converted(call: Callable[[], Any], header: str) -> Any:
    """The converter's answer; its errors as one :class:`SerializationError`."""
    try:
        return call()
    except Exception as e:
        raise _error(header, error_lines(e)) from None


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
    return _unstructure_as(obj, type(obj))


def _unstructure_as(obj: Any, cls: type) -> Any:
    if type(obj) is cls:
        try:
            return _plain.unstructure(obj)
        except Exception:  # declined: the converter writes it or says why not
            pass
    from torchx.specs import _converter

    header = f"cannot serialize {type_name(cls)}"
    return _converted(lambda: _converter.unstructure(obj, cls), header)


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
        fast: T = _plain.structure(data, cls)
        return fast
    except Exception:  # declined: the converter reads it or names every bad field
        pass
    from torchx.specs import _converter

    result: T = _converted(lambda: _converter.structure(data, cls), f"invalid {type_name(cls)}")
    return result


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
        raise SerializationError(f"kind must be a str such as 'AppDef', got {show(kind)}")
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
            f"invalid document: expected a dict with keys apiVersion, kind and spec, got {show(doc)}"
        )
    errors: list[str] = []
    for key in doc:
        if key not in _DOC_KEYS:
            errors.append(unknown_field(key, list(_DOC_KEYS)))
    errors.extend(f"{key}: required field missing" for key in _DOC_KEYS if key not in doc)
    version = doc.get("apiVersion")
    if "apiVersion" in doc and (type(version) is not str or version not in _MIGRATIONS):
        errors.append(
            f"apiVersion: unsupported version {show(version)} (this release of torchx-specs "
            f"reads {', '.join(SUPPORTED_API_VERSIONS)})"
        )
    kind = doc.get("kind")
    target: type | None = cls
    if "kind" in doc:
        if type(kind) is not str:
            errors.append(f"kind: expected str, got {show(kind)}")
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
    raise Invalid(message=f"{name} is not a valid JSON number")


def _parse_json(text: Any) -> Any:
    if not isinstance(text, str | bytes | bytearray):
        raise SerializationError(f"expected JSON text (str or bytes), got {show(text)}")
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
        raise SerializationError(f"expected YAML text (str or bytes), got {show(text)}")
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
    The run options a described app's document holds (its ``torchx.runOptions``
    metadata entry, see :mod:`torchx.specs.appdef_json`) are left out: the run is given
    its own.
    """
    from pathlib import Path  # not at import: pathlib is a few ms that torchx status skips

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
            app = structure(data, AppDef)
        else:
            app = from_document(data, AppDef)
        # the masked run options of a described app (torchx describe --json): not the app's
        app.metadata.pop(_RUN_OPTIONS_KEY, None)
        return app
    except SerializationError as e:
        raise SerializationError(f"{name}: {e}", [f"{name}: {line}" for line in e.errors]) from None
