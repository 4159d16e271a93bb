"""The detached per-app supervisor of the local scheduler (Linux).

``LocalScheduler.schedule`` writes ``request.json`` into a new app directory, starts
``python -c "<write ok to the ready pipe>; ...supervisor.entry()" APP_DIR`` in a new
session and records the new process's pid and start time in ``state.json``. The
first statement the interpreter runs writes ``ok`` to the ready pipe, which releases
``schedule``; everything else happens off the launcher's clock. The supervisor then,
in order (the first step, and the start of the third, are taken by
:mod:`~torchx.schedulers._local.boot` before this module is imported):

1. forks a *watchdog* that blocks reading a pipe only the supervisor holds open. When
   the supervisor exits for any reason, including ``kill -9``, the read returns EOF; if
   the app is not finished by then, the watchdog kills every process of the app (see
   :func:`~torchx.schedulers._local.state.kill_app`) and records the app as FAILED
   ("supervisor died"). Readers check too: a record that says RUNNING while its
   supervisor's pid is gone (or reused, told apart by the start time in
   ``/proc/<pid>/stat``) is settled the same way on the spot;
2. makes itself a child subreaper (``PR_SET_CHILD_SUBREAPER``), so processes orphaned
   by a replica are re-parented to it rather than to init;
3. with the ``cgroup`` run option, moves itself into a new cgroup of the app, where it
   may (see :mod:`~torchx.schedulers._local.cgroup`: the replicas are born in it, and
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
   when (:class:`~torchx.schedulers._local.logs.IndexWriter`: file sizes only, no data
   is copied, so any burst is indexed at once). Readers build the combined view and
   the ``since``/``until`` windows from it. A replica's output is indexed to its end
   before the app's final state is recorded.

Disk full: the supervisor keeps :data:`RESERVE` bytes allocated in ``.reserve`` while the
app runs. When a replica fails, when indexing its output fails with ENOSPC, and every
:data:`SPACE_CHECK` seconds while a replica prints, it looks at the free space of the
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
are signalled (see :func:`torchx.schedulers._local.state.kill_app`).

Only the standard library is imported here: this process starts for every app. The one
exception comes after the replicas are started: if the launcher left the AppDef's JSON
record to the supervisor (see ``LocalScheduler._write_records``), it imports
torchx-specs' serializer (cattrs) to write it.
"""

from __future__ import annotations

import errno
import os
import select
import signal
import sys
import time

from torchx.schedulers._local import cgroup
from torchx.schedulers._local.logs import IndexWriter
from torchx.schedulers._local.state import (
    NO_SPACE,
    TERMINAL,
    kill_app,
    locked,
    proc_start_time,
    proc_stat,
    read_json,
    replica_sessions,
    write_json_atomic,
)

TYPE_CHECKING = False  # typing costs every supervisor start about 8 ms
if TYPE_CHECKING:
    from typing import Any

#: Shortest and longest sleep between two passes over the log files (seconds).
TICK_MIN = 0.02
TICK_MAX = 0.2
#: An app still running this many seconds after its launch gets its AppDef's JSON record
#: then (at a quiet moment); a shorter one right after its final state.
RECORD_DELAY = 5.0
#: Seconds between two looks at the free space of the filesystems the app writes to.
SPACE_CHECK = 0.2
#: Bytes kept allocated in ``.reserve`` while the app runs (plus some per replica), given
#: back when the disk is full so that the final state can still be written.
RESERVE = 64 << 10
#: A filesystem with less free space than this is full (what is left comes and goes as
#: records are replaced, and is no room for logs anyway).
FULL_BELOW = 64 << 10
RESERVE_PER_REPLICA = 512

#: The bin directory of the Python that runs the supervisor (the launcher's).
_BINDIR = os.path.dirname(sys.executable) if sys.executable else ""

PR_SET_CHILD_SUBREAPER = 36

_libc: Any = None


def _prctl(option: int, arg: int) -> None:
    global _libc
    if _libc is None:
        import ctypes

        _libc = ctypes.CDLL(None, use_errno=True)
    _libc.prctl(option, arg, 0, 0, 0)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


