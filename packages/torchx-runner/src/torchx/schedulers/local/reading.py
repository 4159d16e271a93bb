"""Reading a local app for the scheduler: its record shared by followers, its AppDef, its status.

:class:`SharedRecords` lets the many readers that follow one app's logs share one
reading of its record per change; :func:`appdef` gives back the exact AppDef submitted
(from the private pickle, else the JSON document); :func:`describe_response` turns a
settled record into what ``describe`` returns. Every directory check and the settling
of a record whose supervisor died are :mod:`torchx.schedulers.local.records`' job.
"""

from __future__ import annotations

import _thread
import os
import time
from collections.abc import Callable
from typing import Any, TypeGuard

from torchx.schedulers.contract.api import DescribeAppResponse
from torchx.schedulers.contract.states import role_statuses, to_app_state
from torchx.schedulers.local import records as _rec
from torchx.schedulers.local import state as _st
from torchx.specs import NONE, AppDef, AppState

#: The records hold states by name; a name this release does not know is UNKNOWN.
_APP_STATES = AppState.__members__

#: A record shared by the readers of an app: (its state.json, the file's version, when
#: read, the settled record); see SharedRecords
_Shared = tuple[str, tuple[int, int, int], float, dict[str, Any] | None]


def _identity(path: str) -> tuple[int, int, int] | None:
    """The version of a record file (every write is a new inode); None if it is gone."""
    try:
        info = os.stat(path)
    except FileNotFoundError:
        return None
    return (info.st_ino, info.st_mtime_ns, info.st_size)


def _still_fresh(cached: _Shared | None, ident: tuple[int, int, int]) -> TypeGuard[_Shared]:
    """Whether ``cached`` is of this version of the record and was read within a second."""
    return cached is not None and cached[1] == ident and time.monotonic() - cached[2] < 1.0


class SharedRecords:
    """Apps' settled records, each read again only once its ``state.json`` changed or after 1 s.

    For the readers that follow an app's logs: ``torchx log`` of 128 replicas follows
    128 logs, and each asks at every quiet look whether the app has ended. Parsed
    once per change of the record (every write is a new inode) for all of them,
    instead of once per reader: with each reader parsing it, following 128
    replicas took more CPU than starting them. Read again after a second even if
    unchanged, which settles an app whose supervisor and watchdog were both killed.
    Readers that find it changed at once wait for the one reading it (a lock), so
    16 threads following 16 replicas still read each version once. The record
    returned is shared: callers only read it. The directory checks are made when the
    record is read, not at every look.
    """

    def __init__(self) -> None:
        self._shared: dict[str, _Shared] = {}  # app id -> its record, shared
        # one reader at a time reads a changed record (the others then find it read);
        # _thread, not threading: always loaded, so no import cost for the commands
        self._lock = _thread.allocate_lock()

    def get(
        self,
        app_id: str,
        app_dir: Callable[[str], str],
        read: Callable[[str], dict[str, Any] | None],
    ) -> dict[str, Any] | None:
        """``read(app_id)``, shared; ``app_dir(app_id)`` is the app's directory (checked)."""
        cached = self._shared.get(app_id)
        path = cached[0] if cached else os.path.join(app_dir(app_id), "state.json")
        ident = _identity(path)
        if ident is None:
            return None
        if _still_fresh(cached, ident):
            return cached[3]
        with self._lock:  # readers that found it changed together: one reads it
            cached = self._shared.get(app_id)
            ident = _identity(path)
            if ident is None:
                return None
            if _still_fresh(cached, ident):
                return cached[3]
            now = time.monotonic()
            state = read(app_id)
            self._shared[app_id] = (path, ident, now, state)
            return state


def appdef(app_dir: str) -> AppDef | None:
    """The AppDef as submitted: from the pickle cache, else from the JSON record."""
    import pickle

    from torchx.specs import __version__ as specs_version

    try:
        with open(os.path.join(app_dir, "appdef.pickle"), "rb") as f:
            # unpickled only if we wrote it: ours and private (anyone else's file
            # could run code when unpickled); otherwise the JSON record is read
            st = os.fstat(f.fileno())
            if st.st_uid != os.getuid() or st.st_mode & 0o077:
                raise PermissionError("appdef.pickle is not this user's private file")
            cached = pickle.load(f)
        if cached.get("specs_version") == specs_version and isinstance(cached.get("app"), AppDef):
            app: AppDef = cached["app"]
            return app
    except Exception:  # stale or unreadable cache: the JSON record decides
        pass
    from torchx.specs import serialize

    try:
        doc = _st.read_json(os.path.join(app_dir, "request.json"))["app"]
    except (OSError, KeyError, ValueError):
        return None
    return serialize.from_document(doc, AppDef)


def run_options(app_dir: str) -> dict[str, Any]:
    """The run options the app was submitted with, masked when written (request.json);
    empty for an app of an older release, which kept none."""
    try:
        found = _st.read_json(os.path.join(app_dir, "request.json")).get("run_options")
    except (OSError, ValueError, AttributeError):
        return {}
    return dict(found) if isinstance(found, dict) else {}


def describe_response(app_id: str, app_dir: str, state: dict[str, Any]) -> DescribeAppResponse:
    """What ``describe`` returns of the app whose settled record is ``state``."""
    record = _rec.status_record(app_dir, state)
    roles_statuses = role_statuses(record, lambda role, k: _replica_error(state, role, k))
    app = appdef(app_dir)
    return DescribeAppResponse(
        run_options=run_options(app_dir),
        app_id=app_id,
        state=to_app_state(record["state"], _APP_STATES),
        num_restarts=record["num_restarts"],
        msg=record["msg"],
        structured_error_msg=NONE,
        ui_url=record["ui_url"],
        metadata=dict(app.metadata) if app is not None else {},
        roles_statuses=roles_statuses,
        roles=list(app.roles) if app is not None else [],
        name=app.name if app is not None else str(state.get("app_name", "")),
        start_time=record["start_time"],
        end_time=record["end_time"],
    )


def _replica_error(state: dict[str, Any], role: str, rep_id: int) -> str:
    """The error a FAILED replica's torchrun (or ``@record``) wrote to its error file."""
    from torchx.schedulers.helpers.replica_errors import read_error_file

    for rep in state.get("replicas", {}).get(role, []):
        if rep.get("id") == rep_id and isinstance(rep.get("log_dir"), str):
            return read_error_file(os.path.join(rep["log_dir"], _rec.ERROR_FILE_NAME))
    return NONE
