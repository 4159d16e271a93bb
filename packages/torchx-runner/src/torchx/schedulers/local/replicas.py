"""The supervisor's replicas as processes: their files, start, signals, exits.

:class:`Replica` and :class:`Role` hold what the supervisor knows of each replica (its
state, pid, sessions, restarts) and give its record; :class:`ReplicaProcesses` is the
process side of :class:`~torchx.schedulers.local.supervisor.Supervisor`: it makes each
replica's log files ahead of its start, starts it in its own session (the fast
``vfork`` path of ``subprocess``), signals its process group, reaps it, and at the end
kills whatever the app left below the supervisor. Standard library only.
"""

from __future__ import annotations

import errno
import os
import signal
import sys
import time

from torchx.schedulers.local.logs import IndexWriter
from torchx.schedulers.local.records import ERROR_FILE_ENV, ERROR_FILE_NAME
from torchx.schedulers.local.state import NO_SPACE, proc_stat, write_all

TYPE_CHECKING = False  # typing costs every supervisor start milliseconds
if TYPE_CHECKING:
    from typing import Any

#: The bin directory of the Python that runs the supervisor (the launcher's).
_BINDIR = os.path.dirname(sys.executable) if sys.executable else ""


class Replica:
    def __init__(self, role: Role, spec: dict[str, Any]) -> None:
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


class Role:
    def __init__(self, spec: dict[str, Any]) -> None:
        self.name: str = spec["name"]
        self.policy: str = spec["retry_policy"]
        self.max_retries: int = spec["max_retries"]
        self.retries = 0
        self.replicas = [Replica(self, r) for r in spec["replicas"]]


class ReplicaProcesses:
    """The process side of :class:`~torchx.schedulers.local.supervisor.Supervisor`."""

    pid: int
    watchdog: int
    umask: int
    grace: float
    replicas: list[Replica]
    by_pid: dict[int, Replica]
    stopping: set[Replica]
    stop_deadline: float | None
    unstamped: list[Replica]
    base_env: dict[str, str] | None
    prepare_error: OSError | None
    prepare_failed: Replica | None
    final: str | None
    msg: str
    to_relaunch: list[Replica]
    dirty: bool

    def on_exit(self, rep: Replica, code: int) -> None:
        raise NotImplementedError  # the supervisor's: its retry policy

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

    def on_prepare_error(self, rep: Replica, err: OSError) -> None:
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

    def launch(self, rep: Replica) -> None:
        spec = rep.spec
        if self.base_env is None:
            self.base_env = dict(os.environ)
        env = {**self.base_env, **spec["env"]}
        # where torchrun (or @record) writes the replica's exception, which describe reads
        # back; the role's own file wins, the launcher's (torchx run inside a torchrun
        # job) does not
        own_file = os.path.join(rep.log_dir, ERROR_FILE_NAME)
        if ERROR_FILE_ENV not in spec["env"]:
            env[ERROR_FILE_ENV] = own_file
        # the launching Python's bin directory (a venv's, say) comes last on PATH, so its
        # console scripts (torchrun) are found even when that venv was not activated
        path = env.get("PATH", "")
        if _BINDIR and _BINDIR not in path.split(os.pathsep):
            env["PATH"] = f"{path}{os.pathsep}{_BINDIR}" if path else _BINDIR
        # never through a link: the log directory may be in a shared place (log_dir)
        flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC | os.O_NOFOLLOW
        # an error file an earlier attempt left is not this attempt's error
        try:
            os.unlink(own_file)
        except OSError:
            pass
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
            write_all(err, message.encode())
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

    def signal_group(self, rep: Replica, sig: int) -> None:
        if rep.pid is not None:
            try:
                os.killpg(rep.pid, sig)
            except OSError:
                pass

    def begin_stop(self, reps: list[Replica]) -> None:
        """SIGTERM to each running replica's group; SIGKILL follows after the grace period."""
        for rep in reps:
            if rep.running and rep not in self.stopping:
                self.signal_group(rep, signal.SIGTERM)
                self.stopping.add(rep)
        if self.stopping and self.stop_deadline is None:
            self.stop_deadline = time.monotonic() + self.grace

    def reap(self) -> list[tuple[Replica, int]]:
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
