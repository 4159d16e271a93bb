"""The detached per-app supervisor of the local scheduler (Linux).

``LocalScheduler.schedule`` writes ``request.json`` into a new app directory, starts
``python -c "<write ok to the ready pipe>; ...supervisor.entry()" APP_DIR`` in a new
session and records the new process's pid and start time in ``state.json``. The
first statement the interpreter runs writes ``ok`` to the ready pipe, which releases
``schedule``; everything else happens off the launcher's clock. The supervisor then,
in order (the first step, and the start of the third, are taken by
:mod:`~torchx.schedulers.local.boot` before this module is imported):

1. forks a *watchdog* that blocks reading a pipe only the supervisor holds open. When
   the supervisor exits for any reason, including ``kill -9``, the read returns EOF; if
   the app is not finished by then, the watchdog kills every process of the app (see
   :func:`~torchx.schedulers.local.state.kill_app`) and records the app as FAILED
   ("supervisor died"). Readers check too: a record that says RUNNING while its
   supervisor's pid is gone (or reused, told apart by the start time in
   ``/proc/<pid>/stat``) is settled the same way on the spot;
2. makes itself a child subreaper (``PR_SET_CHILD_SUBREAPER``), so processes orphaned
   by a replica are re-parented to it rather than to init;
3. with the ``cgroup`` run option, moves itself into a new cgroup of the app, where it
   may (see :mod:`~torchx.schedulers.local.cgroup`: the replicas are born in it, and
   when the supervisor has exited the watchdog kills what is left in it and removes
   it); then makes each replica's log directory and files in a thread, ahead of each
   replica's start (:meth:`Supervisor.start_preparing`), and records its own and the watchdog's pid and start time and the cgroup in
   ``state.json`` (the launcher recorded the supervisor's already, or will);
4. starts each replica in its own session and process group, through ``subprocess``'s
   fast ``vfork`` path (see :meth:`Supervisor.spawn`; no parent-death signal: the
   watchdog, or the next reader, kills the replicas of a dead supervisor), stdout and
   stderr written by the replica straight into ``stdout.log`` and ``stderr.log`` (no
   pipe: nothing is lost however fast or briefly a replica prints, and the supervisor
   never slows a replica down). Its start time is read once the replicas are started;
5. loops until the app is finished: it wakes on SIGCHLD and SIGTERM (through
   ``signal.set_wakeup_fd``, no polling of children) and at least every
   :data:`TICK_MAX` seconds to note in each replica's log ``index`` which stream grew
   when (:class:`~torchx.schedulers.local.logs.IndexWriter`: file sizes only, no data
   is copied, so any burst is indexed at once). Readers build the combined view and
   the ``since``/``until`` windows from it. A replica's output is indexed to its end
   before the app's final state is recorded.

Disk full (:mod:`~torchx.schedulers.local.diskspace`): the supervisor keeps ``RESERVE`` bytes allocated in ``.reserve`` while the
app runs. When a replica fails, when indexing its output fails with ENOSPC, and every
``SPACE_CHECK`` seconds while a replica prints, it looks at the free space of the
filesystems the app writes to (and at the log files against ``ulimit -f``). A full one
fails the app ("disk full: ...", or "file size limit reached: ..."): what the replicas
print can no longer be kept. The replicas are stopped, and the reserve is given back so
that the final state can be written. An app that prints nothing is left running: it
loses nothing, and can still be followed and cancelled.

Retry policies: ``REPLICA`` restarts the failed replica alone, ``ROLE`` stops and
restarts every replica of its role, ``APPLICATION`` every replica of the app; each
role may trigger at most ``max_retries`` restarts. SIGTERM (``cancel``) sends SIGTERM
to each replica's process group and SIGKILL after the grace period. When the app ends,
whatever is left in the replicas' sessions (background grandchildren) is killed, and
so is anything still below the supervisor: as child subreaper it inherits what escaped
a replica's session (``setsid``, a double fork). Only processes proven to be the app's
are signalled (see :func:`torchx.schedulers.local.state.kill_app`).

Only the standard library is imported here: this process starts for every app. The one
exception comes after the replicas are started: if the launcher left the AppDef's JSON
record to the supervisor (see :func:`torchx.schedulers.local.writing.write_records`), it imports
torchx-specs' serializer to write it.
"""

