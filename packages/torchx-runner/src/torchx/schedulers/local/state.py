"""The local scheduler's records on disk, and the checks every reader and writer shares.

Layout under the state directory (``$TORCHX_HOME``, else ``$XDG_STATE_HOME/torchx``,
else ``~/.local/state/torchx``; directories 0700, files 0600)::

    apps/<app_id>/request.json      what to run: the replica specs and the AppDef document
                                    (added by the supervisor once replicas run, when the
                                    launcher did not write it)
    apps/<app_id>/appdef.pickle     a cache of the AppDef for fast ``describe`` (JSON wins)
    apps/<app_id>/state.json        app and replica states, supervisor pid, restart counts
    apps/<app_id>/.lock             flock(2) target for read-modify-write of state.json
    apps/<app_id>/supervisor.log    the supervisor's own output (errors only, normally)
    apps/<app_id>/.reserve          room kept for the final state while the app runs (disk full)
    apps/<app_id>/logs/<role>/<k>/{stdout.log,stderr.log,index}  (see ``local.logs``)
    links/<app_id>.json             where an app run with another state_dir keeps its records
    trash/                          apps being deleted (renamed here, then removed)

Every JSON record carries ``apiVersion`` (:data:`API_VERSION`); a reader refuses, with
a message naming the file, a record of another version. Writers replace files
atomically (:func:`torchx.schedulers.helpers.files.write_private_atomic`), so a reader never
sees half a record and
needs no lock; read-modify-write sequences hold the app's flock.

This module is imported by the supervisor, whose start-up time is part of every
``schedule``: it imports only the standard library, and little of it.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import signal
import time
from collections.abc import Iterator
from contextlib import contextmanager

from torchx.schedulers.helpers.files import write_private_atomic

TYPE_CHECKING = False  # typing costs every supervisor start about 8 ms
if TYPE_CHECKING:
    from typing import Any

#: Version of every record this module writes (``request.json``, ``state.json``).
API_VERSION = "torchx.local/v1"

#: Role names become directory names of the logs.
ROLE_NAME_PATTERN = r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,99}"

TERMINAL = frozenset({"SUCCEEDED", "FAILED", "CANCELLED"})

#: errno values that mean "no room to write" (disk full, quota, file size limit).
NO_SPACE = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG})


def default_state_dir() -> str:
    """Where the local scheduler keeps its records unless told otherwise.

    ``$TORCHX_HOME``, else ``$XDG_STATE_HOME/torchx``, else ``~/.local/state/torchx``.
    """
    home = os.environ.get("TORCHX_HOME")
    if home:
        return os.path.abspath(os.path.expanduser(home))
    xdg = os.environ.get("XDG_STATE_HOME")
    if xdg and os.path.isabs(xdg):
        return os.path.join(xdg, "torchx")
    return os.path.join(os.path.expanduser("~"), ".local", "state", "torchx")


def is_valid_role_name(name: object) -> bool:
    """True if a role name can be used as a directory name for its logs."""
    import re

    return isinstance(name, str) and re.fullmatch(ROLE_NAME_PATTERN, name) is not None


def ensure_private_dir(path: str) -> None:
    """Creates ``path`` (and parents) if missing; the leaf is made 0700 when we create it.

    An existing ``path`` must pass :func:`check_owned_dir`: a directory planted by
    another user, or one others may write into, is refused (UnsafeDirError).
    """
    try:
        os.makedirs(path, mode=0o700)
    except FileExistsError:
        check_owned_dir(path)
        return
    os.chmod(path, 0o700)


class UnsafeDirError(OSError):
    """A directory the local scheduler refuses to use: another user could change it.

    An OSError, so every caller that reports a state directory it cannot use reports
    this one too; the message says how to fix it.
    """


def check_owned_dir(path: str, what: str = "local state directory", follow: bool = True) -> None:
    """Refuses, as ssh does, a directory that is not ours or that others may write into.

    Records read from such a directory could have been planted by another user (a
    record names processes to signal and directories to remove), so it must be owned
    by this user and not writable by group or others. ``follow=False`` also refuses a
    symbolic link (used for the levels the scheduler itself creates).
    """
    st = os.stat(path) if follow else os.lstat(path)
    import stat

    if not stat.S_ISDIR(st.st_mode):
        kind = "a symbolic link" if stat.S_ISLNK(st.st_mode) else "not a directory"
        raise UnsafeDirError(
            f"{what} {path} is {kind}: refusing to use it (another user may have put it "
            f"there); remove it, or set TORCHX_HOME to a directory of your own"
        )
    me = os.geteuid()
    if st.st_uid != me:
        raise UnsafeDirError(
            f"{what} {path} is owned by uid {st.st_uid}, not by you (uid {me}): refusing "
            f"to use it; set TORCHX_HOME to a directory of your own (or, if it is yours: "
            f"chown -R {me} {path})"
        )
    if st.st_mode & 0o022:
        raise UnsafeDirError(
            f"{what} {path} is writable by others (mode {st.st_mode & 0o7777:04o}): "
            f"refusing to use it; fix it with: chmod go-w {path}"
        )


def check_state_dir(state_dir: str) -> None:
    """Checks the state directory and each level of it the scheduler creates, if present."""
    check_owned_dir(state_dir)
    for sub in ("apps", "links", "trash"):
        path = os.path.join(state_dir, sub)
        try:
            check_owned_dir(path, follow=False)
        except FileNotFoundError:
            pass


def write_json_atomic(path: str, data: Any) -> None:
    """Writes ``data`` as JSON to ``path`` (0600) so that readers see old or new, never half.

    Without fsync: these records are rewritten at every state change of an app, and a
    machine that loses power loses the app's processes with them anyway.
    """
    write_private_atomic(path, json.dumps(data, separators=(",", ":")), fsync=False)


def write_all(fd: int, data: bytes) -> None:
    """Writes all of ``data`` to ``fd`` (``os.write`` may write less)."""
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


def read_json(path: str) -> Any:
    """The JSON in ``path``; FileNotFoundError if it is not there."""
    with open(path, "rb") as f:
        return json.loads(f.read())


@contextmanager
def locked(app_dir: str) -> Iterator[None]:
    """Holds the app's exclusive flock for a read-modify-write of its records.

    Raises FileNotFoundError when the app directory is gone (deleted meanwhile).
    """
    fd = os.open(os.path.join(app_dir, ".lock"), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


# -------------------------------------------------------------------- processes (Linux /proc)


def proc_stat(pid: int) -> tuple[str, int, int] | None:
    """(state letter, session id, start time in clock ticks) of a process, None if gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            raw = f.read()
    except OSError:
        return None
    fields = raw[raw.rfind(b")") + 2 :].split()
    # after "pid (comm) ": state ppid pgrp session ... starttime is the 20th of these
    return fields[0].decode(), int(fields[3]), int(fields[19])


