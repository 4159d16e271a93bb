"""A read-only, plain-data view of the local scheduler's apps, for callers that must start fast.

``torchx status``, ``list`` and ``log`` of a local app are answered in about the time
of a bare interpreter's start: this module imports neither the spec types (attrs), nor
the plugin registry, nor the Scheduler contract; it reads the records
:class:`~torchx.schedulers.local.scheduler.LocalScheduler` writes, through the same
functions the scheduler reads them with, and returns dicts, tuples and strings::

    from torchx.schedulers.local import view as local_view

    try:
        fields = local_view.status("echo-1a2b3c4d5e")
    except local_view.Unsure:
        fields = None  # ask the scheduler: LocalScheduler.describe
    fields["state"], fields["roles"]   # "SUCCEEDED", [("echo", [(0, "SUCCEEDED", 0, "localhost")])]

It only ever reads. Whenever an answer would need more than reading (an app whose
supervisor died must first be recorded as FAILED), or anything is not as expected (no
such app, a record it cannot read or trust, an invalid id), it raises :class:`Unsure`
and the caller asks the scheduler itself, which handles and reports every such case.
So an answer from here is always the one the scheduler would give.

It is the view of the built-in ``local`` scheduler: a caller that found the scheduler
through the plugin registry must use it only when the registry's ``local`` is
``torchx.schedulers.local_scheduler:create_scheduler`` (a plugin may replace it).
"""

from __future__ import annotations

import os

from torchx.schedulers.local import records as _rec
from torchx.schedulers.local import state as _st
from torchx.specs.status import STATES

TYPE_CHECKING = False  # typing costs milliseconds; this module exists to save them
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable
    from datetime import datetime
    from typing import Any, TypeVar

    from torchx.specs.status import StatusRecord

    _Row = TypeVar("_Row")

__all__ = [
    "FACTORY",
    "Unsure",
    "list_apps",
    "list_apps_with_handles",
    "list_apps_with_times",
    "log_lines",
    "role_envs",
    "status",
]

#: The plugin registry's reference to the scheduler this module is a view of.
FACTORY = "torchx.schedulers.local_scheduler:create_scheduler"

#: The version of the AppDef documents (``torchx.specs.serialize``) this view reads.
_APPDEF_DOCUMENT = "torchx.specs/v1"

#: The names of ``torchx.specs.AppState`` (a record holds them as strings).
_STATES = frozenset(STATES)


class Unsure(Exception):
    """This view cannot answer by reading alone: ask the scheduler (the message says why)."""


def _state_dir(state_dir: str | None) -> str:
    return os.path.abspath(state_dir) if state_dir else _st.default_state_dir()


def _refuse_to_settle(app_dir: str, state: dict[str, Any]) -> dict[str, Any]:
    if not _rec.is_settled(state):
        raise Unsure(f"{app_dir}: its supervisor is gone; the scheduler records that first")
    return state


def _settled(app_id: str, state_dir: str | None) -> tuple[str, dict[str, Any]]:
    from torchx.schedulers.helpers.ids import is_valid_app_id

    if not is_valid_app_id(app_id):
        raise Unsure(f"invalid app id {app_id!r}")
    try:
        app_dir = _rec.app_dir(_state_dir(state_dir), app_id)
        state = _rec.read_state(app_dir)
    except Exception as e:  # the scheduler reports it, in its words
        raise Unsure(str(e)) from e
    if state is None:
        raise Unsure(f"no local app {app_id!r}")
    return app_dir, _refuse_to_settle(app_dir, state)


def status(app_id: str, state_dir: str | None = None) -> StatusRecord:
    """What ``LocalScheduler.describe`` reports of the app's state, as the plain status record.

    The record of :mod:`torchx.specs.status` (``state``, ``num_restarts``, ``msg``,
    ``ui_url``, ``start_time``, ``end_time``, ``roles``), equal to the one
    ``describe``'s answer gives (``AppStatus.record()``) but for the errors of a FAILED
    app's replicas, which only the scheduler reads. Raises :class:`Unsure`.
    """
    app_dir, state = _settled(app_id, state_dir)
    try:
        record = _rec.status_record(app_dir, state)
    except Exception as e:  # a record missing a field: the scheduler says what
        raise Unsure(str(e)) from e
    states = [record["state"]]
    for _role, replicas in record["roles"]:
        for rep_id, rep_state, exit_code, _host in replicas:
            states.append(rep_state)
            if not _is_int(rep_id) or not (exit_code is None or _is_int(exit_code)):
                raise Unsure(f"a replica id or exit code that is not a number: {replicas}")
    _check_states(states)
    return record


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _check_states(names: Iterable[object]) -> None:
    """Raises Unsure for a state that is not an ``AppState`` name (the scheduler says UNKNOWN)."""
    for name in names:
        if name not in _STATES:
            raise Unsure(f"unknown state {name!r} in the record")