from __future__ import annotations

import os
import select
import signal
import sys
import time

from torchx.schedulers.local import cgroup
from torchx.schedulers.local.diskspace import SPACE_CHECK, DiskSpace, write_state_file
from torchx.schedulers.local.replicas import Replica, ReplicaProcesses, Role
from torchx.schedulers.local.state import (
    NO_SPACE,
    TERMINAL,
    kill_app,
    locked,
    proc_start_time,
    read_json,
    replica_sessions,
    write_json_atomic,
)
from torchx.schedulers.local.upkeep import apply_retention, complete_request

TYPE_CHECKING = False  # typing costs every supervisor start about 8 ms
if TYPE_CHECKING:
    from typing import Any

#: Shortest and longest sleep between two passes over the log files (seconds).
TICK_MIN = 0.02
TICK_MAX = 0.2
#: An app still running this many seconds after its launch gets its AppDef's JSON record
#: then (at a quiet moment); a shorter one right after its final state.
RECORD_DELAY = 5.0

PR_SET_CHILD_SUBREAPER = 36

_libc: Any = None


def _prctl(option: int, arg: int) -> None:
    global _libc
    if _libc is None:
        import ctypes

        _libc = ctypes.CDLL(None, use_errno=True)
    _libc.prctl(option, arg, 0, 0, 0)


class Early:
    """What :func:`~torchx.schedulers.local.boot.start` did before this module was imported."""

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