def proc_start_time(pid: int) -> int | None:
    """The start time (clock ticks since boot) of a live process; None if dead or a zombie."""
    st = proc_stat(pid)
    if st is None or st[0] in ("Z", "X"):
        return None
    return st[2]


def is_same_process_alive(pid: int | None, start_time: int | None) -> bool:
    """True if ``pid`` still runs and is the process that started at ``start_time``.

    The start time guards against pid reuse: a recycled pid belongs to a process that
    started later.
    """
    if not pid:
        return False
    now = proc_start_time(pid)
    return now is not None and (start_time is None or now == start_time)


#: The variable every replica gets (``TORCHX_APP_ID=<app_id>``) and its descendants inherit:
#: how a process that left the replica's session (``setsid``) is still known as the app's.
APP_ID_ENV = b"TORCHX_APP_ID="


def _carries_app_id(pid: int, app_id: str) -> bool:
    """True if the process's environment (from its exec) holds ``TORCHX_APP_ID=<app_id>``."""
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            env = f.read()
    except OSError:  # gone, or another user's
        return False
    return b"\0" + APP_ID_ENV + app_id.encode() + b"\0" in b"\0" + env + b"\0"


def kill_app(
    app_id: str, sessions: dict[int, int], sig: int = signal.SIGKILL, anywhere: bool = False
) -> int:
    """Sends ``sig`` to every live process proven to be the app's; returns how many.

    ``sessions`` maps a replica's session id (= its leader's pid: every replica starts
    a new session) to the leader's start time. A process is proven to be the app's if
    it is such a leader with that very start time, or if its environment carries the
    app's ``TORCHX_APP_ID`` (inherited by everything a replica starts). Being in a
    recorded session is not proof: after a reboot, or once the app's session is gone,
    the same id can name a stranger's session. The environment is read only for
    members of the recorded sessions, unless ``anywhere`` (a supervisor that died: what
    its replicas started with ``setsid`` lives in other sessions).
    """
    count = 0
    me = os.getpid()
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        pid = int(name)
        if pid == me:
            continue
        st = proc_stat(pid)
        if st is None or st[0] in ("Z", "X"):
            continue
        replica = pid in sessions and st[2] == sessions[pid]  # by pid and start time
        if not replica and not (
            app_id and (anywhere or st[1] in sessions) and _carries_app_id(pid, app_id)
        ):
            continue
        try:
            os.kill(pid, sig)
            count += 1
        except OSError as e:  # gone meanwhile, or not ours
            if e.errno not in (errno.ESRCH, errno.EPERM):
                raise
    return count


