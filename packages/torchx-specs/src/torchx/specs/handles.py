"""App handles: the one string that finds an app again from any later process.

A handle is ``{scheduler}://{session_name}/{app_id}``. The scheduler name may not
contain ``:`` or ``/``, the session name and the app id may not contain ``/``, and none
of them whitespace. An app id of several parts joins them with ``:``
(``k8s://default/team-a:trainer-x1``: a namespace and a name, see
``torchx.schedulers.ids.join_app_id``).

>>> parse_app_handle("k8s://default/foo_bar")
ParsedAppHandle(scheduler_backend='k8s', session_name='default', app_id='foo_bar')
>>> parse_app_handle("k8s:///foo_bar")
ParsedAppHandle(scheduler_backend='k8s', session_name='', app_id='foo_bar')
>>> make_app_handle("local", "me", "echo-x1")
'local://me/echo-x1'

Why no ``/`` in an app id: the CLI reads ``HANDLE/ROLE/N,M`` (``torchx log
local://me/echo-x1/trainer/0``), so a handle whose app id had a slash would be read back
as another app and a role. Such an id is refused where a handle is made (the Runner
removes an app its scheduler named so) and where one is parsed:

>>> parse_app_handle("k8s://default/a/b")
Traceback (most recent call last):
  ...
torchx.specs.errors.MalformedAppHandleException: malformed app handle 'k8s://default/a/b': its app id 'a/b' contains '/', which no app id may (a role is given apart, e.g. torchx log HANDLE/ROLE); expected {scheduler}://{session_name}/{app_id}, e.g. local://torchx/echo-k3x9q2m7bw
"""

from __future__ import annotations

import re
from typing import NamedTuple

from torchx.specs.errors import MalformedAppHandleException

#: An app handle is a plain string: ``{scheduler}://{session_name}/{app_id}``.
AppHandle = str

_HANDLE = re.compile(r"(?P<scheduler>[^:/\s]+)://(?P<session>[^/\s]*)/(?P<app_id>[^/\s]+)")
_FORM = "expected {scheduler}://{session_name}/{app_id}, e.g. local://torchx/echo-k3x9q2m7bw"


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
        raise MalformedAppHandleException(
            f"malformed app handle {app_handle!r}: {_what_is_wrong(app_handle)}{_FORM}"
        )
    return ParsedAppHandle(match["scheduler"], match["session"], match["app_id"])


def _what_is_wrong(app_handle: str) -> str:
    """The reason a handle of the right shape but for a ``/`` in its app id is refused."""
    scheme, sep, rest = app_handle.partition("://")
    session, _, app_id = rest.partition("/")
    if (
        sep
        and "/" in app_id
        and not any(c.isspace() for c in app_id)
        and _HANDLE.fullmatch(f"{scheme}://{session}/x")
    ):
        return (
            f"its app id {app_id!r} contains '/', which no app id may (a role is given "
            "apart, e.g. torchx log HANDLE/ROLE); "
        )
    return ""


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
            f"app_id={app_id!r}: the scheduler needs no ':' or '/', the session and the "
            "app id no '/', none of them whitespace, and the app id must be non-empty"
        )
    return handle
