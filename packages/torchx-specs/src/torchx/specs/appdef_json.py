"""An AppDef as the serializer's JSON document: what schedulers keep beside a job.

Schedulers keep the AppDef an app was submitted with next to it (a container label, an
object's annotation, a job's parameter, a file in the job's directory), so that
``describe`` gives it back from any process. That text is the document
:func:`torchx.specs.serialize.dumps_json` writes (``{"apiVersion": "torchx.specs/v1",
"kind": "AppDef", "spec": {...}}``), so documents written by any release read the same.

These two calls are that serializer, named for this one use. It costs no cattrs on
``torchx run`` or ``torchx status``: the serializer answers well-formed AppDefs with its
standard-library fast path and loads its cattrs converter only for what that declines
(a document of a later release, a Role subclass, a bad value), which it reads, writes or
refuses with its one-line error.

>>> from torchx.specs import AppDef, Role
>>> app = AppDef("echo", [Role("hello", image="busybox", entrypoint="echo", args=["hi"])])
>>> decode(encode(app)) == app
True
"""

from __future__ import annotations

import copy

import attrs

from torchx.specs.api import AppDef
from torchx.specs.handles import ENV_TORCHX_JOB_ID
from torchx.specs.serialize import API_VERSION, dumps_json, loads_json

__all__ = ["API_VERSION", "decode", "encode"]


def encode(app: AppDef) -> str:
    """``app`` as the JSON document ``dumps_json(app)`` writes, without ``TORCHX_JOB_ID``.

    The submit pipeline gives every role of the request it makes ``TORCHX_JOB_ID`` (the
    app's handle, :data:`torchx.specs.handles.ENV_TORCHX_JOB_ID`), replacing any value
    the role had: it is not part of the AppDef that was submitted, so a scheduler that
    keeps the AppDef of the request it was given keeps it without that variable.
    """
    if any(ENV_TORCHX_JOB_ID in role.env for role in app.roles):
        app = copy.copy(app)
        app.roles = [
            attrs.evolve(role, env={k: v for k, v in role.env.items() if k != ENV_TORCHX_JOB_ID})
            if ENV_TORCHX_JOB_ID in role.env
            else role
            for role in app.roles
        ]
    return dumps_json(app)


def decode(text: str) -> AppDef:
    """The AppDef of a document; raises ``SerializationError`` (a ``ValueError``) if it is none."""
    return loads_json(text, AppDef)