def kill_orphaned_app(state: dict[str, Any]) -> int:
    """SIGKILLs what is left of an app whose supervisor is gone; returns how many died.

    Every process proven to be the app's (:func:`kill_app`, looking beyond the replicas'
    sessions), and everything in the app's cgroup where it has one (see
    :mod:`torchx.schedulers.local.cgroup`), which is then removed. Never called while
    the supervisor lives: it is in that cgroup.
    """
    from torchx.schedulers.local import cgroup

    app_id = str(state.get("app_id", ""))
    path = state.get("cgroup")
    path = path if path and cgroup.is_app_cgroup(path, app_id) else None
    inside = len(cgroup.members(path)) if path else 0  # the app's processes, all of them
    count = kill_app(app_id, replica_sessions(state), anywhere=True)
    if path:
        cgroup.remove(path, timeout=1.0)
    return max(count, inside)


def is_stopped(pid: int) -> bool:
    """True if the process is stopped (``kill -STOP``) or stopped by a tracer."""
    st = proc_stat(pid)
    return st is not None and st[0] in ("T", "t")


def replica_sessions(state: dict[str, Any]) -> dict[int, int]:
    """Session id -> leader start time of every replica attempt recorded in ``state``."""
    out: dict[int, int] = {}
    for replicas in state.get("replicas", {}).values():
        for rep in replicas:
            for sid, start in rep.get("sessions", []):
                out[int(sid)] = int(start)
    return out


def mark_supervisor_dead(app_dir: str, reason: str) -> dict[str, Any] | None:
    """Kills what is left of an app whose supervisor died, and records it as FAILED.

    Called by the supervisor's watchdog and by any reader that finds the supervisor
    gone while the record still says the app runs. Idempotent; returns the new state
    (None if the app has been deleted meanwhile).
    """
    try:
        with locked(app_dir):
            path = os.path.join(app_dir, "state.json")
            state: dict[str, Any] = read_json(path)
            if state.get("state") in TERMINAL:
                return state
            sup = state.get("supervisor") or {}
            if is_same_process_alive(sup.get("pid"), sup.get("start_time")):
                return state  # not dead after all
            kill_orphaned_app(state)
            now = time.time()
            state["state"] = "FAILED"
            state["msg"] = reason
            state["updated"] = now
            state["finished"] = now
            for replicas in state.get("replicas", {}).values():
                for rep in replicas:
                    if rep.get("state") not in TERMINAL:
                        rep["state"] = "FAILED"
            try:
                write_json_atomic(path, state)
            except OSError as e:
                if e.errno not in NO_SPACE:
                    raise
                # a full disk: the room the supervisor kept for its final state is ours
                try:
                    os.unlink(os.path.join(app_dir, ".reserve"))
                    write_json_atomic(path, state)
                except OSError:
                    state["msg"] += " (not recorded: the disk is full)"
            return state
    except FileNotFoundError:
        return None
