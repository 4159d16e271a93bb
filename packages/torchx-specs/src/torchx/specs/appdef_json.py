"""An AppDef as the serializer's JSON document: what schedulers keep beside a job.

Schedulers keep the AppDef an app was submitted with next to it (a container label, an
object's annotation, a job's parameter, a file in the job's directory), so that
``describe`` gives it back from any process. That text is the document
:func:`torchx.specs.serialize.dumps_json` writes (``{"apiVersion": "torchx.specs/v1",
"kind": "AppDef", "spec": {...}}``), so documents written by any release read the same.

The run options the app was submitted with travel in the same document, masked
(:func:`torchx.specs.secrets.masked_run_options`) when written, since a label, an
annotation or a job's parameter is readable by others: ``encode(app, run_options=cfg)``
writes them, :func:`decode_with_options` gives them back. They are kept as one entry of
the AppDef's ``metadata``, :data:`RUN_OPTIONS_KEY`, whose value is their JSON object
(keys sorted), rather than as a key of the document's envelope: every reader refuses an
envelope key it does not know, so a document with one would read as no AppDef at all
to an older release (``torchx status`` of another venv on a shared cluster), while an
entry of ``metadata`` is an AppDef any release reads (it shows as one more metadata
entry there). This release takes the entry out of the AppDef it reads, and reads a
document without it (an older release's) as one without run options. The key is
reserved: an app's own metadata entry of that name is not kept.

These calls are that serializer, named for this one use. It costs no cattrs on
``torchx run`` or ``torchx status``: the serializer answers well-formed AppDefs with its
standard-library fast path and loads its cattrs converter only for what that declines
(a document of a later release, a Role subclass, a bad value), which it reads, writes or
refuses with its one-line error.

>>> from torchx.specs import AppDef, Role
>>> app = AppDef("echo", [Role("hello", image="busybox", entrypoint="echo", args=["hi"])])
>>> decode(encode(app)) == app
True
>>> decode_with_options(encode(app, run_options={"queue": "gpu", "api_token": "t0k"}))[1]
{'api_token': '****', 'queue': 'gpu'}
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from typing import Any

import attrs

from torchx.specs.api import AppDef
from torchx.specs.handles import ENV_TORCHX_JOB_ID
from torchx.specs.serialize import API_VERSION, dumps_json, loads_json

__all__ = ["API_VERSION", "RUN_OPTIONS_KEY", "decode", "decode_with_options", "encode"]

#: The AppDef ``metadata`` entry that holds the masked run options (a JSON object).
RUN_OPTIONS_KEY = "torchx.runOptions"


def encode(app: AppDef, run_options: Mapping[str, Any] | None = None) -> str:
    """``app`` as the JSON document ``dumps_json(app)`` writes, without ``TORCHX_JOB_ID``,
    with ``run_options`` (when given) masked in its :data:`RUN_OPTIONS_KEY` entry.

    The submit pipeline gives every role of the request it makes ``TORCHX_JOB_ID`` (the
    app's handle, :data:`torchx.specs.handles.ENV_TORCHX_JOB_ID`), replacing any value
    the role had: it is not part of the AppDef that was submitted, so a scheduler that
    keeps the AppDef of the request it was given keeps it without that variable.
    """
    if run_options is not None or RUN_OPTIONS_KEY in app.metadata:
        from torchx.specs.secrets import masked_run_options

        app = copy.copy(app)
        app.metadata = {k: v for k, v in app.metadata.items() if k != RUN_OPTIONS_KEY}
        if run_options is not None:
            app.metadata[RUN_OPTIONS_KEY] = json.dumps(
                masked_run_options(run_options),
                sort_keys=True,
                separators=(",", ":"),
                ensure_ascii=False,
                allow_nan=False,
            )
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
    return decode_with_options(text)[0]


def decode_with_options(text: str) -> tuple[AppDef, dict[str, Any]]:
    """The AppDef of a document and the (masked) run options kept with it; raises
    ``SerializationError`` (a ``ValueError``) if it holds no AppDef.

    The run options are ``{}`` for a document without them (an older release's), and
    for an entry that is not a JSON object of plain values (none is better than a wrong
    one): each value a str, int, float, bool, list of str or mapping of str to str.
    """
    app = loads_json(text, AppDef)
    raw = app.metadata.pop(RUN_OPTIONS_KEY, None)
    return app, _run_options(raw)


def _run_options(raw: object) -> dict[str, Any]:
    if not isinstance(raw, str):
        return {}
    try:
        found = json.loads(raw)
    except ValueError:
        return {}
    if not isinstance(found, dict) or not all(_plain(v) for v in found.values()):
        return {}
    return {str(k): found[k] for k in sorted(found)}


def _plain(value: object) -> bool:
    if isinstance(value, str | bool | int | float):
        return True
    if isinstance(value, list):
        return all(isinstance(v, str) for v in value)
    if isinstance(value, dict):
        return all(isinstance(v, str) for v in value.values())
    return False