class _Replica:
    def __init__(self, role: _Role, spec: dict[str, Any]) -> None:
        self.role = role
        self.id: int = spec["id"]
        self.spec = spec
        self.state = "PENDING"
        self.exit_code: int | None = None
        self.pid: int | None = None
        self.restarts = 0
        self.sessions: list[list[int]] = []
        self.started: float | None = None
        self.finished: float | None = None
        self.error = ""
        self.log_dir = spec["log_dir"]
        # the directory, stdout.log and stderr.log are made by Supervisor.start_preparing
        # (readers wait for them)
        self.out_path = os.path.join(self.log_dir, "stdout.log")
        self.err_path = os.path.join(self.log_dir, "stderr.log")
        self.index = IndexWriter(self.log_dir, time.time())
        self.printed_at = 0.0  # when its output was last seen growing

    @property
    def running(self) -> bool:
        return self.pid is not None

    def record(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "id": self.id,
            "state": self.state,
            "exit_code": self.exit_code,
            "pid": self.pid,
            "restarts": self.restarts,
            "sessions": self.sessions,
            "started": self.started,
            "finished": self.finished,
            "log_dir": self.log_dir,
        }
        if self.error:
            out["error"] = self.error
        return out


class _Role:
    def __init__(self, spec: dict[str, Any]) -> None:
        self.name: str = spec["name"]
        self.policy: str = spec["retry_policy"]
        self.max_retries: int = spec["max_retries"]
        self.retries = 0
        self.replicas = [_Replica(self, r) for r in spec["replicas"]]


class Early:
    """What :func:`~torchx.schedulers._local.boot.start` did before this module was imported."""

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