class Supervisor(ReplicaProcesses, DiskSpace):
    """Runs one app's replicas to completion; see the module docstring.

    Its replicas' processes are :class:`~torchx.schedulers.local.replicas.ReplicaProcesses`'
    job, a full disk :class:`~torchx.schedulers.local.diskspace.DiskSpace`'s; here are the
    main loop, the retry policy and the app's state record.
    """

    def __init__(self, app_dir: str) -> None:
        self.app_dir = app_dir
        self.state_path = os.path.join(app_dir, "state.json")
        self.request = read_json(os.path.join(app_dir, "request.json"))
        # the launcher wrote the AppDef's JSON record itself, or left it to us
        self.request_complete = "app" in self.request
        self.grace: float = float(self.request.get("grace_period", 10.0))
        # before the log directories are made: they and every file in them are private
        self.umask = os.umask(0o077)
        self.roles = [Role(r) for r in self.request["roles"]]
        self.replicas = [rep for role in self.roles for rep in role.replicas]
        self.by_pid: dict[int, Replica] = {}
        self.stopping: set[Replica] = set()
        self.stop_deadline: float | None = None
        self.to_relaunch: list[Replica] = []
        self.final: str | None = None
        self.msg = ""
        self.num_restarts = 0
        self.cancel_requested = False
        self.watchdog = 0
        self.pid = os.getpid()
        self.dirty = True
        self.reserve_path = os.path.join(app_dir, ".reserve")
        # the filesystems the app writes to: its records, and each replica's logs
        self.watched: list[str] = list(
            dict.fromkeys([app_dir, *(str(rep.log_dir) for rep in self.replicas)])
        )
        self.space_checked = 0.0
        self.no_space = False
        self.base_env: dict[str, str] | None = None  # os.environ, copied once
        self.fsize_limit: int | None = None  # RLIMIT_FSIZE, read when first needed (0: none)
        self.unstamped: list[Replica] = []  # started, start time not read yet
        self.cgroup: str | None = None  # the app's cgroup, where available (see cgroup)
        self.prepare_error: OSError | None = None  # why a replica's files could not be made
        self.prepare_failed: Replica | None = None  # ... and whose (the thread runs ahead)

    # -- records ----------------------------------------------------------------------------

    def write_state(self, app_state: str, final: bool = False, **extra: Any) -> None:
        self.stamp_sessions()
        with locked(self.app_dir):
            state: dict[str, Any] = read_json(self.state_path)
            if state.get("state") in TERMINAL:  # recorded by a reader that found us dead
                raise SystemExit(0)
            if state.get("cancel_requested"):  # maybe before our SIGTERM handler existed
                self.cancel_requested = True
            state.update(extra)
            state["state"] = app_state
            state["msg"] = self.msg
            state["num_restarts"] = self.num_restarts
            state["updated"] = time.time()
            state["replicas"] = {
                role.name: [rep.record() for rep in role.replicas] for role in self.roles
            }
            if final:
                write_state_file(self.app_dir, state)
            else:
                try:
                    write_json_atomic(self.state_path, state)
                except OSError as e:
                    if e.errno not in NO_SPACE:
                        raise
                    return  # still dirty: tried again, and the final state has .reserve
        self.dirty = False

    def pump(self, rep: Replica, now: float, final: bool = False) -> bool:
        """Indexes the replica's new output (see IndexWriter); True if it printed."""
        try:
            if rep.index.pump(now, final):
                rep.printed_at = now
                return True
            return False
        except OSError as e:
            if e.errno not in NO_SPACE:
                raise
            self.on_no_space(rep.log_dir, e)
            return False

    def complete_request(self) -> None:
        """Adds the AppDef's JSON document to request.json if the launcher left it to us.

        Written at a quiet moment of the supervisor's loop once the app has run
        :data:`RECORD_DELAY` seconds, or right after the final state of an app that ended
        sooner: neither the replicas' start-up nor a short app's end shares the CPU with
        it. Tried once (see :func:`~torchx.schedulers.local.upkeep.complete_request`).
        """
        if self.request_complete:
            return
        self.request_complete = True
        self.request = complete_request(self.app_dir, self.request)

    # -- retry policy ----------------------------------------------------------------------

    def on_exit(self, rep: Replica, code: int) -> None:
        stopped = rep in self.stopping
        rep.pid = None
        rep.exit_code = code
        rep.finished = time.time()
        self.dirty = True
        self.pump(rep, rep.finished, final=True)
        if code != 0 and self.final is None and not stopped:
            self.check_space([rep])  # a replica that failed to write its output, say
        if stopped:
            self.stopping.discard(rep)
            if not self.stopping:
                self.stop_deadline = None
            rep.state = "CANCELLED" if self.final else "PENDING"
            return
        if code == 0:
            rep.state = "SUCCEEDED"
            return
        rep.state = "FAILED"
        if self.final:
            return
        role = rep.role
        if role.retries >= role.max_retries:
            self.msg = f"replica {role.name}/{rep.id} exited with code {code}" + (
                f" (after {role.retries} restarts of role {role.name})" if role.retries else ""
            )
            if rep.error:
                self.msg += f": {rep.error}"
            self.final = "FAILED"
            self.to_relaunch = []
            self.begin_stop(self.replicas)
            return
        role.retries += 1
        self.num_restarts += 1
        if role.policy == "REPLICA":
            group = [rep]
        elif role.policy == "ROLE":
            group = role.replicas
        else:
            group = self.replicas
        for other in group:
            if other not in self.to_relaunch:
                self.to_relaunch.append(other)
        self.begin_stop([r for r in group if r is not rep])

    def relaunch_pending(self) -> None:
        if self.stopping or self.final:
            return
        pending, self.to_relaunch = self.to_relaunch, []
        for rep in pending:
            if not rep.running:
                rep.restarts += 1
                rep.state = "PENDING"
                self.launch(rep)

    # -- main loop --------------------------------------------------------------------------

    def run(self, early: Early | None = None) -> int:
        signal.signal(signal.SIGTERM, self._on_term)
        signal.signal(signal.SIGINT, self._on_term)
        signal.signal(signal.SIGHUP, _ignore)  # caught, not SIG_IGN: replicas get the default
        _catch_inherited_ignores()

        if early is None:  # run without boot.start (python -m): the same, in turn
            wd_read, wd_write = os.pipe()  # both close-on-exec: replicas never hold them
            watchdog = os.fork()  # first: a forked child gets only the forking thread
            if watchdog == 0:
                os.close(wd_write)
                from torchx.schedulers.local.watchdog import watch

                watch(self.app_dir, wd_read, self.pid)
            os.close(wd_read)
            # after the fork, so that the watchdog stays outside to kill what is inside
            if self.request.get("cgroup"):
                self.cgroup = cgroup.enter(str(self.request.get("app_id", "")))
        else:
            watchdog, wd_write = early.watchdog, early.watchdog_fd
        self.watchdog = watchdog
        _prctl(PR_SET_CHILD_SUBREAPER, 1)
        prepared = self.start_preparing()

        wake_r, wake_w = os.pipe()
        os.set_blocking(wake_w, False)
        os.set_blocking(wake_r, False)
        signal.set_wakeup_fd(wake_w)
        signal.signal(signal.SIGCHLD, lambda *_: None)
        if early is not None:
            self.cgroup = early.cgroup()  # done moving: the replicas are born in it
        # one record of both (each write of state.json creates a file: on some filesystems
        # that costs a millisecond, and nothing else delays the first replica)
        self.write_state(
            "PENDING",
            supervisor={"pid": self.pid, "start_time": proc_start_time(self.pid)},
            watchdog={"pid": watchdog, "start_time": proc_start_time(watchdog)},
            cgroup=self.cgroup,
        )

        for rep, ready in zip(self.replicas, prepared):
            ready.acquire()  # its files are there
            if self.prepare_error is not None:
                self.on_prepare_error(self.prepare_failed or rep, self.prepare_error)
                break
            if self.final is None and not self.cancel_requested:
                self.launch(rep)
        self.make_reserve()  # after the replicas started: it matters only for the final state
        app_state = "RUNNING"
        if any(rep.running for rep in self.replicas):
            self.write_state(app_state)
        tick = TICK_MIN
        record_at = time.monotonic() + RECORD_DELAY
        while True:
            for rep, code in self.reap():
                self.on_exit(rep, code)
            if self.cancel_requested and self.final != "CANCELLED":
                if self.final is None:
                    self.msg = "cancelled"
                self.final = self.final or "CANCELLED"
                self.to_relaunch = []
                self.begin_stop(self.replicas)
            if self.stop_deadline is not None and time.monotonic() >= self.stop_deadline:
                for rep in self.stopping:
                    self.signal_group(rep, signal.SIGKILL)
                self.stop_deadline = time.monotonic() + self.grace  # SIGKILL again if needed
            self.relaunch_pending()
            done = not any(rep.running for rep in self.replicas) and (
                self.final or not self.to_relaunch
            )
            if done:
                break
            if self.dirty:  # first, so that new sessions are on record as soon as possible
                self.write_state(app_state)
            now = time.time()
            printed = False
            for rep in self.replicas:
                if rep.running and self.pump(rep, now):
                    printed = True
            if now - self.space_checked >= SPACE_CHECK and self.final is None:
                # the replicas that printed lately (an app that prints nothing loses nothing)
                recent = [
                    rep
                    for rep in self.replicas
                    if rep.running and now - rep.printed_at <= 2 * SPACE_CHECK + TICK_MAX
                ]
                self.space_checked = now
                if recent and self.check_space(recent):
                    continue
            tick = TICK_MIN if printed else min(tick * 2, TICK_MAX)
            timeout = tick
            if self.stop_deadline is not None:
                timeout = max(0.0, min(timeout, self.stop_deadline - time.monotonic()))
            try:
                woken, _, _ = select.select([wake_r], [], [], timeout)
                if woken:
                    os.read(wake_r, 4096)
                elif not self.request_complete and time.monotonic() >= record_at:
                    # a quiet moment of an app that has run a while: the JSON record
                    # (the serializer's imports, a few ms of CPU) is written now,
                    # neither while the replicas start up nor between a short app's
                    # exit and its final state
                    self.complete_request()
            except (BlockingIOError, InterruptedError):
                pass

        final = self.final or (
            "SUCCEEDED" if all(r.state == "SUCCEEDED" for r in self.replicas) else "FAILED"
        )
        # background processes a replica left behind die with the app
        sessions = {sid: start for rep in self.replicas for sid, start in rep.sessions}
        kill_app(str(self.request.get("app_id", "")), sessions)
        self.kill_descendants()
        for rep in self.replicas:  # after the kill: what the background wrote is indexed too
            try:
                if rep.started is not None:  # else its log files may not exist (on_prepare_error)
                    rep.index.pump(time.time(), final=True)
            except OSError as e:  # readers deliver unindexed bytes last: nothing is lost
                if e.errno not in NO_SPACE:
                    raise
            if rep.state not in TERMINAL:  # never started, or waiting for a restart
                rep.state = "CANCELLED"
        self.write_state(final, final=True, finished=time.time())
        self.complete_request()  # an app that ended before a quiet moment: after its state
        apply_retention(self.app_dir, self.request)
        os.close(wd_write)
        return 0

    def _on_term(self, signum: int, frame: object) -> None:
        self.cancel_requested = True


