"""An AppDef as the serializer's JSON document, written and read without cattrs.

Schedulers keep the AppDef an app was submitted with next to it (a container label, an
object's annotation, a job's tag), so that ``describe`` gives it back from any process.
That text is the same JSON document as :func:`torchx.specs.serialize.dumps_json` writes
(``{"apiVersion": "torchx.specs/v1", "kind": "AppDef", "spec": {...}}``: field names as
keys, enums by name, mounts tagged by ``"type"``), so documents written by any release
read the same. What differs is the cost: the serializer imports cattrs and builds its
converter on first use, tens of milliseconds (more under load) that every ``torchx run``
and every ``torchx status`` would pay for one small document. :func:`encode` and
:func:`decode` do the same with plain code for the fields an AppDef has today.

Neither ever guesses. :func:`encode` checks each value's type on the way and leaves
anything unusual (a value of the wrong type, a key that is not a string, a float that is
not finite, a subclass it does not know) to ``dumps_json``, which writes it or raises its
one-line error. :func:`decode` reads only a document whose version, kind, keys and value
types are exactly what :func:`encode` writes; anything else (a document written by a later
release with a field this one lacks, another format version) goes to ``loads_json``,
which migrates or refuses it. So the two agree with the serializer wherever it agrees
with itself (the tests check that with hypothesis), and a field added to the specs
without being added here fails a test instead of vanishing from stored documents.

>>> from torchx.specs import AppDef, Role
>>> app = AppDef("echo", [Role("hello", image="busybox", entrypoint="echo", args=["hi"])])
>>> decode(encode(app)) == app
True
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Any

from torchx.specs import (
    AppDef,
    BindMount,
    DeviceMount,
    Resource,
    RetryPolicy,
    Role,
    VolumeMount,
    Workspace,
)

#: The document version written and read here (the serializer's ``API_VERSION``).
API_VERSION = "torchx.specs/v1"
_KIND = "AppDef"


class _Unusual(Exception):
    """Something the plain code leaves to the serializer."""


# -- writing --------------------------------------------------------------------------------


def encode(app: AppDef) -> str:
    """``app`` as the JSON document ``dumps_json(app)`` writes (byte for byte)."""
    try:
        doc = {"apiVersion": API_VERSION, "kind": _KIND, "spec": _app(app)}
        return json.dumps(doc, ensure_ascii=False, allow_nan=False)
    except (_Unusual, ValueError):
        from torchx.specs.serialize import dumps_json

        return dumps_json(app)


def _str(v: Any) -> str:
    if type(v) is not str:
        raise _Unusual
    return v


def _int(v: Any) -> int:
    if type(v) is not int:
        raise _Unusual
    return v


def _bool(v: Any) -> bool:
    if type(v) is not bool:
        raise _Unusual
    return v


def _strs(v: Any) -> list[str]:
    if type(v) is not list:
        raise _Unusual
    return [_str(x) for x in v]


def _str_dict(v: Any, values: Callable[[Any], Any]) -> dict[str, Any]:
    if type(v) is not dict:
        raise _Unusual
    return {_str(k): values(x) for k, x in v.items()}


def _json(v: Any) -> Any:
    """A free-form JSON value (metadata, capabilities, tags, overrides), copied."""
    t = type(v)
    if t is str or t is int or t is bool or v is None:
        return v
    if t is float:
        if not math.isfinite(v):
            raise _Unusual
        return v
    if t is dict:
        return {_str(k): _json(x) for k, x in v.items()}
    if t is list:
        return [_json(x) for x in v]
    raise _Unusual


def _resource(r: Any) -> dict[str, Any]:
    if type(r) is not Resource:
        raise _Unusual
    return {
        "cpu": _int(r.cpu),
        "gpu": _int(r.gpu),
        "memMB": _int(r.memMB),
        "capabilities": _str_dict(r.capabilities, _json),
        "devices": _str_dict(r.devices, _int),
        "tags": _str_dict(r.tags, _json),
    }


def _mount(m: Any) -> dict[str, Any]:
    t = type(m)
    if t is BindMount:
        return {
            "type": "bind",
            "src_path": _str(m.src_path),
            "dst_path": _str(m.dst_path),
            "read_only": _bool(m.read_only),
        }
    if t is VolumeMount:
        return {
            "type": "volume",
            "src": _str(m.src),
            "dst_path": _str(m.dst_path),
            "read_only": _bool(m.read_only),
        }
    if t is DeviceMount:
        return {
            "type": "device",
            "src_path": _str(m.src_path),
            "dst_path": _str(m.dst_path),
            "permissions": _str(m.permissions),
        }
    raise _Unusual


def _role(r: Any) -> dict[str, Any]:
    if type(r) is not Role or not isinstance(r.retry_policy, RetryPolicy):
        raise _Unusual  # a subclass, or a policy given as a plain string: the serializer's
    if type(r.mounts) is not list or not (r.workspace is None or type(r.workspace) is Workspace):
        raise _Unusual
    return {
        "name": _str(r.name),
        "image": _str(r.image),
        "min_replicas": None if r.min_replicas is None else _int(r.min_replicas),
        "entrypoint": _str(r.entrypoint),
        "args": _strs(r.args),
        "env": _str_dict(r.env, _str),
        "num_replicas": _int(r.num_replicas),
        "max_retries": _int(r.max_retries),
        "retry_policy": r.retry_policy.name,
        "resource": _resource(r.resource),
        "port_map": _str_dict(r.port_map, _int),
        "metadata": _str_dict(r.metadata, _json),
        "mounts": [_mount(m) for m in r.mounts],
        "workspace": (
            None if r.workspace is None else {"projects": _str_dict(r.workspace.projects, _str)}
        ),
        "overrides": _str_dict(r.overrides, _json),
    }


def _app(app: Any) -> dict[str, Any]:
    if type(app) is not AppDef or type(app.roles) is not list:
        raise _Unusual
    return {
        "name": _str(app.name),
        "roles": [_role(r) for r in app.roles],
        "metadata": _str_dict(app.metadata, _str),
    }


# -- reading --------------------------------------------------------------------------------

#: The keys of each object, in the order :func:`encode` writes them.
APP_KEYS = ("name", "roles", "metadata")
ROLE_KEYS = (
    "name",
    "image",
    "min_replicas",
    "entrypoint",
    "args",
    "env",
    "num_replicas",
    "max_retries",
    "retry_policy",
    "resource",
    "port_map",
    "metadata",
    "mounts",
    "workspace",
    "overrides",
)
RESOURCE_KEYS = ("cpu", "gpu", "memMB", "capabilities", "devices", "tags")
MOUNT_KEYS = {
    "bind": ("type", "src_path", "dst_path", "read_only"),
    "volume": ("type", "src", "dst_path", "read_only"),
    "device": ("type", "src_path", "dst_path", "permissions"),
}
WORKSPACE_KEYS = ("projects",)


def decode(text: str) -> AppDef:
    """The AppDef of a document; raises ``SerializationError`` (a ``ValueError``) if it is none."""
    try:
        doc = json.loads(text)
    except ValueError:
        doc = None
    if (
        type(doc) is dict
        and doc.keys() == {"apiVersion", "kind", "spec"}
        and doc["apiVersion"] == API_VERSION
        and doc["kind"] == _KIND
    ):
        try:
            return _read_app(doc["spec"])
        except (_Unusual, KeyError, ValueError):
            pass
    from torchx.specs.serialize import loads_json

    return loads_json(text, AppDef)


def _keys(d: Any, keys: tuple[str, ...]) -> dict[str, Any]:
    if type(d) is not dict or len(d) != len(keys) or any(k not in d for k in keys):
        raise _Unusual
    return d


def _read_resource(d: Any) -> Resource:
    d = _keys(d, RESOURCE_KEYS)
    return Resource(
        cpu=_int(d["cpu"]),
        gpu=_int(d["gpu"]),
        memMB=_int(d["memMB"]),
        capabilities=_str_dict(d["capabilities"], _json),
        devices=_str_dict(d["devices"], _int),
        tags=_str_dict(d["tags"], _json),
    )


def _read_mount(d: Any) -> BindMount | VolumeMount | DeviceMount:
    if type(d) is not dict:
        raise _Unusual
    kind = d.get("type")
    d = _keys(d, MOUNT_KEYS.get(kind, ()) if type(kind) is str else ())
    if kind == "bind":
        return BindMount(_str(d["src_path"]), _str(d["dst_path"]), _bool(d["read_only"]))
    if kind == "volume":
        return VolumeMount(_str(d["src"]), _str(d["dst_path"]), _bool(d["read_only"]))
    return DeviceMount(_str(d["src_path"]), _str(d["dst_path"]), _str(d["permissions"]))


def _read_role(d: Any) -> Role:
    d = _keys(d, ROLE_KEYS)
    if type(d["mounts"]) is not list:
        raise _Unusual
    policy = d["retry_policy"]
    if type(policy) is not str or policy not in RetryPolicy.__members__:
        raise _Unusual
    min_replicas = d["min_replicas"]
    workspace = d["workspace"]
    return Role(
        name=_str(d["name"]),
        image=_str(d["image"]),
        min_replicas=None if min_replicas is None else _int(min_replicas),
        entrypoint=_str(d["entrypoint"]),
        args=_strs(d["args"]),
        env=_str_dict(d["env"], _str),
        num_replicas=_int(d["num_replicas"]),
        max_retries=_int(d["max_retries"]),
        retry_policy=RetryPolicy[policy],
        resource=_read_resource(d["resource"]),
        port_map=_str_dict(d["port_map"], _int),
        metadata=_str_dict(d["metadata"], _json),
        mounts=[_read_mount(m) for m in d["mounts"]],
        workspace=(
            None
            if workspace is None
            else Workspace(_str_dict(_keys(workspace, WORKSPACE_KEYS)["projects"], _str))
        ),
        overrides=_str_dict(d["overrides"], _json),
    )


def _read_app(d: Any) -> AppDef:
    d = _keys(d, APP_KEYS)
    if type(d["roles"]) is not list:
        raise _Unusual
    return AppDef(
        name=_str(d["name"]),
        roles=[_read_role(r) for r in d["roles"]],
        metadata=_str_dict(d["metadata"], _str),
    )
