"""Launching a local app: its records written, then its supervisor started.

:func:`schedule` is :meth:`LocalScheduler.schedule
<torchx.schedulers.local.scheduler.LocalScheduler.schedule>`: it makes the app's
directory, writes its records (:mod:`torchx.schedulers.local.writing`), starts one
detached supervisor (:mod:`torchx.schedulers.local.supervisor`, or the one started
ahead by :mod:`torchx.schedulers.local.warmup`) and returns once that supervisor's
interpreter runs. A launch that fails half-way removes what it created.
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Any

from torchx.schedulers.contract.errors import SchedulerError
from torchx.schedulers.local import state as _st
from torchx.schedulers.local.records import unlink
from torchx.schedulers.local.writing import make_log_dir, write_link, write_records

if TYPE_CHECKING:
    from torchx.schedulers.local.request import LocalRequest
    from torchx.specs import AppDef

#: How long ``schedule`` waits for the supervisor to report in before giving up (s).
READY_TIMEOUT = 30.0


def _same_dir(a: str, b: str) -> bool:
    return os.path.normpath(os.path.abspath(a)) == os.path.normpath(os.path.abspath(b))


def schedule(request: LocalRequest, app: AppDef, scheduler: str = "local") -> None:
    """Writes the app's records and starts its supervisor; returns once it runs.

    ``scheduler`` is the name the app was submitted under, kept in its record (see
    :func:`~torchx.schedulers.local.writing.write_records`).

    The app id is checked by the caller. Raises :class:`SchedulerError` (one line) for
    a state or log directory that cannot be used, or a supervisor that did not start,
    and :class:`~torchx.specs.SpecError` for a role whose program is on no ``PATH``
    directory (:mod:`torchx.schedulers.local.programs`).
    """
    if not sys.platform.startswith("linux"):
        raise SchedulerError(
            f"the local scheduler runs apps on Linux only (it relies on /proc, sessions "
            f"and prctl), not on {sys.platform}; a dryrun works anywhere, or run the "
            "app in a container scheduler"
        )
    from torchx.schedulers.local.programs import check_program

    for role in request.roles:  # before anything is written or started
        rep = role.replicas[0]  # the same program for every replica of the role
        check_program(f"role {role.name!r}", rep.entrypoint, rep.args, rep.env, rep.cwd)
    app_id = request.app_id
    apps = os.path.join(request.state_dir, "apps")
    try:
        _st.ensure_private_dir(request.state_dir)
        _st.ensure_private_dir(apps)
    except _st.UnsafeDirError as e:
        raise SchedulerError(str(e)) from None
    except OSError as e:
        raise SchedulerError(
            f"cannot create the local state directory {apps}: {e.strerror or e}; "
            "set TORCHX_HOME (or the state_dir run option) to a writable directory"
        ) from None
    app_dir = os.path.join(apps, app_id)
    try:
        os.mkdir(app_dir, 0o700)
    except FileExistsError:
        raise SchedulerError(
            f"app {app_id} was already scheduled from this dryrun; dry-run again for a new id"
        ) from None
    link = None
    own_log_dir = False
    try:
        own_log_dir = make_log_dir(request.log_dir, app_dir)
        write_records(app_dir, request, app, scheduler)
        if not _same_dir(request.state_dir, _st.default_state_dir()):
            link = write_link(app_id, request.state_dir)
        _start_supervisor(app_dir, cgroup=request.cgroup)
    except BaseException:
        # a submit that fails half-way removes what it created (the supervisor, if
        # started, was killed by _start_supervisor before it could start a replica)
        import shutil  # here, not at the top: every torchx run imports this module

        shutil.rmtree(app_dir, ignore_errors=True)
        if own_log_dir and not request.log_dir.startswith(app_dir + os.sep):
            shutil.rmtree(request.log_dir, ignore_errors=True)
        if link is not None:
            unlink(link)
        raise


def _start_supervisor(app_dir: str, cgroup: bool = False) -> Any:
    """Starts the app's supervisor (or hands the app to a warm one); its Popen once it runs."""
    import subprocess

    from torchx.schedulers.local import warmup

    path = warmup.supervisor_path()
    args = [app_dir, *(["--cgroup"] if cgroup else [])]
    log_fd = os.open(
        os.path.join(app_dir, "supervisor.log"),
        os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC,
        0o600,
    )
    warm = warmup.take(path)  # started ahead by torchx run (see warmup)
    if warm is not None:
        os.close(log_fd)  # made here, private; the warm supervisor opens it itself
        proc, read_fd = warm.popen, warm.ready_fd
        if not warmup.hand_over(warm, args):  # it died: a new one is started
            os.close(read_fd)
            return _start_supervisor(app_dir, cgroup)
    else:
        read_fd, write_fd = os.pipe()
        # The first thing the supervisor does is answer on the pipe: schedule() waits
        # for the interpreter to run our code, not for its imports (they cost more than
        # the rest of schedule). Its pid is recorded here, from Popen.
        # SIGTERM (cancel) is ignored until the supervisor installs its handler; a
        # cancel that comes before is not lost: it is also recorded in state.json.
        code = (
            # _signal, not signal: the latter imports enum, milliseconds before "ok"
            "import os, sys, _signal; _signal.signal(_signal.SIGTERM, _signal.SIG_IGN); "
            f"os.write({write_fd}, b'ok'); os.close({write_fd}); "
            f"sys.path[:] = {path!r}; "
            "from torchx.schedulers.local.boot import start; start()"
        )
        try:
            proc = subprocess.Popen(
                [sys.executable, "-S", "-c", code, *args],
                cwd=app_dir,
                stdin=subprocess.DEVNULL,
                stdout=log_fd,
                stderr=log_fd,
                pass_fds=(write_fd,),
                start_new_session=True,
            )
        finally:
            os.close(write_fd)
            os.close(log_fd)
    try:
        answer, ready = _await_supervisor(app_dir, proc, read_fd)
    except BaseException:
        proc.kill()
        proc.wait()
        raise
    if answer.startswith(b"ok"):
        return proc
    proc.kill()
    proc.wait()
    try:
        with open(os.path.join(app_dir, "supervisor.log"), errors="replace") as f:
            tail = f.read()[-2000:].strip()
    except OSError:
        tail = ""
    why = f"did not report in within {READY_TIMEOUT:g} s" if not ready else "exited at start"
    raise SchedulerError(
        f"the local supervisor for {os.path.basename(app_dir)} {why}"
        + (f":\n{tail}" if tail else "")
    )


def _await_supervisor(app_dir: str, proc: Any, read_fd: int) -> tuple[bytes, bool]:
    """Waits for the supervisor's "ok" (EOF if it died first), then records its pid.

    The pid is recorded after the wait: reading ``/proc/<pid>/stat`` (its start time,
    which tells it apart from a later process with the same pid) blocks while the
    process is still in ``execve``.
    """
    import select

    try:
        # An event, not a poll: "ok" once the supervisor runs; EOF if it died first.
        ready, _, _ = select.select([read_fd], [], [], READY_TIMEOUT)
        answer = os.read(read_fd, 16) if ready else b""
    finally:
        os.close(read_fd)
    if answer.startswith(b"ok"):
        with _st.locked(app_dir):
            state_path = os.path.join(app_dir, "state.json")
            state = _st.read_json(state_path)
            if state.get("supervisor") is None:  # else it recorded itself already
                state["supervisor"] = {
                    "pid": proc.pid,
                    "start_time": _st.proc_start_time(proc.pid),
                }
                _st.write_json_atomic(state_path, state)
    return answer, bool(ready)
