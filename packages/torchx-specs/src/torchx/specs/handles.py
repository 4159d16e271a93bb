"""App handles: the one string that finds an app again from any later process.

A handle is ``{scheduler}://{session_name}/{app_id}``. The scheduler name may not
contain ``:`` or ``/``, the session name may not contain ``/``; the app id is
everything after the session's slash and may contain slashes.

>>> parse_app_handle("k8s://default/foo_bar")
ParsedAppHandle(scheduler_backend='k8s', session_name='default', app_id='foo_bar')
>>> parse_app_handle("k8s:///foo_bar")
ParsedAppHandle(scheduler_backend='k8s', session_name='', app_id='foo_bar')
>>> make_app_handle("local", "me", "echo-x1")
'local://me/echo-x1'
"""

from __future__ import annotations

import re
from typing import NamedTuple

from torchx.specs.errors import MalformedAppHandleException

#: An app handle is a plain string: ``{scheduler}://{session_name}/{app_id}``.
AppHandle = str

_HANDLE = re.compile(r"(?P<scheduler>[^:/\s]+)://(?P<session>[^/\s]*)/(?P<app_id>\S+)")
_FORM = "expected {scheduler}://{session_name}/{app_id}, e.g. local://default/echo-abc123"


class ParsedAppHandle(NamedTuple):
    """Parsed components of an AppHandle."""

    scheduler_backend: str
    session_name: str
    app_id: str


def parse_app_handle(app_handle: AppHandle) -> ParsedAppHandle:
    """Parses ``{scheduler}://{session_name}/{app_id}`` into its components.

    Raises :class:`~torchx.specs.errors.MalformedAppHandleException` (a ``ValueError``)
    naming the handle and the expected form.
    """
    if not isinstance(app_handle, str):
        raise MalformedAppHandleException(
            f"app handle must be a string, got {app_handle!r}; {_FORM}"
        )
    match = _HANDLE.fullmatch(app_handle)
    if not match:
        raise MalformedAppHandleException(f"malformed app handle {app_handle!r}: {_FORM}")
    return ParsedAppHandle(match["scheduler"], match["session"], match["app_id"])


def make_app_handle(scheduler_backend: str, session_name: str, app_id: str) -> AppHandle:
    """Builds the handle ``{scheduler_backend}://{session_name}/{app_id}``.

    Rejects parts that would not parse back to themselves.
    """
    handle = f"{scheduler_backend}://{session_name}/{app_id}"
    try:
        parsed = parse_app_handle(handle)
    except MalformedAppHandleException:
        parsed = None
    if parsed != (scheduler_backend, session_name, app_id):
        raise MalformedAppHandleException(
            f"cannot make a handle from scheduler={scheduler_backend!r}, session={session_name!r}, "
            f"app_id={app_id!r}: the scheduler needs no ':' or '/', the session no '/', "
            "none of them whitespace, and the app id must be non-empty"
        )
    return handle