def _catch_inherited_ignores() -> None:
    """Catches (with a no-op) every signal the launcher left ignored, so replicas get the default.

    An ignored signal stays ignored across exec: ``torchx run`` from a script's background
    job (SIGINT and SIGQUIT ignored by the shell) or under ``nohup`` would hand that to
    every replica, which must start like a fresh process. A caught one is reset by exec.
    SIGPIPE and SIGXFSZ are Python's own ignores, which the supervisor keeps (writes fail
    with EPIPE and EFBIG instead) and ``subprocess`` resets in each replica.
    """
    keep = {signal.SIGKILL, signal.SIGSTOP, signal.SIGPIPE, signal.SIGXFSZ}
    for sig in signal.valid_signals():
        if sig in keep:
            continue
        try:
            if signal.getsignal(sig) is signal.SIG_IGN:
                signal.signal(sig, _ignore)
        except (OSError, ValueError):  # one the kernel or Python will not let us catch
            pass


def _ignore(signum: int, frame: object) -> None:
    """A handler that does nothing: unlike SIG_IGN, exec resets it for the replicas."""


def main(argv: list[str], early: Early | None = None) -> int:
    return Supervisor(argv[1]).run(early)


def entry(early: Early | None = None) -> None:
    """Runs :func:`main` (after :func:`~torchx.schedulers.local.boot.start`, or as
    ``python -m``), recording a crash as the app's failure."""
    try:
        sys.exit(main(sys.argv, early))
    except SystemExit:
        raise
    except BaseException as e:
        # Recorded so that status says why, instead of only "supervisor died".
        import traceback

        traceback.print_exc()
        app_dir = sys.argv[1] if len(sys.argv) > 1 else ""
        if app_dir and os.path.isdir(app_dir):
            try:
                with locked(app_dir):
                    path = os.path.join(app_dir, "state.json")
                    st = read_json(path)
                    if st.get("state") not in TERMINAL:
                        kill_app(str(st.get("app_id", "")), replica_sessions(st), anywhere=True)
                        st["state"] = "FAILED"
                        st["msg"] = f"supervisor error: {type(e).__name__}: {e}"
                        if isinstance(e, OSError) and e.errno in NO_SPACE:
                            st["msg"] = f"disk full: {e}"
                        st["updated"] = time.time()
                        write_state_file(app_dir, st)
            except Exception:
                pass
        sys.exit(1)


if __name__ == "__main__":
    entry()
