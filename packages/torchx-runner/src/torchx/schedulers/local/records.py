"""Finding and reading an app's records: the read side the scheduler and the quick view share.

:class:`~torchx.schedulers.local.scheduler.LocalScheduler` and the attrs-free quick
view (:mod:`torchx.schedulers.local.view`, which the ``torchx`` command uses to answer
``status``, ``list`` and ``log`` without importing the spec types) find an app's
directory, check that no other user could have planted it, and read its state record
through these functions, so the two can never disagree on where an app is or whether
its records may be trusted.

Standard library only (and little of it): the quick view's start-up time is the point.
"""

from __future__ import annotations

import os
import time

from torchx.schedulers.contract.errors import SchedulerError
from torchx.schedulers.local import state as _st
from torchx.specs.status import NONE

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from typing import Any

    from torchx.specs.status import StatusRecord

#: Where every replica of a local app runs.
HOST = "localhost"

#: A record with no supervisor pid this long after its creation was never started.
START_TIMEOUT = 60.0


class UnreadableRecord(SchedulerError):
    """A state.json that is not JSON (cut short, overwritten): the app can only be deleted."""


#: The file, in each replica's log directory, that its ``TORCHELASTIC_ERROR_FILE`` names:
#: torchrun (or PyTorch's ``@record``) writes the replica's exception there.
ERROR_FILE_NAME = "error.json"
#: ``torchx.schedulers.helpers.replica_errors.ERROR_FILE_ENV``, which the supervisor does not
#: import (that module loads the specs); a test checks they agree.
ERROR_FILE_ENV = "TORCHELASTIC_ERROR_FILE"


def check_dirs(state_dir: str, app_dir: str | None = None) -> None:
    """Refuses (SchedulerError, one line) a state or app directory another user could change.

    A record names processes to signal and directories to remove: one planted by
    another user in a directory they own, or may write into, must never be acted on.
    Missing directories pass (there is nothing to read).
    """
    try:
        _st.check_state_dir(state_dir)
        if app_dir is not None:
            _st.check_owned_dir(app_dir, "local app directory", follow=False)
    except FileNotFoundError:
        pass
    except _st.UnsafeDirError as e:
        raise SchedulerError(str(e)) from None


def listdir(path: str) -> list[str]:
    try:
        return os.listdir(path)
    except (FileNotFoundError, NotADirectoryError):
        return []