def role_envs(app_id: str, state_dir: str | None = None) -> list[dict[str, str]]:
    """The ``env`` of each role of the AppDef the app was submitted with (for masking secrets).

    Read from the AppDef's JSON record; raises :class:`Unsure` when there is none (yet:
    an app a few seconds old may have only the scheduler's pickled copy).
    """
    app_dir, _ = _settled(app_id, state_dir)
    try:
        doc = _st.read_json(os.path.join(app_dir, "request.json"))["app"]
        if doc["apiVersion"] != _APPDEF_DOCUMENT or doc["kind"] != "AppDef":
            raise ValueError(f"an AppDef document of version {doc['apiVersion']!r}")
        envs = [role["env"] for role in doc["spec"]["roles"]]
    except Exception as e:
        raise Unsure(f"no AppDef record to read: {e}") from e
    if not all(
        isinstance(env, dict) and all(isinstance(v, str) for v in env.values()) for env in envs
    ):
        raise Unsure("an env that is not of strings")
    return envs


def _listed(read: Callable[[str, Any], list[_Row]], state_dir: str | None) -> list[_Row]:
    """``read(state directory, refuse_to_settle)`` of the records module; anything it
    raises but :class:`Unsure` becomes one (the full path then answers)."""
    try:
        return read(_state_dir(state_dir), _refuse_to_settle)
    except Unsure:
        raise
    except Exception as e:
        raise Unsure(str(e)) from e


def list_apps(state_dir: str | None = None) -> list[tuple[str, str, str]]:
    """``LocalScheduler.list()`` as (app id, state name, app name), newest first.

    Raises :class:`Unsure` when an app's record must be settled first (its supervisor
    died), or a state directory is refused.
    """
    apps = _listed(_rec.list_states, state_dir)
    _check_states(state for _, state, _ in apps)
    return apps


def list_apps_with_times(
    state_dir: str | None = None,
) -> list[tuple[str, str, str, float | None, float | None]]:
    """:func:`list_apps` with each app's start and end (seconds since the epoch, or None)."""
    apps = _listed(_rec.list_records, state_dir)
    _check_states(app[1] for app in apps)
    return apps


def list_apps_with_handles(
    session: str, state_dir: str | None = None
) -> list[tuple[str, str, str, float | None, float | None]]:
    """:func:`list_apps_with_times` with each app's handle in place of its id.

    The handle is ``{scheduler}://{session}/{app_id}``, ``scheduler`` being the name the
    app was submitted under (``local`` or ``local_cwd``), as ``LocalScheduler.list``
    and the Runner give it.
    """
    apps = _listed(_rec.list_rows, state_dir)
    _check_states(app[1] for app in apps)
    return [
        (f"{scheduler}://{session}/{app_id}", state, name, start, end)
        for app_id, state, name, start, end, scheduler in apps
    ]


def log_lines(
    app_id: str,
    role: str,
    k: int,
    stream: str | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
    should_tail: bool = False,
    state_dir: str | None = None,
) -> Iterable[str]:
    """The lines of replica ``k`` of ``role`` as ``LocalScheduler.log_iter`` gives them.

    ``stream`` is ``"stdout"``, ``"stderr"``, or None (or ``"combined"``) for both;
    ``since``/``until`` keep the lines seen in that window. The iterable also has
    ``blocks()`` (whole lines in blocks, for printers). ``should_tail`` is only
    answered for an app that has ended (there is nothing to follow: the same lines);
    following a running app, an unknown role or replica raise :class:`Unsure`.
    """
    from torchx.schedulers.local.logs import LogLines

    _, state = _settled(app_id, state_dir)
    if should_tail and state.get("state") not in _st.TERMINAL:
        raise Unsure(f"app {app_id} is running: the scheduler follows it")
    match = [rep for rep in state.get("replicas", {}).get(role, ()) if rep.get("id") == k]
    if not match or not isinstance(match[0].get("log_dir"), str):
        raise Unsure(f"no replica {k} of role {role!r} in app {app_id}")
    if stream not in (None, "combined", "stdout", "stderr"):
        raise Unsure(f"unknown stream {stream!r}")
    return LogLines(
        match[0]["log_dir"],
        None if stream in (None, "combined") else stream,
        since,
        until,
        should_tail,
        lambda: True,  # ended (checked above), so its output is complete
    )
