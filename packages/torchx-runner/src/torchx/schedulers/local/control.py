"""Stopping and removing a local app: ``cancel`` and ``delete``, and a stopped supervisor.

A cancel is recorded, then signalled to the app's supervisor, which stops the replicas
(:func:`cancel`); a supervisor that cannot answer (``kill -STOP``) is killed instead,
with what is left of the app (:func:`kill_stopped_supervisor`,
:func:`end_without_supervisor`). :func:`delete` moves the app's directory aside in one
rename (readers see all of it or nothing), then removes it and its logs. Only
processes proven to be the app's are ever signalled (see
:func:`torchx.schedulers.local.state.kill_app`).
"""

from __future__ import annotations

import os
import signal
import time
from typing import Any

from torchx.schedulers.contract.errors import SchedulerError
from torchx.schedulers.local import state as _st
from torchx.schedulers.local.records import UnreadableRecord, read_state, unlink


def kill_stopped_supervisor(state: dict[str, Any]) -> bool:
    """If the app's supervisor is stopped (``kill -STOP``), kills it and its watchdog.

    A stopped supervisor neither answers SIGTERM nor releases the app's lock if it held
    it: waiting on it would hang. Returns once it is gone (its lock released with it);
    False if it was not stopped (nothing done).
    """
    sup = state.get("supervisor") or {}
    pid = sup.get("pid")
    if not isinstance(pid, int) or not _st.is_same_process_alive(pid, sup.get("start_time")):
        return False
    if not _st.is_stopped(pid):
        return False
    wd = state.get("watchdog") or {}  # first: it would record the app as FAILED
    for proc in (wd, sup):
        if _st.is_same_process_alive(proc.get("pid"), proc.get("start_time")):
            try:
                os.kill(int(proc["pid"]), signal.SIGKILL)
            except ProcessLookupError:
                pass
    _wait_gone(pid, sup.get("start_time"))
    return True


def _wait_gone(pid: int, start_time: int | None, timeout: float = 10.0) -> None:
    """Returns once the process is gone (a pidfd turns readable: an event), or after timeout."""
    import select

    try:
        fd = os.pidfd_open(pid)
    except OSError:
        return  # already gone
    try:
        if _st.is_same_process_alive(pid, start_time):  # the fd is of that very process
            select.select([fd], [], [], timeout)
    finally:
        os.close(fd)


def _salvage(app_dir: str) -> dict[str, Any]:
    """What delete needs of an app whose state.json is unreadable: its log directory."""
    try:
        request = _st.read_json(os.path.join(app_dir, "request.json"))
        log_dir = request.get("log_dir") if isinstance(request, dict) else None
    except (OSError, ValueError):
        log_dir = None
    # recorded as ended: nothing of it can be told from a stranger's process, none is killed
    return {"state": "FAILED", "log_dir": log_dir if isinstance(log_dir, str) else ""}


def cancel(app_dir: str, state: dict[str, Any] | None) -> None:
    """Records the cancel and sends SIGTERM to the supervisor, which stops the replicas.

    The record makes a cancel that reaches a supervisor still starting up (before its
    signal handler is in place) take effect all the same. A supervisor that cannot
    answer (stopped: ``kill -STOP``) is killed instead, and the app's processes with
    it; the record says so (``describe``'s ``msg``).
    """
    if state is None or state.get("state") in _st.TERMINAL:
        return
    if kill_stopped_supervisor(state):
        end_without_supervisor(app_dir, "was stopped (SIGSTOP) and did not answer")
        return
    try:
        with _st.locked(app_dir):
            state = read_state(app_dir)
            if state is None or state.get("state") in _st.TERMINAL:
                return
            if not state.get("cancel_requested"):
                state["cancel_requested"] = True
                _st.write_json_atomic(os.path.join(app_dir, "state.json"), state)
    except FileNotFoundError:
        return
    except OSError as e:  # a full disk: the signal alone reaches a running supervisor
        if e.errno not in _st.NO_SPACE or state is None:
            raise
    sup = state.get("supervisor") or {}
    if _st.is_same_process_alive(sup.get("pid"), sup.get("start_time")):
        try:
            os.kill(int(sup["pid"]), signal.SIGTERM)
        except ProcessLookupError:
            pass


def end_without_supervisor(app_dir: str, why: str) -> None:
    """Records as CANCELLED an app whose supervisor was killed, killing what is left.

    Done under the app's lock, so the supervisor's watchdog (if it is still there)
    finds the app already ended.
    """
    try:
        with _st.locked(app_dir):
            state = read_state(app_dir)
            if state is None or state.get("state") in _st.TERMINAL:
                return
            sup = state.get("supervisor") or {}
            n = _st.kill_orphaned_app(state)
            now = time.time()
            state["state"] = "CANCELLED"
            state["msg"] = (
                f"cancelled: its supervisor (pid {sup.get('pid')}) {why}, so it was killed; "
                f"{n} process{'es' if n != 1 else ''} of the app left then killed too"
            )
            state["updated"] = state["finished"] = now
            for replicas in state.get("replicas", {}).values():
                for rep in replicas:
                    if rep.get("state") not in _st.TERMINAL:
                        rep["state"] = "CANCELLED"
            _st.write_json_atomic(os.path.join(app_dir, "state.json"), state)
    except FileNotFoundError:
        return


def delete(
    app_id: str, app_dir: str, links: list[str], known: dict[str, Any] | None, force: bool
) -> None:
    """Removes the app's records and logs; does nothing for an unknown app (``known`` None).

    ``known`` is its settled record as the scheduler read it (``{}`` if unreadable), and
    ``links`` where links to it may be.

    Refuses an app that is still running (SchedulerError) unless ``force``, which
    kills it first (SIGKILL, no grace period). An app whose record is unreadable (cut
    short, say) can only be deleted, and is: its processes cannot be told from a
    stranger's, so none is signalled.
    """
    from torchx.schedulers.local.retention import remove_app_files

    if known is None:
        for link in links:  # a link to an app deleted elsewhere
            unlink(link)
        return
    if force:
        kill_stopped_supervisor(known)  # else its lock, if it held it, is never released
    trash = os.path.join(os.path.dirname(os.path.dirname(app_dir)), "trash")
    try:
        with _st.locked(app_dir):
            try:
                state = read_state(app_dir)
            except UnreadableRecord:
                state = _salvage(app_dir)
            if state is None:
                return
            if state.get("state") not in _st.TERMINAL:
                if not force:
                    raise SchedulerError(
                        f"app {app_id} is {state.get('state')}: cancel it first "
                        "(or delete it with force=True)"
                    )
                for who in ("watchdog", "supervisor"):
                    proc = state.get(who) or {}
                    if _st.is_same_process_alive(proc.get("pid"), proc.get("start_time")):
                        try:
                            os.kill(int(proc["pid"]), signal.SIGKILL)
                        except ProcessLookupError:
                            pass
                _st.kill_orphaned_app(state)
            _st.ensure_private_dir(trash)
            doomed = os.path.join(trash, f"{app_id}.{os.urandom(4).hex()}")
            os.rename(app_dir, doomed)  # atomic: readers see the whole app or nothing
    except FileNotFoundError:
        return
    remove_app_files(app_id, doomed, state, links)
