"""The first steps of a local app's supervisor process, before its modules are imported.

``LocalScheduler`` starts ``python -S -c "<answer ok>; ...boot.start()" APP_DIR``. Two
steps of the supervisor's start (see :mod:`torchx.schedulers._local.supervisor`) are
taken here, at once, so that they overlap the imports and reading of the request that
follow instead of coming after them:

1. fork the watchdog (first: a forked child gets only the forking thread, and the
   watchdog must stay outside the app's cgroup): :func:`watch`, which imports nothing
   until the supervisor is gone (it would compete for the CPU with the start);
2. start moving into the app's cgroup in a thread (:func:`cgroup.enter`), which can wait
   tens of milliseconds in the kernel (an RCU grace period when no cgroup migration
   happened lately): measured, that was the largest single delay before the first
   replica started.

Then :func:`torchx.schedulers._local.supervisor.entry` runs the supervisor with both.
Only ``os``, ``sys`` and ``_thread`` are imported before the fork.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


class Early:
    """What :func:`start` did before the supervisor's modules were imported."""

    def __init__(self, watchdog: int, watchdog_fd: int, entered: Any, box: list[Any]) -> None:
        #: pid of the forked watchdog, and the pipe end only the supervisor holds open
        self.watchdog = watchdog
        self.watchdog_fd = watchdog_fd
        #: a lock held until the cgroup move is done; then ``box`` holds its result
        self.entered = entered
        self.box = box

    def cgroup(self) -> str | None:
        """Waits for the move into the app's cgroup; its path, or None (not available)."""
        self.entered.acquire()
        return self.box[0] if self.box else None


def start() -> None:
    """Forks the watchdog, starts entering the cgroup, then runs the supervisor."""
    app_dir = sys.argv[1]
    parent = os.getpid()
    wd_read, wd_write = os.pipe()  # both close-on-exec: replicas never hold them
    watchdog = os.fork()
    if watchdog == 0:
        os.close(wd_write)
        watch(app_dir, wd_read, parent)  # never returns
    os.close(wd_read)

    import _thread

    entered = _thread.allocate_lock()
    entered.acquire()
    box: list[Any] = []

    def enter() -> None:
        try:
            from torchx.schedulers._local import cgroup

            box.append(cgroup.enter(os.path.basename(app_dir)))
        finally:
            entered.release()

    _thread.start_new_thread(enter, ())
    from torchx.schedulers._local.supervisor import entry

    entry(Early(watchdog, wd_write, entered, box))


def watch(app_dir: str, fd: int, supervisor_pid: int) -> None:
    """The watchdog: blocks until the supervisor is gone, then cleans up; never returns.

    ``fd`` is the read end of a pipe only the supervisor holds open: EOF comes when it
    exits for any reason, ``kill -9`` included. Then
    :func:`~torchx.schedulers._local.supervisor.after_supervisor` settles the app if it
    had not ended, and removes its cgroup.
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
        from torchx.schedulers._local.supervisor import after_supervisor

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