class Supervisor:
    """Runs one app's replicas to completion; see the module docstring."""

    def __init__(self, app_dir: str) -> None:
        self.app_dir = app_dir
        self.state_path = os.path.join(app_dir, "state.json")
        self.request = read_json(os.path.join(app_dir, "request.json"))
        # the launcher wrote the AppDef's JSON record itself, or left it to us
        self.request_complete = "app" in self.request
        self.grace: float = float(self.request.get("grace_period", 10.0))
        # before the log directories are made: they and every file in them are private
        self.umask = os.umask(0o077)
        self.roles = [_Role(r) for r in self.request["roles"]]
        self.replicas = [rep for role in self.roles for rep in role.replicas]
        self.by_pid: dict[int, _Replica] = {}
        self.stopping: set[_Replica] = set()
        self.stop_deadline: float | None = None
        self.to_relaunch: list[_Replica] = []
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
        self.unstamped: list[_Replica] = []  # started, start time not read yet
        self.cgroup: str | None = None  # the app's cgroup, where available (see cgroup)
        self.prepare_error: OSError | None = None  # why a replica's files could not be made
        self.prepare_failed: _Replica | None = None  # ... and whose (the thread runs ahead)

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

    # -- disk space -------------------------------------------------------------------------

    def make_reserve(self) -> None:
        """Allocates ``.reserve``, the room the final state is written in if the disk fills."""
        size = RESERVE + RESERVE_PER_REPLICA * len(self.replicas)
        try:
            fd = os.open(self.reserve_path, os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, 0o600)
            try:
                _write_all(fd, bytes(size))
            finally:
                os.close(fd)
        except OSError as e:
            if e.errno not in NO_SPACE:
                raise
            self.on_no_space(self.app_dir, e)

    def full_path(self) -> str | None:
        """A directory the app writes to whose filesystem is full (< :data:`FULL_BELOW` free)."""
        root = os.geteuid() == 0  # root may use the blocks reserved for it
        for path in self.watched:
            try:
                st = os.statvfs(path)
            except OSError:
                continue
            if (st.f_bfree if root else st.f_bavail) * st.f_frsize < FULL_BELOW:
                return path
        return None

    def check_space(self, reps: list[_Replica]) -> bool:
        """Fails the app if a filesystem it writes to is full, or a log reached ``ulimit -f``."""
        full = self.full_path()
        if full is not None:
            self.on_no_space(full)
            return True
        if self.fsize_limit is None:
            import resource

            soft = resource.getrlimit(resource.RLIMIT_FSIZE)[0]
            self.fsize_limit = soft if soft != resource.RLIM_INFINITY else 0
        if self.fsize_limit:
            for rep in reps:
                for path in (rep.out_path, rep.err_path):
                    try:
                        size = os.stat(path).st_size
                    except OSError:
                        continue
                    if size >= self.fsize_limit:
                        self.on_no_space(path, OSError(errno.EFBIG, "File too large (ulimit -f)"))
                        return True
        return False

    def on_no_space(self, path: str, err: OSError | None = None) -> None:
        """Fails the app: what its replicas write can no longer be kept (disk full)."""
        if self.no_space:
            return
        self.no_space = True
        code = (err.errno if err is not None else None) or errno.ENOSPC
        what = "file size limit reached" if code == errno.EFBIG else "disk full"
        why = (err.strerror if err is not None else None) or os.strerror(code)
        msg = (
            f"{what}: {why} on the filesystem of {path}; the app was stopped "
            "(its logs lack what could not be written)"
        )
        if self.final is None:
            self.msg = msg
            self.final = "FAILED"
            self.to_relaunch = []
            self.begin_stop(self.replicas)
        else:
            self.msg = f"{self.msg}; {msg}" if self.msg else msg
        self.dirty = True

    def pump(self, rep: _Replica, now: float, final: bool = False) -> bool:
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

        The launcher wrote only the pickle (no cattrs on its clock); the JSON document is
        the lasting record, readable by any later release. Written at a quiet moment of
        the supervisor's loop once the app has run :data:`RECORD_DELAY` seconds, or right
        after the final state of an app that ended sooner: neither the replicas' start-up
        nor a short app's end shares the CPU with it. Tried once. A
        failure here is logged and costs nothing but that record: describe reads the
        pickle.
        """
        if self.request_complete:
            return
        self.request_complete = True
        try:
            import pickle

            from torchx.specs import serialize

            with open(os.path.join(self.app_dir, "appdef.pickle"), "rb") as f:
                app = pickle.load(f)["app"]
            request = dict(self.request)
            request["app"] = serialize.to_document(app)
            with locked(self.app_dir):  # an app deleted meanwhile has nowhere to write
                write_json_atomic(os.path.join(self.app_dir, "request.json"), request)
            self.request = request
        except FileNotFoundError:
            pass  # deleted meanwhile: no record wanted
        except Exception:
            import traceback

            print("torchx: could not write the AppDef record:", file=sys.stderr)
            traceback.print_exc()

    # -- replicas ---------------------------------------------------------------------------

    def start_preparing(self) -> list[Any]:
        """Makes each replica's log directory and files, in a thread, ahead of its start.

        Returns one lock per replica, held until that replica's files are there (or
        making them failed: ``prepare_error`` says why). Creating a directory and two
        files is filesystem metadata work that costs from 0.05 to over 1 ms per replica
        (ext4 allocating inodes in a crowded block group was seen taking 0.7 ms each):
        done here, on the other core, it no longer adds to the start of each replica.
        The files are closed again (1,000 replicas must fit in ``ulimit -n 1024``):
        :meth:`launch` opens them, never through a link either. ``_thread``, not
        ``threading``: this process starts for every app.
        """
        import _thread

        ready = [_thread.allocate_lock() for _ in self.replicas]
        for lock in ready:
            lock.acquire()

        def prepare() -> None:
            flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC | os.O_NOFOLLOW
            for rep, lock in zip(self.replicas, ready):
                if self.prepare_error is None:
                    try:
                        os.makedirs(rep.log_dir, mode=0o700, exist_ok=True)
                        for path in (rep.out_path, rep.err_path):
                            os.close(os.open(path, flags, 0o600))
                    except OSError as e:
                        self.prepare_error = e
                        self.prepare_failed = rep
                lock.release()

        _thread.start_new_thread(prepare, ())
        return ready

    def on_prepare_error(self, rep: _Replica, err: OSError) -> None:
        """Fails the app: ``rep``'s log files could not be made, so it cannot start.

        The replicas already started are stopped by the main loop, as for any failure
        (their group signalled, then whatever they left below this subreaper killed):
        raising from here instead left it to the crash handler, which knows only the
        sessions on record, and none is on record before the first write after the start.
        """
        why = f"{type(err).__name__}: {err}"
        if err.errno in NO_SPACE:
            why = f"disk full: {err}"
        self.msg = f"replica {rep.role.name}/{rep.id} could not start: its log files: {why}"
        rep.state = "FAILED"
        rep.error = self.msg
        self.final = "FAILED"
        self.to_relaunch = []
        self.begin_stop(self.replicas)
        self.dirty = True

    def launch(self, rep: _Replica) -> None:
        spec = rep.spec
        if self.base_env is None:
            self.base_env = dict(os.environ)
        env = {**self.base_env, **spec["env"]}
        # the launching Python's bin directory (a venv's, say) comes last on PATH, so its
        # console scripts (torchrun) are found even when that venv was not activated
        path = env.get("PATH", "")
        if _BINDIR and _BINDIR not in path.split(os.pathsep):
            env["PATH"] = f"{path}{os.pathsep}{_BINDIR}" if path else _BINDIR
        # never through a link: the log directory may be in a shared place (log_dir)
        flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC | os.O_NOFOLLOW
        out = os.open(rep.out_path, flags, 0o600)
        err = os.open(rep.err_path, flags, 0o600)
        rep.started = time.time()
        rep.exit_code = None
        rep.finished = None
        try:
            pid = self.spawn(spec["entrypoint"], spec["args"], spec["cwd"], env, out, err)
        except OSError as e:
            code = 126 if e.errno == errno.EACCES else 127
            message = f"torchx: cannot start {spec['entrypoint']!r} in {spec['cwd']!r}: {e}\n"
            _write_all(err, message.encode())
            rep.error = message.strip()
            rep.pid = None
            self.on_exit(rep, code)
            return
        finally:
            os.close(out)
            os.close(err)
        rep.pid = pid
        rep.state = "RUNNING"
        # its start time is read later (stamp_sessions): /proc/<pid>/stat of a process
        # still in execve makes the reader wait for it
        rep.sessions.append([pid, 0])
        self.unstamped.append(rep)
        self.by_pid[pid] = rep
        self.dirty = True

    def spawn(
        self, entrypoint: str, args: list[str], cwd: str, env: dict[str, str], out: int, err: int
    ) -> int:
        """Starts one replica process in its own session; returns its pid.

        No ``preexec_fn``, which would force a fork of this process per replica (the
        ``vfork`` path is several times faster for 128 of them). Signals: the
        supervisor's handlers are reset by exec, and it ignores none (SIGHUP has a no-op
        handler for that reason); ``subprocess`` sets back those Python ignores. The
        replica is reaped by :meth:`reap` (``os.waitpid``), not through the Popen object.
        (``os.posix_spawn`` was measured too: 5 % faster for 128 replicas, but glibc's
        leaves its internal signals 32 and 33 ignored in the new program.)
        """
        import subprocess

        popen = subprocess.Popen(
            [entrypoint, *args],
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=err,
            start_new_session=True,
            umask=self.umask,  # the launcher's
        )
        # dropped unwaited: without a return code, subprocess would keep it on its list
        # of children to reap, and could take the exit status before reap() does
        popen.returncode = 0
        return popen.pid

    def stamp_sessions(self) -> None:
        """Records the start time of replicas started since the last call (pid reuse proof).

        Called before the state is written and before children are reaped: a replica
        that already exited is a zombie until then, whose start time is still readable.
        """
        pending, self.unstamped = self.unstamped, []
        for rep in pending:
            sid, start = rep.sessions[-1]
            if not start:
                st = proc_stat(sid)
                if st is not None:
                    rep.sessions[-1][1] = st[2]

    def signal_group(self, rep: _Replica, sig: int) -> None:
        if rep.pid is not None:
            try:
                os.killpg(rep.pid, sig)
            except OSError:
                pass

    def begin_stop(self, reps: list[_Replica]) -> None:
        """SIGTERM to each running replica's group; SIGKILL follows after the grace period."""
        for rep in reps:
            if rep.running and rep not in self.stopping:
                self.signal_group(rep, signal.SIGTERM)
                self.stopping.add(rep)
        if self.stopping and self.stop_deadline is None:
            self.stop_deadline = time.monotonic() + self.grace

    def reap(self) -> list[tuple[_Replica, int]]:
        self.stamp_sessions()  # while the exited are zombies: their start times are readable
        exited = []
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
            rep = self.by_pid.pop(pid, None)
            if rep is not None:  # else: an orphan re-parented to us (subreaper), or the watchdog
                exited.append((rep, os.waitstatus_to_exitcode(status)))
        return exited

    def on_exit(self, rep: _Replica, code: int) -> None:
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
                from torchx.schedulers._local.watchdog import watch

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
                    # (cattrs, ~50 ms of CPU) is written now, neither while the replicas
                    # start up nor between a short app's exit and its final state
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
        self.apply_retention()
        os.close(wd_write)
        return 0

    def apply_retention(self) -> None:
        """Prunes the state directory's finished apps (``retain_last``/``retain_for``).

        After the final state: it never delays an app's end. A failure is logged only.
        """
        last, keep_for = self.request.get("retain_last"), self.request.get("retain_for")
        if last is None and keep_for is None:
            return
        try:
            from torchx.schedulers._local.retention import prune

            prune(os.path.dirname(os.path.dirname(self.app_dir)), last, keep_for)
        except Exception:
            import traceback

            print("torchx: could not apply the retention:", file=sys.stderr)
            traceback.print_exc()

    def kill_descendants(self) -> None:
        """SIGKILLs whatever the app started that is still below the supervisor, and reaps it.

        As child subreaper the supervisor inherits every orphan of the app's process
        tree, those that left their replica's session (``setsid``) or were double-forked
        included: anything still below it when the app ends is the app's, and dies.
        Rounds repeat until nothing is left (a process may fork while it is killed).
        """
        for _ in range(100):
            doomed = [pid for pid in _descendants(self.pid) if pid != self.watchdog]
            if not doomed:
                break
            for pid in doomed:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            for pid in doomed:
                try:
                    os.waitpid(pid, 0)  # our children (re-parented orphans) are reaped here
                except ChildProcessError:
                    pass  # not our child (yet): its parent was killed too; next round
        self.reap()

    def _on_term(self, signum: int, frame: object) -> None:
        self.cancel_requested = True


