"""The watchdog of a local app's supervisor: a process that outlives it to clean up.

Forked by the supervisor's process before anything else (see
:mod:`torchx.schedulers.local.boot`), it blocks reading a pipe only the supervisor
holds open; EOF comes when the supervisor exits for any reason, ``kill -9`` included.
Then, if the app had not ended, it kills the app's processes and records the app as
FAILED ("supervisor died"), and it kills what is left in the app's cgroup (the
``cgroup`` run option) and removes it. Until then it imports nothing (it would compete
for the CPU with the app's start), and ignores the signals a terminal or ``cancel``
could send it.
"""

from __future__ import annotations

import os
import sys


def watch(app_dir: str, fd: int, supervisor_pid: int) -> None:
    """The watchdog: blocks until the supervisor is gone, then cleans up; never returns.

    ``fd`` is the read end of a pipe only the supervisor holds open: EOF comes when it
    exits for any reason, ``kill -9`` included. Then :func:`after_supervisor` settles the
    app if it had not ended, and removes its cgroup.
    """
    code = 0
    try:
        os.setpgid(0, 0)  # no terminal's signal reaches it
        import _signal  # type: ignore[import-not-found]  # (signal imports enum)

        for sig in (_signal.SIGINT, _signal.SIGHUP, _signal.SIGTERM):
            _signal.signal(sig, _signal.SIG_IGN)
        pidfd = _open_pidfd(supervisor_pid)
        while True:
            try:
                if not os.read(fd, 1):
                    break
            except InterruptedError:
                continue
        after_supervisor(app_dir, supervisor_pid, pidfd)
    except BaseException:
        import traceback

        traceback.print_exc()
        sys.stderr.flush()
        code = 1
    finally:
        os._exit(code)


def _open_pidfd(pid: int) -> int | None:
    """A pidfd of our parent ``pid`` (Linux >= 5.3), None if unavailable or already gone."""
    try:
        fd = os.pidfd_open(pid)
    except (AttributeError, OSError):
        return None
    if os.getppid() != pid:  # it died before we opened it: the fd may be another process's
        os.close(fd)
        return None
    return fd


def after_supervisor(app_dir: str, supervisor_pid: int, pidfd: int | None) -> None:
    """The watchdog's work once the supervisor is gone.

    Settles the app if the supervisor died before it ended, and kills and removes what
    is left in the app's cgroup.
    """
    from torchx.schedulers.local import cgroup
    from torchx.schedulers.local.state import TERMINAL, mark_supervisor_dead, read_json

    # EOF comes when the dying supervisor's files are closed, a moment *before* it has
    # exited: until then /proc says it runs, and settling the record would be refused.
    _wait_exited(supervisor_pid, pidfd)
    try:
        state = read_json(os.path.join(app_dir, "state.json"))
    except (OSError, ValueError):
        state = None
    if state is not None and state.get("state") not in TERMINAL:
        mark_supervisor_dead(
            app_dir, f"supervisor died (pid {supervisor_pid}); its replicas were killed"
        )
    # whatever is still in the app's cgroup escaped every other proof: it dies too
    path = cgroup.path_for(os.path.basename(app_dir))
    if path is not None and os.path.isdir(path):
        cgroup.remove(path)


def _wait_exited(pid: int, pidfd: int | None, timeout: float = 10.0) -> None:
    """Returns once our parent ``pid`` has exited (a zombie or reaped), or after ``timeout``."""
    import select
    import time

    if pidfd is not None:  # readable once the process has exited: an event, not a poll
        select.select([pidfd], [], [], timeout)
        os.close(pidfd)
        return
    deadline = time.monotonic() + timeout
    while os.getppid() == pid and time.monotonic() < deadline:  # re-parented once it exited
        time.sleep(0.005)
