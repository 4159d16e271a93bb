"""App handles: the one string that finds an app again from any later process.

A handle is ``{scheduler}://{session_name}/{app_id}``. The scheduler name may not
contain ``:`` or ``/``, the session name and the app id may not contain ``/``, and none
of them whitespace. An app id of several parts joins them with ``:``
(``k8s://default/team-a:trainer-x1``: a namespace and a name, see
``torchx.schedulers.helpers.ids.join_app_id``).

>>> parse_app_handle("k8s://default/foo_bar")
ParsedAppHandle(scheduler_backend='k8s', session_name='default', app_id='foo_bar')
>>> parse_app_handle("k8s:///foo_bar")
ParsedAppHandle(scheduler_backend='k8s', session_name='', app_id='foo_bar')
>>> make_app_handle("local", "me", "echo-x1")
'local://me/echo-x1'

A command parses what the user typed once, into a :class:`Handle`: the handle string
itself, carrying its parts and, for ``torchx log``'s ``HANDLE[/ROLE[/N,M]]``, the role
and replica ids. It is passed down as it is (the Runner takes it wherever it takes a
handle and reads its parts instead of parsing again); nothing splits and re-joins it:

>>> h = parse_target("local://me/echo-x1/echo/0,1")
>>> h, h.app_id, h.role, h.replica_ids
('local://me/echo-x1', 'echo-x1', 'echo', [0, 1])

Why no ``/`` in an app id: the CLI reads ``HANDLE/ROLE/N,M`` (``torchx log
local://me/echo-x1/trainer/0``), so a handle whose app id had a slash would be read back
as another app and a role. Such an id is refused where a handle is made (the Runner
removes an app its scheduler named so) and where one is parsed:

>>> parse_app_handle("k8s://default/a/b")
Traceback (most recent call last):
  ...
torchx.specs.errors.MalformedAppHandleException: malformed app handle 'k8s://default/a/b': its app id 'a/b' contains '/', which no app id may (a role is given apart, e.g. torchx log HANDLE/ROLE); expected {scheduler}://{session_name}/{app_id}, e.g. local://torchx/echo-k3x9q2m7bw

This module is part of the small standard-library core that ``torchx status`` uses on
its quick path (no ``typing``, no ``re``, no attrs): it costs microseconds to import.
"""

from __future__ import annotations

import collections

TYPE_CHECKING = False  # typing costs milliseconds: the quick path of `torchx status` parses here
if TYPE_CHECKING:
    from typing import NamedTuple

    from torchx.specs.errors import MalformedAppHandleException

    class ParsedAppHandle(NamedTuple):
        """Parsed components of an AppHandle."""

        scheduler_backend: str
        session_name: str
        app_id: str

else:
    ParsedAppHandle = collections.namedtuple(
        "ParsedAppHandle", ["scheduler_backend", "session_name", "app_id"]
    )
    ParsedAppHandle.__doc__ = "Parsed components of an AppHandle."

#: An app handle is a plain string: ``{scheduler}://{session_name}/{app_id}``.
AppHandle = str

_FORM = "expected {scheduler}://{session_name}/{app_id}, e.g. local://torchx/echo-k3x9q2m7bw"
_TARGET_FORM = (
    "expected HANDLE[/ROLE[/N,M]], HANDLE being "
    "{scheduler}://{session_name}/{app_id}, e.g. local://torchx/echo-k3x9q2m7bw/echo/0,1"
)


class Handle(str):
    """An app handle parsed once: the handle string, with its parts.

    ``scheduler_backend``, ``session_name`` and ``app_id`` are the handle's parts;
    ``role`` and ``replica_ids`` what ``HANDLE[/ROLE[/N,M]]`` narrowed it to (None when
    not given). As a ``str`` it is the handle alone (``{scheduler}://{session}/{app_id}``,
    the text the user typed up to the app id), so it goes wherever a handle goes.
    Made by :func:`parse_handle` and :func:`parse_target`.
    """

    scheduler_backend: str
    session_name: str
    app_id: str
    role: str | None
    replica_ids: list[int] | None

    @property
    def parsed(self) -> ParsedAppHandle:
        """The handle's parts, as :func:`parse_app_handle` gives them."""
        return ParsedAppHandle(self.scheduler_backend, self.session_name, self.app_id)


def _parts(text: str) -> tuple[str, str, str] | None:
    """(scheduler, session, app id) of a well-formed handle, else None."""
    scheme, sep, rest = text.partition("://")
    session, slash, app_id = rest.partition("/")
    if (
        not sep
        or not slash
        or not scheme
        or not app_id
        or ":" in scheme
        or "/" in scheme
        or "/" in app_id
        or any(c.isspace() for c in text)
    ):
        return None
    return scheme, session, app_id