def _descendants(root: int) -> list[int]:
    """Every live process below ``root`` (by parent pid, from /proc)."""
    if root <= 0:
        return []
    children: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                raw = f.read()
        except OSError:
            continue
        fields = raw[raw.rfind(b")") + 2 :].split()
        if fields[0] not in (b"Z", b"X"):
            children.setdefault(int(fields[1]), []).append(int(name))
    out: list[int] = []
    todo = [root]
    while todo:
        for child in children.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


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


def write_state_file(app_dir: str, state: dict[str, Any]) -> None:
    """Writes a final state, whatever it takes: in the room of ``.reserve``, else in place.

    ``.reserve`` goes first (before the record says the app ended, so nothing of the app
    changes after that): on a full disk, the room it gives back is what the atomic write
    (a new file) needs. As a last resort the record is overwritten in place (a reader may
    then see it torn for a moment, which beats a record that says RUNNING forever).
    """
    path = os.path.join(app_dir, "state.json")
    _remove(os.path.join(app_dir, ".reserve"))
    try:
        write_json_atomic(path, state)
        return
    except OSError as e:
        if e.errno not in NO_SPACE:
            raise
    import json

    payload = json.dumps(state, separators=(",", ":")).encode()
    fd = os.open(path, os.O_WRONLY | os.O_CLOEXEC)
    try:
        _write_all(fd, payload)
        os.ftruncate(fd, len(payload))
    finally:
        os.close(fd)


def _remove(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def main(argv: list[str], early: Early | None = None) -> int:
    return Supervisor(argv[1]).run(early)


def entry(early: Early | None = None) -> None:
    """Runs :func:`main` (after :func:`~torchx.schedulers._local.boot.start`, or as
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