def unlink(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def link_paths(state_dir: str, app_id: str) -> list[str]:
    """Where a link to the app may be: this state directory's, then the default one's."""
    dirs = dict.fromkeys([state_dir, _st.default_state_dir()])
    return [os.path.join(d, "links", f"{app_id}.json") for d in dirs]


def linked_state_dir(state_dir: str, app_id: str) -> str | None:
    """The state directory a link to the app names (an app run with another state_dir), or None."""
    for path in link_paths(state_dir, app_id):
        check_dirs(os.path.dirname(os.path.dirname(path)))
        try:
            data = _st.read_json(path)
            break
        except (OSError, ValueError):
            continue
    else:
        return None
    if not isinstance(data, dict):
        return None
    target = data.get("state_dir")
    if data.get("apiVersion") != _st.API_VERSION or not isinstance(target, str):
        return None
    return target if os.path.isabs(target) else None


def app_dir(state_dir: str, app_id: str) -> str:
    """The record directory of ``app_id`` (already validated): here, or where its link points."""
    own = os.path.join(state_dir, "apps", app_id)
    check_dirs(state_dir, own)
    if os.path.isdir(own):
        return own
    target = linked_state_dir(state_dir, app_id)
    if target is None:
        return own
    found = os.path.join(target, "apps", app_id)
    check_dirs(target, found)
    return found


def app_dirs(state_dir: str) -> Iterator[tuple[str, str]]:
    """(app id, record directory) of every app in ``state_dir``, then of every linked app.

    A link whose app's records were removed by other means is forgotten (unlinked).
    """
    from torchx.schedulers.helpers.ids import is_valid_app_id

    check_dirs(state_dir)
    apps = os.path.join(state_dir, "apps")
    for name in listdir(apps):
        if is_valid_app_id(name):
            check_dirs(state_dir, os.path.join(apps, name))
            yield name, os.path.join(apps, name)
    for name in listdir(os.path.join(state_dir, "links")):
        app_id = name[: -len(".json")]
        if name.endswith(".json") and is_valid_app_id(app_id):
            target = linked_state_dir(state_dir, app_id)
            if target is None:
                continue
            found = os.path.join(target, "apps", app_id)
            check_dirs(target, found)
            if os.path.isdir(found):
                yield app_id, found
            else:  # its records were removed by other means: forget the app
                unlink(os.path.join(state_dir, "links", name))


def read_state(app_dir: str) -> dict[str, Any] | None:
    """The app's state record, None if there is none; a record of another version raises.

    A record this version cannot read (written by another release of torchx-runner) is
    a :class:`SchedulerError` naming the file, never a KeyError half-way through it.
    """
    path = os.path.join(app_dir, "state.json")
    try:
        data: dict[str, Any] = _st.read_json(path)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except ValueError as e:
        raise UnreadableRecord(f"{path}: unreadable record ({e}); delete the app") from None
    version = data.get("apiVersion") if isinstance(data, dict) else None
    if version != _st.API_VERSION:
        raise SchedulerError(
            f"{path}: record version {version!r} is not {_st.API_VERSION!r}, the one this "
            "torchx-runner reads: it was written by another release; follow the app with "
            "that release"
        )
    return data


def is_settled(state: dict[str, Any]) -> bool:
    """True when the record says what is true now: no reader has anything to record first.

    That is: the app has ended, or its supervisor is alive (proven by pid and start
    time), or it is being launched right now. Otherwise the supervisor died and the
    app must be settled as FAILED (:func:`settle`) before anyone reports it.
    """
    if state.get("state") in _st.TERMINAL:
        return True
    sup = state.get("supervisor")
    if sup is None:
        return time.time() - float(state.get("created", 0)) < START_TIMEOUT
    return _st.is_same_process_alive(sup.get("pid"), sup.get("start_time"))


def settle(app_dir: str, state: dict[str, Any]) -> dict[str, Any] | None:
    """The state, after settling a dead supervisor's app as FAILED (None: app deleted)."""
    if is_settled(state):
        return state
    sup = state.get("supervisor")
    if sup is None:
        return _st.mark_supervisor_dead(app_dir, "supervisor never started")
    reason = f"supervisor died (pid {sup.get('pid')}); its replicas were killed"
    try:
        with open(os.path.join(app_dir, "supervisor.log"), errors="replace") as f:
            last = [line for line in f.read()[-4000:].splitlines() if line.strip()]
        if last:
            reason += f"; its last words: {last[-1].strip()}"
    except OSError:
        pass
    return _st.mark_supervisor_dead(app_dir, reason)


def status_record(app_dir: str, state: dict[str, Any]) -> StatusRecord:
    """What ``describe`` reports of a (settled) state record, as the plain status record.

    The record of :mod:`torchx.specs.status` (what ``torchx status`` prints): ``msg``
    is ``"<NONE>"`` when there is none, ``ui_url`` the ``file://`` URL of the log
    directory, the times as :func:`times` says, every replica's host ``localhost``.
    """
    log_dir = state.get("log_dir") or os.path.join(app_dir, "logs")
    start_time, end_time = times(state)
    return {
        "state": state["state"],
        "num_restarts": int(state.get("num_restarts", 0)),
        "msg": state.get("msg") or NONE,
        "ui_url": f"file://{log_dir}",
        "start_time": start_time,
        "end_time": end_time,
        "roles": [
            (role, [(rep["id"], rep["state"], rep.get("exit_code"), HOST) for rep in replicas])
            for role, replicas in state.get("replicas", {}).items()
        ],
    }


def times(state: dict[str, Any]) -> tuple[float | None, float | None]:
    """(start, end) of an app's record, in seconds since the epoch; None where unknown.

    The start is when the app was submitted (its record made: the local scheduler
    starts the replicas at once); the end is when its final state was recorded, so
    None until it has one.
    """
    created = state.get("created")
    finished = state.get("finished")
    start = float(created) if isinstance(created, (int, float)) and created > 0 else None
    ended = state.get("state") in _st.TERMINAL and isinstance(finished, (int, float))
    return start, (float(finished) if ended and finished is not None else None)


def submitted_as(state: dict[str, Any]) -> str:
    """The scheduler name the app was submitted under, as its handle carries it.

    ``local``, or ``local_cwd`` (upstream's name for the same scheduler), as
    state.json's ``scheduler`` says. Records written before it was kept (same
    ``apiVersion``: the field is optional, and older releases ignore it) and anything
    that is not a plain name read as ``local``.
    """
    name = state.get("scheduler")
    if (
        isinstance(name, str)
        and name.isascii()
        and name[:1].isalpha()
        and name.replace("_", "").replace("-", "").isalnum()
    ):
        return name
    return "local"


def list_states(
    state_dir: str, settle: Callable[[str, dict[str, Any]], dict[str, Any] | None]
) -> list[tuple[str, str, str]]:
    """(app id, state name, app name) of every app (see :func:`app_dirs`), newest first.

    Each record goes through ``settle`` (:func:`settle`, or a reader's refusal to
    settle); one this version cannot read is listed as ``UNKNOWN``.
    """
    return [row[:3] for row in list_rows(state_dir, settle)]


def list_records(
    state_dir: str, settle: Callable[[str, dict[str, Any]], dict[str, Any] | None]
) -> list[tuple[str, str, str, float | None, float | None]]:
    """:func:`list_states` with each app's start and end (see :func:`times`)."""
    return [row[:5] for row in list_rows(state_dir, settle)]


def list_rows(
    state_dir: str, settle: Callable[[str, dict[str, Any]], dict[str, Any] | None]
) -> list[tuple[str, str, str, float | None, float | None, str]]:
    """:func:`list_records` with the name each app was submitted under (:func:`submitted_as`)."""
    found: list[tuple[float, str, str, str, float | None, float | None, str]] = []
    seen: set[str] = set()
    for app_id, found_dir in app_dirs(state_dir):
        if app_id in seen:
            continue
        seen.add(app_id)
        try:
            state = read_state(found_dir)
            if state is not None:
                state = settle(found_dir, state)
        except SchedulerError:
            state = {"state": "UNKNOWN", "created": 0.0}
        if state is None:
            continue
        found.append(
            (
                float(state.get("created", 0)),
                app_id,
                str(state["state"]),
                str(state.get("app_name", "")),
                *times(state),
                submitted_as(state),
            )
        )
    found.sort(key=lambda item: item[0], reverse=True)
    return [row[1:] for row in found]