def _handle(text: str, parts: tuple[str, str, str]) -> Handle:
    handle = Handle(text)
    handle.scheduler_backend, handle.session_name, handle.app_id = parts
    handle.role = handle.replica_ids = None
    return handle


def _error(message: str) -> MalformedAppHandleException:
    # imported when a handle is refused: a good one (the quick path's) needs none of it
    from torchx.specs.errors import MalformedAppHandleException

    return MalformedAppHandleException(message)


def _malformed(app_handle: object) -> MalformedAppHandleException:
    if not isinstance(app_handle, str):
        return _error(f"app handle must be a string, got {app_handle!r}; {_FORM}")
    return _error(f"malformed app handle {app_handle!r}: {_what_is_wrong(app_handle)}{_FORM}")


def parse_handle(app_handle: AppHandle) -> Handle:
    """The :class:`Handle` of ``{scheduler}://{session_name}/{app_id}`` (a Handle is itself).

    Raises :class:`~torchx.specs.errors.MalformedAppHandleException` (a ``ValueError``)
    naming the handle and the expected form.
    """
    if isinstance(app_handle, Handle):
        return app_handle
    parts = _parts(app_handle) if isinstance(app_handle, str) else None
    if parts is None:
        raise _malformed(app_handle)
    return _handle(app_handle, parts)


def parse_app_handle(app_handle: AppHandle) -> ParsedAppHandle:
    """Parses ``{scheduler}://{session_name}/{app_id}`` into its components.

    Raises :class:`~torchx.specs.errors.MalformedAppHandleException` (a ``ValueError``)
    naming the handle and the expected form.
    """
    return parse_handle(app_handle).parsed


def parse_target(text: str) -> Handle:
    """The :class:`Handle` of ``HANDLE[/ROLE[/N,M]]`` (``torchx log``), role and ids included.

    ``local://s/app/trainer/0,1``: the app's handle, role ``trainer``, replicas 0 and 1.
    An empty role or replica list is none given. No app id contains ``/``, so what
    follows the app id's slash is always a role. Raises
    :class:`~torchx.specs.errors.MalformedAppHandleException`, one line saying what is
    expected.
    """
    # the handle is the text up to the app id: after "://", the session's "/" and the next
    path = text.partition("://")[2].partition("/")[2]
    _app_id, slash, narrowing = path.partition("/")
    end = len(text) - len(narrowing) - len(slash)
    parts = _parts(text[:end])
    if parts is None:
        raise _error(f"bad handle {text!r}: {_TARGET_FORM}")
    handle = _handle(text[:end], parts)
    steps = narrowing.split("/") if narrowing else []
    handle.role = steps[0] if steps and steps[0] else None
    if len(steps) > 1 and steps[1]:
        try:
            handle.replica_ids = [int(x) for x in steps[1].split(",")]
        except ValueError:
            raise _error(
                f"bad replica ids {steps[1]!r} in {text!r}: expected numbers such as 0 or 0,1"
            ) from None
    if len(steps) > 2:
        raise _error(
            f"bad handle {text!r}: expected HANDLE[/ROLE[/N,M]], e.g. "
            f"{handle}/{handle.role or 'trainer'}/0,1"
        )
    return handle


def _what_is_wrong(app_handle: str) -> str:
    """The reason a handle of the right shape but for a ``/`` in its app id is refused."""
    scheme, sep, rest = app_handle.partition("://")
    session, _, app_id = rest.partition("/")
    if (
        sep
        and "/" in app_id
        and not any(c.isspace() for c in app_id)
        and _parts(f"{scheme}://{session}/x") is not None
    ):
        return (
            f"its app id {app_id!r} contains '/', which no app id may (a role is given "
            "apart, e.g. torchx log HANDLE/ROLE); "
        )
    return ""


#: The environment variable in which every replica finds its app's handle: the submit
#: pipeline of ``torchx.schedulers`` sets it on each role of the request it makes.
ENV_TORCHX_JOB_ID = "TORCHX_JOB_ID"


def make_app_handle(scheduler_backend: str, session_name: str, app_id: str) -> AppHandle:
    """Builds the handle ``{scheduler_backend}://{session_name}/{app_id}``.

    Rejects parts that would not parse back to themselves.
    """
    handle = f"{scheduler_backend}://{session_name}/{app_id}"
    if _parts(handle) != (scheduler_backend, session_name, app_id):
        raise _error(
            f"cannot make a handle from scheduler={scheduler_backend!r}, session={session_name!r}, "
            f"app_id={app_id!r}: the scheduler needs no ':' or '/', the session and the "
            "app id no '/', none of them whitespace, and the app id must be non-empty"
        )
    return handle
