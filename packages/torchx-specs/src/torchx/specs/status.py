"""An app's status as plain data, and its one text form: what ``torchx status`` prints.

Both ways of answering ``torchx status`` print through this module: the full path
(the Runner asks the scheduler, which answers with the attrs types, and
:meth:`torchx.specs.AppStatus.record` makes the record) and the quick path (the local
scheduler's records read by ``torchx.schedulers.local.view``, or a plugin's quick
handler, ``torchx.schedulers.helpers.quick``, give the record directly). So there is one record
and one text, and nothing else formats a status or patches what this one printed.

The record (``StatusRecord``) is a dict of plain values::

    {"state": "RUNNING", "num_restarts": 0, "msg": "", "ui_url": None,
     "start_time": 1795860255.02, "end_time": None,
     "roles": [("trainer", [(0, "RUNNING", None, "node-1")])]}

>>> print(format_status({
...     "state": "SUCCEEDED", "num_restarts": 0, "msg": "", "ui_url": None,
...     "start_time": None, "end_time": None,
...     "roles": [("echo", [(0, "SUCCEEDED", 0, "localhost")])],
... }))
State: SUCCEEDED
Num restarts: 0
Roles:
  echo:
    echo/0  SUCCEEDED  exit=0  host=localhost

It imports nothing (not even :mod:`typing`): the quick path of ``torchx status``
starts in about the time of a bare interpreter, and this module is part of it.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing costs milliseconds; the quick path of `torchx status` runs here
if TYPE_CHECKING:
    from typing import NotRequired, TypedDict

    #: A replica: (replica id, state name, exit code or None, hostname or "").
    ReplicaRecord = tuple[int, str, "int | None", str]

    class StatusRecord(TypedDict):
        """An app's status as plain values: the fields of an ``AppStatus``."""

        #: The app's state name (one of :data:`STATES`).
        state: str
        #: How many times the app was restarted (negative: not known).
        num_restarts: int
        #: What the scheduler says of the app ("" or ``"<NONE>"`` for nothing).
        msg: str
        ui_url: str | None
        #: Seconds since the epoch, None where unknown (or not ended yet).
        start_time: float | None
        end_time: float | None
        #: Each role, in the scheduler's order, and its replicas.
        roles: list[tuple[str, list[ReplicaRecord]]]
        #: The first line of each error shown: ``""`` for the app's, ``"role/id"``
        #: for a replica's (``torchx.specs.structured_errors.error_message``); only
        #: where there is one.
        errors: NotRequired[dict[str, str]]
        #: The env of each role of the app (a quick handler's, for masking secrets).
        envs: NotRequired[list[dict[str, str]]]


#: The names of :class:`torchx.specs.AppState`, in its order (a test checks they agree).
STATES = (
    "UNSUBMITTED",
    "SUBMITTED",
    "PENDING",
    "RUNNING",
    "SUCCEEDED",
    "FAILED",
    "CANCELLED",
    "UNKNOWN",
)
#: The states of an app that has ended: it will not change again.
ENDED = frozenset(("SUCCEEDED", "FAILED", "CANCELLED"))
#: Matches every role in a filter of roles (``torchx.specs.ALL``).
ALL = "ALL"
#: "No value" in string fields such as ``msg`` (``torchx.specs.NONE``).
NONE = "<NONE>"


def format_status(
    record: StatusRecord, filter_roles: list[str] | None = None, times: bool = True
) -> str:
    """The status as a person reads it, one field a line (no final newline).

    ``filter_roles`` keeps only the named roles' replicas; ``times`` adds when the app
    started and ended (what ``torchx status`` and ``run --wait`` print;
    ``AppStatus.format()`` has none, as upstream TorchX's).
    """
    restarts = record["num_restarts"]
    errors = record.get("errors") or {}
    lines = [
        f"State: {record['state']}",
        f"Num restarts: {restarts if restarts >= 0 else 'unknown'}",
    ]
    if times:
        lines.extend(time_lines(record["start_time"], record["end_time"]))
    if record["msg"]:
        lines.append(f"Msg: {record['msg']}")
    if errors.get(""):
        lines.append(f"Error: {errors['']}")
    if record["ui_url"]:
        lines.append(f"UI: {record['ui_url']}")
    wanted = None if not filter_roles or ALL in filter_roles else set(filter_roles)
    roles = [(r, reps) for r, reps in record["roles"] if wanted is None or r in wanted]
    if roles:
        lines.append("Roles:")
    for role, replicas in roles:
        lines.append(f"  {role}:")
        for rep_id, state, exit_code, host in replicas:
            parts = [f"{role}/{rep_id}", state]
            if exit_code is not None:
                parts.append(f"exit={exit_code}")
            if host:
                parts.append(f"host={host}")
            error = errors.get(f"{role}/{rep_id}")
            if error:
                parts.append(f"error={error}")
            lines.append("    " + "  ".join(parts))
    return "\n".join(lines)


def format_handle_status(
    handle: str, record: StatusRecord, filter_roles: list[str] | None = None
) -> str:
    """What ``torchx status HANDLE`` prints first: the handle, then :func:`format_status`."""
    return f"AppHandle: {handle}\n{format_status(record, filter_roles)}\n"


def format_duration(seconds: float) -> str:
    """A duration as ``torchx.specs.durations.parse_duration`` reads it back.

    ``42.2s`` under a minute (a tenth of a second kept); from a minute on, whole
    seconds and the two largest units: ``5m3s``, ``1h30m``, ``1d12h``.

    >>> [format_duration(s) for s in (42.24, 303, 5400, 129600, 3601)]
    ['42.2s', '5m3s', '1h30m', '1d12h', '1h']
    """
    if seconds < 60:
        return f"{max(seconds, 0.0):.1f}s"
    rest = int(seconds)
    parts: list[tuple[int, str]] = []
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60), ("s", 1)):
        count, rest = divmod(rest, size)
        if count or parts:
            parts.append((count, unit))
    return "".join(f"{count}{unit}" for count, unit in parts[:2] if count)


def format_time(epoch: float) -> str:
    """Seconds since the epoch as local time to the second: ``2026-11-25 09:15:00``.

    With :mod:`time` (built in), not :mod:`datetime`: the quick path imports nothing.
    """
    import time

    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(epoch))


def time_lines(start: float | None, end: float | None) -> list[str]:
    """The ``Started:``/``Ended:`` lines of ``torchx status`` (none for a time not known)."""
    lines = []
    if start is not None:
        lines.append(f"Started: {format_time(start)}")
    if end is not None:
        took = f" (after {format_duration(end - start)})" if start is not None else ""
        lines.append(f"Ended: {format_time(end)}{took}")
    return lines
