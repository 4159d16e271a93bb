"""The local scheduler: apps as local processes that outlive their launcher (Linux).

Registered as ``local`` (and ``local_cwd``, upstream's name) through torchx-runner's
own plugin, like any third-party scheduler. Unlike upstream TorchX, an app does not
die with the process that launched it, and can be followed from any later shell:

>>> import tempfile
>>> from torchx.specs import AppDef, Role
>>> sched = create_scheduler("demo", state_dir=tempfile.mkdtemp())
>>> app = AppDef("hello", [Role("echo", image="/tmp", entrypoint="echo", args=["hi"])])
>>> info = sched.submit_dryrun(app, {})
>>> info.request.roles[0].replicas[0].args
['hi']
>>> app_id = sched.schedule(info)            # returns at once; the app runs detached
>>> list(sched.log_iter(app_id, "echo", should_tail=True))  # follows until it ends
['hi\\n']
>>> sched.describe(app_id).state
<AppState.SUCCEEDED: 4>
>>> sched.delete(app_id)

How it works: ``schedule`` writes the request into ``<state_dir>/apps/<app_id>/`` and
starts one small detached supervisor per app (``torchx.schedulers._local.supervisor``)
in a new session; it returns once the supervisor's interpreter runs (its pid is
recorded; a supervisor that dies at start is an error, and its app is removed). The supervisor
starts each replica in its own session and process group, applies the retry policy,
and records states and logs. Every other call (``describe``, ``log_iter``, ``list``,
``cancel``, ``delete``) only reads those records, so it works from any process that
uses the same state directory (``$TORCHX_HOME``, or the ``state_dir`` given here). An
app kept elsewhere (the ``state_dir`` run option, or a scheduler given another
``state_dir``) has a small link in the default state directory, so that the handle alone
finds it from any later process.

Guarantees:

* a replica dies with its supervisor, even on ``kill -9`` (a watchdog process kills
  whatever the app started; if it was killed too, the next ``describe``, ``log_iter`` or
  ``list`` does), and the app is then recorded as FAILED with the reason: never RUNNING
  forever;
* ``cancel`` sends SIGTERM to every replica's process group, SIGKILL after the
  ``grace_period`` run option; when an app ends, nothing it started is left running
  (the supervisor is the child subreaper of the whole tree). A supervisor that is
  stopped (``kill -STOP``) cannot act: ``cancel`` kills it and the app's processes;
* only processes proven to be the app's are signalled (a replica's pid and start time,
  or the app's ``TORCHX_APP_ID`` in a process's environment): a stale record never
  kills a stranger;
  A cancel is also recorded, so one that comes right after ``schedule``, while the
  supervisor is still starting, is never lost;
* ``describe`` gives back the exact AppDef submitted (name, roles, metadata); the
  scheduler's own bookkeeping stays in its records (``ui_url`` is the log directory);
* records are versioned JSON written atomically (a reader sees the old or the new
  record, never half of one); read-modify-write holds the app's ``flock``, so
  concurrent launches, status calls and deletes never corrupt them;
* app ids are checked before any file is touched: one that could name a path outside
  the state directory raises :class:`InvalidAppIdException`.
* a state directory (or a level of it the scheduler creates) that is not the user's
  or that others may write into is refused (:class:`SchedulerError`, saying how to fix
  it), so no record planted by another user is ever acted on; ``<log_dir>/<app_id>``
  is created fresh and private (see ``_make_log_dir``).

Replica environment: the launcher's environment, then ``TORCHX_RANK0_HOST=localhost``
(the ``rank0_env`` macro names it), ``TORCHX_APP_ID``, ``TORCHX_JOB_ID`` (the app
handle), ``TORCHX_ROLE_NAME``, ``TORCHX_REPLICA_ID``, ``PYTHONUNBUFFERED=1``, then the
role's own ``env`` (which wins); the launching Python's ``bin`` directory is appended to
``PATH`` when missing, so the console scripts of a venv that was not activated
(``torchrun``) are found. The working directory is the role's image, which must be
a directory (an empty image means the directory ``submit_dryrun`` ran in);
``${img_root}`` names it.

Refused at dryrun, before anything is written (:mod:`torchx.schedulers._local.checks`):
two roles with one name, an env key with ``=``, a NUL in an argument or env value, an
argument that is not a string, a negative ``max_retries``, an image that is not a
directory.

Linux only: it relies on ``/proc``, process groups, sessions and ``prctl``. On another
platform ``schedule`` raises :class:`SchedulerError` saying so (dry runs work anywhere).
"""

from __future__ import annotations

import _thread
import builtins
import os
import shlex
import signal
import sys
import time
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypeGuard

import attrs

from torchx.schedulers._local import records as _rec
from torchx.schedulers._local import state as _st
from torchx.schedulers.api import (
    DescribeAppResponse,
    ListAppResponse,
    Scheduler,
    SchedulerError,
    Stream,
    filter_regex,
)
from torchx.schedulers.errors import InvalidAppIdError
from torchx.schedulers.ids import make_app_id, validate_app_id
from torchx.schedulers.states import to_app_state
from torchx.specs import (
    NONE,
    AppDef,
    AppDryRunInfo,
    AppState,
    CfgVal,
    InvalidRunConfigException,
    ReplicaStatus,
    RoleStatus,
    SpecError,
    runopts,
)

__all__ = [
    "InvalidAppIdException",
    "LocalReplica",
    "LocalRequest",
    "LocalRole",
    "LocalScheduler",
    "create_scheduler",
    "default_state_dir",
]

#: The environment variable holding the rank-0 host (``macros.rank0_env`` names it).
RANK0_ENV = "TORCHX_RANK0_HOST"
#: How long ``schedule`` waits for the supervisor to report in before giving up (s).
READY_TIMEOUT = 30.0
#: A record with no supervisor pid this long after its creation was never started.
START_TIMEOUT = _rec.START_TIMEOUT
#: The records hold states by name; a name this release does not know is UNKNOWN.
_APP_STATES = AppState.__members__

default_state_dir = _st.default_state_dir


class InvalidAppIdException(InvalidAppIdError, SpecError):
    """An app id that is not of the form the local scheduler gives out (``name-xxxxxxxxxx``).

    The local scheduler's name for :class:`~torchx.schedulers.errors.InvalidAppIdError`.
    """


def _check_app_id(app_id: str) -> str:
    return validate_app_id(app_id, what="local app id", error=InvalidAppIdException)


@attrs.define
class LocalReplica:
    """One process to start: what, where, with which extra environment, logging where."""

    id: int
    entrypoint: str
    args: list[str]
    env: dict[str, str]
    cwd: str
    log_dir: str

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "entrypoint": self.entrypoint,
            "args": self.args,
            "env": self.env,
            "cwd": self.cwd,
            "log_dir": self.log_dir,
        }


@attrs.define
class LocalRole:
    """The replicas of one role and its retry policy."""

    name: str
    retry_policy: str
    max_retries: int
    replicas: list[LocalReplica]


@attrs.define
class LocalRequest:
    """What :meth:`LocalScheduler.schedule` submits: the dryrun's request.

    ``str()`` of it (what ``torchx run --dryrun`` prints) shows each replica as the
    shell command it amounts to.
    """

    app_id: str
    app_name: str
    state_dir: str
    log_dir: str
    grace_period: float
    roles: list[LocalRole]
    #: apps to keep once this one has ended: the newest N, and those younger than D (s)
    retain_last: int | None = None
    retain_for: float | None = None
    #: run the app in a cgroup of its own, where the supervisor may make one
    cgroup: bool = False

    def to_json(self) -> dict[str, Any]:
        return {
            "app_id": self.app_id,
            "app_name": self.app_name,
            "log_dir": self.log_dir,
            "grace_period": self.grace_period,
            "retain_last": self.retain_last,
            "retain_for": self.retain_for,
            "cgroup": self.cgroup,
            "roles": [
                {
                    "name": r.name,
                    "retry_policy": r.retry_policy,
                    "max_retries": r.max_retries,
                    "replicas": [rep.to_json() for rep in r.replicas],
                }
                for r in self.roles
            ],
        }

    def __str__(self) -> str:
        lines = [f"local app {self.app_id} (records: {self.state_dir}, logs: {self.log_dir})"]
        if self.cgroup:
            lines.append(f"  in a cgroup of its own where available (torchx-{self.app_id})")
        for role in self.roles:
            lines.append(
                f"  role {role.name}: {len(role.replicas)} replica(s), "
                f"retry_policy={role.retry_policy}, max_retries={role.max_retries}"
            )
            for rep in role.replicas:
                # 'env K=V cmd', each pair quoted whole: pasted into a shell it runs the
                # command with exactly this environment, whatever the keys hold
                env = shlex.join(
                    [
                        "env",
                        *(["--"] if any(k.startswith("-") for k in rep.env) else []),
                        *(f"{k}={v}" for k, v in rep.env.items()),
                    ]
                )
                cmd = shlex.join([rep.entrypoint, *rep.args])
                lines.append(f"    {role.name}/{rep.id}: cd {shlex.quote(rep.cwd)} && {env} {cmd}")
        return "\n".join(lines)


def _gpu_count() -> int:
    """Number of NVIDIA GPUs on this host (0 when there is no driver)."""
    try:
        return len(os.listdir("/proc/driver/nvidia/gpus"))
    except OSError:
        pass
    import shutil

    nvidia_smi = shutil.which("nvidia-smi")
    if not nvidia_smi:
        return 0
    import subprocess

    try:
        out = subprocess.run([nvidia_smi, "-L"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return 0
    return sum(1 for line in out.stdout.splitlines() if line.startswith("GPU "))


_read_state = _rec.read_state
_UnreadableRecord = _rec.UnreadableRecord


def _kill_stopped_supervisor(state: dict[str, Any]) -> bool:
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


def _retention(cfg: Mapping[str, CfgVal]) -> tuple[int | None, float | None]:
    """The ``retain_last`` and ``retain_for`` run options, checked (one line if bad)."""
    from torchx.schedulers._local.retention import parse_duration

    last = cfg.get("retain_last")
    if last is not None and (not isinstance(last, int) or isinstance(last, bool) or last < 1):
        raise InvalidRunConfigException(
            f"run option 'retain_last' must be a whole number >= 1 (apps to keep), got {last!r}"
        )
    text = cfg.get("retain_for")
    try:
        keep_for = parse_duration(str(text)) if text not in (None, "") else None
    except ValueError as e:
        raise InvalidRunConfigException(f"run option 'retain_for': {e}") from None
    return last, keep_for


def _salvage(app_dir: str) -> dict[str, Any]:
    """What delete needs of an app whose state.json is unreadable: its log directory."""
    try:
        request = _st.read_json(os.path.join(app_dir, "request.json"))
        log_dir = request.get("log_dir") if isinstance(request, dict) else None
    except (OSError, ValueError):
        log_dir = None
    # recorded as ended: nothing of it can be told from a stranger's process, none is killed
    return {"state": "FAILED", "log_dir": log_dir if isinstance(log_dir, str) else ""}


_settle = _rec.settle


# whether this process has left an AppDef's JSON record to a supervisor yet
_deferred_once = False


class _NotPlain(Exception):
    pass


def _pickle_plain(obj: Any) -> bytes | None:
    """``pickle.dumps(obj)`` if it refers only to torchx-specs classes and builtins, else None.

    Such a pickle loads in any process that has torchx-specs (the supervisor, a later
    ``describe``); one naming a class of the user's code (maybe from a component file
    loaded by path) might not.
    """
    import io
    import pickle

    allowed = ("builtins", "copyreg", "torchx.specs")

    def plain(module: object) -> bool:
        return isinstance(module, str) and (module in allowed or module.startswith("torchx.specs."))

    class Pickler(pickle.Pickler):
        def reducer_override(self, o: Any) -> Any:
            # a class or function is pickled by its module's name; anything else by its type
            named = isinstance(o, type) or hasattr(o, "__qualname__")
            if not plain(getattr(o, "__module__", None) if named else type(o).__module__):
                raise _NotPlain(repr(o)[:100])
            return NotImplemented

    buf = io.BytesIO()
    try:
        Pickler(buf, protocol=5).dump(obj)
    except (_NotPlain, pickle.PicklingError, TypeError, AttributeError):
        return None
    return buf.getvalue()


_check_dirs = _rec.check_dirs


def _make_log_dir(log_dir: str, app_dir: str) -> bool:
    """Creates the app's log directory fresh and private; True if it was created here.

    ``<log_dir>/<app_id>`` may sit in a shared directory (``-cfg log_dir=/tmp/logs``).
    There it must be made by this process (``mkdir`` never follows a planted link and
    fails on a planted directory), in a directory that only its owner (us or root) can
    change entries of: another user could otherwise read the logs, or make the replicas
    append them to a file of their choosing. An existing one is accepted only if it is
    ours, private and a real directory.
    """
    import stat

    parent = os.path.dirname(log_dir)
    if not log_dir.startswith(app_dir + os.sep):
        try:
            os.makedirs(parent, mode=0o700, exist_ok=True)
        except OSError as e:
            raise SchedulerError(
                f"cannot create log_dir {parent}: {e.strerror or e}; give a writable directory"
            ) from None
        # as ssh does: every directory on the way must be one only we (or root) can change
        path = parent
        while True:
            st = os.lstat(path)
            bad = ""
            if stat.S_ISLNK(st.st_mode):
                bad = "is a symbolic link (it was not when the app was dry-run)"
            elif st.st_uid not in (os.geteuid(), 0):
                bad = f"is owned by uid {st.st_uid}, neither you nor root"
            elif st.st_mode & 0o022 and not st.st_mode & stat.S_ISVTX:
                bad = f"is writable by others and not sticky (mode {st.st_mode & 0o7777:04o})"
            if bad:
                raise SchedulerError(
                    f"log_dir {parent}: {path} {bad}, so another user could replace the "
                    "logs written there; use a directory of your own, e.g. "
                    "-cfg log_dir=~/torchx-logs"
                )
            if path == os.path.dirname(path):
                break
            path = os.path.dirname(path)
    try:
        os.mkdir(log_dir, 0o700)
        return True
    except FileExistsError:
        pass
    st = os.lstat(log_dir)
    if stat.S_ISDIR(st.st_mode) and st.st_uid == os.geteuid() and not st.st_mode & 0o077:
        return False
    raise SchedulerError(
        f"log directory {log_dir} already exists and is not a private directory of yours "
        "(another user may have created it to read or redirect the logs): refusing to "
        "write there; remove it, or use a log_dir of your own"
    )


def _same_dir(a: str, b: str) -> bool:
    return os.path.normpath(os.path.abspath(a)) == os.path.normpath(os.path.abspath(b))


_unlink = _rec.unlink


#: A record shared by the readers of an app: (its state.json, the file's version, when
#: read, the settled record); see LocalScheduler._shared_state
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


class LocalScheduler(Scheduler[Mapping[str, CfgVal]]):
    """Runs each app as local processes under a detached supervisor; see the module docs.

    Args:
        session_name: the session handles carry (any session finds any app)
        state_dir: where records live; default :func:`default_state_dir`
    """

    def __init__(self, session_name: str, state_dir: str | None = None) -> None:
        super().__init__("local", session_name)
        self.state_dir = os.path.abspath(state_dir) if state_dir else default_state_dir()
        self._shared: dict[str, _Shared] = {}  # app id -> its record, shared
        # one reader at a time reads a changed record (the others then find it read);
        # _thread, not threading: always loaded, so no import cost for the commands
        self._shared_lock = _thread.allocate_lock()

    # -- options ----------------------------------------------------------------------------

    def _run_opts(self) -> runopts:
        opts = runopts()
        opts.add(
            "log_dir",
            type_=str,
            help="directory for replica logs (<log_dir>/<app_id>/<role>/<k>/); "
            "default: the app's record directory",
        )
        opts.add(
            "state_dir",
            type_=str,
            help="directory for the app's records (default: $TORCHX_HOME, "
            "$XDG_STATE_HOME/torchx or ~/.local/state/torchx); a link in the default "
            "one lets its handle find the app from any later process",
        )
        opts.add(
            "auto_set_cuda_visible_devices",
            type_=bool,
            default=False,
            help="give each replica its own GPUs through CUDA_VISIBLE_DEVICES "
            "(resource.gpu of them each); fails if the host has too few",
        )
        opts.add(
            "prepend_cwd",
            type_=bool,
            default=False,
            help="put the replica's working directory first on its PATH",
        )
        opts.add(
            "grace_period",
            type_=float,
            default=10.0,
            help="seconds between SIGTERM and SIGKILL when cancelling or restarting replicas",
        )
        opts.add(
            "retain_last",
            type_=int,
            help="retention: once the app has ended, remove the finished apps of its state "
            "directory except the newest N (and those retain_for keeps); default: keep all",
        )
        opts.add(
            "retain_for",
            type_=str,
            help="retention: once the app has ended, remove the finished apps of its state "
            "directory that ended longer ago than this (e.g. 12h, 7d; and not kept by "
            "retain_last); default: keep all",
        )
        opts.add(
            "cgroup",
            type_=bool,
            default=False,
            help="run the app in a cgroup (v2) of its own where one can be made (root, or a "
            "delegated subtree): all it started dies with it even if its supervisor is "
            "killed; costs 10-30 ms at start",
        )
        return opts

    def _validate(self, app: AppDef, scheduler: str, cfg: Mapping[str, CfgVal]) -> None:
        """Accepts roles without a resource: local processes are not given resources.

        (Only ``resource.gpu`` matters, with ``auto_set_cuda_visible_devices``.)
        """

    # -- dryrun -----------------------------------------------------------------------------

    def _submit_dryrun(self, app: AppDef, cfg: Mapping[str, CfgVal]) -> AppDryRunInfo[Any]:
        from torchx.schedulers._local.checks import check_app
        from torchx.specs.templating import macros

        check_app(app)  # refused here, before anything is written or started
        state_dir = cfg.get("state_dir")
        state_dir = os.path.abspath(str(state_dir)) if state_dir else self.state_dir
        app_id = make_app_id(app.name)
        log_root = cfg.get("log_dir")
        log_dir = (
            # links resolved now: schedule then checks every directory on the way
            os.path.join(os.path.realpath(os.path.expanduser(str(log_root))), app_id)
            if log_root
            else os.path.join(state_dir, "apps", app_id, "logs")
        )
        grace = cfg.get("grace_period")
        grace = float(grace) if isinstance(grace, int | float) else 10.0
        if not grace >= 0:  # also refuses NaN
            raise InvalidRunConfigException(
                f"run option 'grace_period' must be a number of seconds >= 0, got {grace!r}"
            )
        retain_last, retain_for = _retention(cfg)
        launch_dir = os.getcwd()
        handle = f"{self.backend}://{self.session_name}/{app_id}"

        gpus: list[str] = []
        if cfg.get("auto_set_cuda_visible_devices"):
            wanted = sum(r.resource.gpu * r.num_replicas for r in app.roles)
            if wanted:
                have = _gpu_count()
                if wanted > have:
                    raise SpecError(
                        f"auto_set_cuda_visible_devices: app {app.name!r} asks for {wanted} "
                        f"GPUs in all but this host has {have}; lower resource.gpu or "
                        "num_replicas, or turn the option off"
                    )
                gpus = [str(i) for i in range(have)]
        next_gpu = 0

        roles: list[LocalRole] = []
        for role in app.roles:
            cwd = os.path.abspath(role.image) if role.image else launch_dir
            replicas = []
            for k in range(role.num_replicas):
                values = macros.Values(
                    img_root=cwd, app_id=app_id, replica_id=str(k), rank0_env=RANK0_ENV
                )
                args = [values.substitute(a) for a in role.args]
                env = {
                    RANK0_ENV: "localhost",
                    "TORCHX_APP_ID": app_id,
                    "TORCHX_JOB_ID": handle,
                    "TORCHX_ROLE_NAME": role.name,
                    "TORCHX_REPLICA_ID": str(k),
                    "PYTHONUNBUFFERED": "1",
                }
                for key, v in role.env.items():
                    env[key] = values.substitute(v)
                if gpus and role.resource.gpu:
                    env["CUDA_VISIBLE_DEVICES"] = ",".join(
                        gpus[next_gpu : next_gpu + role.resource.gpu]
                    )
                    next_gpu += role.resource.gpu
                if cfg.get("prepend_cwd"):
                    env["PATH"] = cwd + os.pathsep + env.get("PATH", os.environ.get("PATH", ""))
                replicas.append(
                    LocalReplica(
                        id=k,
                        entrypoint=role.entrypoint,
                        args=args,
                        env=env,
                        cwd=cwd,
                        log_dir=os.path.join(log_dir, role.name, str(k)),
                    )
                )
            roles.append(LocalRole(role.name, str(role.retry_policy), role.max_retries, replicas))
        request = LocalRequest(
            app_id=app_id,
            app_name=app.name,
            state_dir=state_dir,
            log_dir=log_dir,
            grace_period=grace,
            roles=roles,
            retain_last=retain_last,
            retain_for=retain_for,
            cgroup=bool(cfg.get("cgroup")),
        )
        return AppDryRunInfo(request, str)

    # -- schedule ---------------------------------------------------------------------------

    def schedule(self, dryrun_info: AppDryRunInfo[Any]) -> str:
        """Starts the app's supervisor and returns the app id once it has reported in."""
        request: LocalRequest = dryrun_info.request
        app = dryrun_info.app
        if not sys.platform.startswith("linux"):
            raise SchedulerError(
                f"the local scheduler runs apps on Linux only (it relies on /proc, sessions "
                f"and prctl), not on {sys.platform}; a dryrun works anywhere, or run the "
                "app in a container scheduler"
            )
        app_id = _check_app_id(request.app_id)
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
            own_log_dir = _make_log_dir(request.log_dir, app_dir)
            self._write_records(app_dir, request, app)
            if not _same_dir(request.state_dir, default_state_dir()):
                link = self._write_link(app_id, request.state_dir)
            self._start_supervisor(app_dir, cgroup=request.cgroup)
        except BaseException:
            # a submit that fails half-way removes what it created (the supervisor, if
            # started, was killed by _start_supervisor before it could start a replica)
            import shutil  # here, not at the top: every torchx run imports this module

            shutil.rmtree(app_dir, ignore_errors=True)
            if own_log_dir and not request.log_dir.startswith(app_dir + os.sep):
                shutil.rmtree(request.log_dir, ignore_errors=True)
            if link is not None:
                _unlink(link)
            raise
        return app_id

    def _write_link(self, app_id: str, state_dir: str) -> str:
        """Records in the default state directory where the app's records are.

        An app run elsewhere (the ``state_dir`` run option, or a scheduler created with
        another ``state_dir``) keeps its records there, yet its handle carries only the
        app id: the link lets any later process that uses the default state directory
        find it from the handle alone (and list it).
        """
        links = os.path.join(default_state_dir(), "links")
        try:
            _st.ensure_private_dir(default_state_dir())
            _st.ensure_private_dir(links)
        except _st.UnsafeDirError as e:
            raise SchedulerError(str(e)) from None
        path = os.path.join(links, f"{app_id}.json")
        _st.write_json_atomic(
            path,
            {"apiVersion": _st.API_VERSION, "kind": "LocalAppLink", "state_dir": state_dir},
        )
        return path

    def _write_records(self, app_dir: str, request: LocalRequest, app: AppDef) -> None:
        """Writes request.json, the AppDef cache (appdef.pickle) and the first state.json.

        The AppDef's JSON document (the lasting record, read by any release) needs cattrs,
        whose import is most of a first ``schedule``'s cost: of every ``torchx run``. So
        the first launch of a process whose AppDef holds only torchx-specs types and
        builtins writes the pickle (stdlib) alone, and its supervisor adds the JSON
        document to request.json later (a few seconds into the app, or at its end), off
        the launcher's clock. Later launches of the same process (the serializer is loaded once for all
        of them), and AppDefs with other classes (a Role subclass, say), get both written
        here from the cattrs round trip, which leaves only spec types.
        """
        global _deferred_once
        from torchx.specs import __version__ as specs_version

        now = time.time()
        body = request.to_json()
        body.update({"apiVersion": _st.API_VERSION, "kind": "LocalAppRequest"})
        blob = None
        if not _deferred_once and "torchx.specs.serialize" not in sys.modules:
            blob = _pickle_plain({"specs_version": specs_version, "app": app})
            _deferred_once = blob is not None
        if blob is None:
            import pickle

            from torchx.specs import serialize

            doc = serialize.to_document(app)
            body["app"] = doc
            plain = serialize.from_document(doc, AppDef)
            blob = pickle.dumps({"specs_version": specs_version, "app": plain}, protocol=5)
        _st.write_json_atomic(os.path.join(app_dir, "request.json"), body)
        fd = os.open(
            os.path.join(app_dir, "appdef.pickle"), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600
        )
        with os.fdopen(fd, "wb") as f:
            f.write(blob)
        _st.write_json_atomic(
            os.path.join(app_dir, "state.json"),
            {
                "apiVersion": _st.API_VERSION,
                "kind": "LocalAppState",
                "app_id": request.app_id,
                "app_name": request.app_name,
                "state": "SUBMITTED",
                "msg": "",
                "num_restarts": 0,
                "created": now,
                "updated": now,
                "log_dir": request.log_dir,
                "cancel_requested": False,
                "supervisor": None,
                "replicas": {
                    r.name: [
                        {
                            "id": rep.id,
                            "state": "PENDING",
                            "exit_code": None,
                            "log_dir": rep.log_dir,
                        }
                        for rep in r.replicas
                    ]
                    for r in request.roles
                },
            },
        )

    def _start_supervisor(self, app_dir: str, cgroup: bool = False) -> Any:
        import subprocess

        from torchx.schedulers import local_warmup

        path = local_warmup.supervisor_path()
        args = [app_dir, *(["--cgroup"] if cgroup else [])]
        log_fd = os.open(
            os.path.join(app_dir, "supervisor.log"),
            os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC,
            0o600,
        )
        warm = local_warmup.take(path)  # started ahead by torchx run (see local_warmup)
        if warm is not None:
            os.close(log_fd)  # made here, private; the warm supervisor opens it itself
            proc, read_fd = warm.popen, warm.ready_fd
            if not local_warmup.hand_over(warm, args):  # it died: a new one is started
                os.close(read_fd)
                return self._start_supervisor(app_dir, cgroup)
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
                "from torchx.schedulers._local.boot import start; start()"
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
            answer, ready = self._await_supervisor(app_dir, proc, read_fd)
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

    @staticmethod
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

    # -- reading records --------------------------------------------------------------------

    def _app_dir(self, app_id: str) -> str:
        """The app's record directory: in this state directory, or where its link points."""
        return _rec.app_dir(self.state_dir, _check_app_id(app_id))

    def _link_paths(self, app_id: str) -> list[str]:
        """Where a link to the app may be: this state directory's, then the default one's."""
        return _rec.link_paths(self.state_dir, app_id)

    def _state(self, app_id: str) -> dict[str, Any] | None:
        app_dir = self._app_dir(app_id)
        state = _read_state(app_dir)
        return None if state is None else _settle(app_dir, state)

    def _shared_state(self, app_id: str) -> dict[str, Any] | None:
        """The app's settled record, read again only once ``state.json`` changed or after 1 s.

        For the readers that follow an app's logs: ``torchx log`` of 128 replicas follows
        128 logs, and each asks at every quiet look whether the app has ended. Parsed
        once per change of the record (every write is a new inode) for all of them,
        instead of once per reader: with each reader parsing it, following 128
        replicas took more CPU than starting them. Read again after a second even if
        unchanged, which settles an app whose supervisor and watchdog were both killed.
        Readers that find it changed at once wait for the one reading it (a lock), so
        16 threads following 16 replicas still read each version once. The record
        returned is shared: callers only read it. The directory checks of
        :meth:`_app_dir` are made when the record is read, not at every look.
        """
        cached = self._shared.get(app_id)
        path = cached[0] if cached else os.path.join(self._app_dir(app_id), "state.json")
        ident = _identity(path)
        if ident is None:
            return None
        if _still_fresh(cached, ident):
            return cached[3]
        with self._shared_lock:  # readers that found it changed together: one reads it
            cached = self._shared.get(app_id)
            ident = _identity(path)
            if ident is None:
                return None
            if _still_fresh(cached, ident):
                return cached[3]
            now = time.monotonic()
            state = self._state(app_id)
            self._shared[app_id] = (path, ident, now, state)
            return state

    def _appdef(self, app_dir: str) -> AppDef | None:
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
            if cached.get("specs_version") == specs_version and isinstance(
                cached.get("app"), AppDef
            ):
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

    def exists(self, app_id: str) -> bool:
        return os.path.exists(os.path.join(self._app_dir(app_id), "state.json"))

    def describe(self, app_id: str) -> DescribeAppResponse | None:
        """The app's state, per-replica states and exit codes, and the exact AppDef submitted.

        ``name``, ``roles`` and ``metadata`` are the submitted AppDef's, untouched;
        ``ui_url`` is the ``file://`` URL of the app's log directory.
        """
        app_dir = self._app_dir(app_id)
        state = self._state(app_id)
        if state is None:
            return None
        fields = _rec.status_fields(app_dir, state)
        roles_statuses = [
            RoleStatus(
                role,
                [
                    ReplicaStatus(
                        id=rep_id,
                        state=to_app_state(rep_state, _APP_STATES),
                        role=role,
                        hostname="localhost",
                        exit_code=exit_code,
                    )
                    for rep_id, rep_state, exit_code in replicas
                ],
            )
            for role, replicas in fields["replicas"].items()
        ]
        app = self._appdef(app_dir)
        return DescribeAppResponse(
            app_id=app_id,
            state=to_app_state(fields["state"], _APP_STATES),
            num_restarts=fields["num_restarts"],
            msg=fields["msg"] or NONE,
            structured_error_msg=NONE,
            ui_url=fields["ui_url"],
            metadata=dict(app.metadata) if app is not None else {},
            roles_statuses=roles_statuses,
            roles=list(app.roles) if app is not None else [],
            name=app.name if app is not None else str(state.get("app_name", "")),
        )

    def list(self, cfg: Mapping[str, CfgVal] | None = None) -> list[ListAppResponse]:
        """Every app in the state directory (and the ones linked from it), newest first.

        The ``state_dir`` run option, if given (``torchx list -s local -cfg
        state_dir=DIR``), names another state directory to list: the apps run there.
        An app whose record this version cannot read is listed as UNKNOWN.
        """
        given = cfg.get("state_dir") if cfg else None
        state_dir = os.path.abspath(str(given)) if given else self.state_dir
        return [
            ListAppResponse(
                app_id=app_id,
                state=to_app_state(state, _APP_STATES),
                app_handle=f"{self.backend}://{self.session_name}/{app_id}",
                name=name,
            )
            for app_id, state, name in _rec.list_states(state_dir, _settle)
        ]

    def _app_dirs(self) -> Iterable[tuple[str, str]]:
        """(app id, record directory) of every app here, then of every linked app."""
        return _rec.app_dirs(self.state_dir)

    # -- cancel and delete ------------------------------------------------------------------

    def _cancel_existing(self, app_id: str) -> None:
        """Records the cancel and sends SIGTERM to the supervisor, which stops the replicas.

        The record makes a cancel that reaches a supervisor still starting up (before its
        signal handler is in place) take effect all the same. A supervisor that cannot
        answer (stopped: ``kill -STOP``) is killed instead, and the app's processes with
        it; the record says so (``describe``'s ``msg``).
        """
        app_dir = self._app_dir(app_id)
        state = self._state(app_id)
        if state is None or state.get("state") in _st.TERMINAL:
            return
        if _kill_stopped_supervisor(state):
            self._end_without_supervisor(app_dir, "was stopped (SIGSTOP) and did not answer")
            return
        try:
            with _st.locked(app_dir):
                state = _read_state(app_dir)
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

    @staticmethod
    def _end_without_supervisor(app_dir: str, why: str) -> None:
        """Records as CANCELLED an app whose supervisor was killed, killing what is left.

        Done under the app's lock, so the supervisor's watchdog (if it is still there)
        finds the app already ended.
        """
        try:
            with _st.locked(app_dir):
                state = _read_state(app_dir)
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

    def delete(self, app_id: str, force: bool = False) -> None:
        """Removes the app's records and logs; does nothing for an unknown app.

        Refuses an app that is still running (SchedulerError) unless ``force``, which
        kills it first (SIGKILL, no grace period). An app whose record is unreadable (cut
        short, say) can only be deleted, and is: its processes cannot be told from a
        stranger's, so none is signalled.
        """
        from torchx.schedulers._local.retention import remove_app_files

        app_dir = self._app_dir(app_id)
        links = self._link_paths(app_id)
        try:
            known = self._state(app_id)
        except _UnreadableRecord:
            known = {}
        if known is None:
            for link in links:  # a link to an app deleted elsewhere
                _unlink(link)
            return
        if force:
            _kill_stopped_supervisor(known)  # else its lock, if it held it, is never released
        trash = os.path.join(os.path.dirname(os.path.dirname(app_dir)), "trash")
        try:
            with _st.locked(app_dir):
                try:
                    state = _read_state(app_dir)
                except _UnreadableRecord:
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

    def prune(
        self, older_than: float | str | None = None, keep_last: int | None = None
    ) -> builtins.list[str]:
        """Deletes finished apps: those that ended longer ago than ``older_than``.

        ``older_than`` is seconds or a duration such as ``"7d"`` (``12h``, ``30m``,
        ``1d12h``); ``keep_last`` keeps the newest N apps whatever their age (with
        ``older_than`` None: every finished app but the newest N goes). Running apps are
        never touched. Covers this state directory and the apps linked from it; returns
        the ids of the apps deleted. The ``retain_last``/``retain_for`` run options make
        each app's supervisor do this once the app has ended.
        """
        from torchx.schedulers._local.retention import parse_duration, prune

        keep_for = parse_duration(older_than) if isinstance(older_than, str) else older_than
        if keep_for is None and keep_last is None:
            raise ValueError("prune() needs older_than or keep_last: say what to keep")
        state_dirs = {self.state_dir}
        for _, app_dir in self._app_dirs():
            state_dirs.add(os.path.dirname(os.path.dirname(app_dir)))
        removed: builtins.list[str] = []
        for state_dir in sorted(state_dirs):
            _check_dirs(state_dir)
            removed += prune(state_dir, keep_last=keep_last, keep_for=keep_for)
        return removed

    # -- logs -------------------------------------------------------------------------------

    def log_iter(
        self,
        app_id: str,
        role_name: str,
        k: int = 0,
        regex: str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        should_tail: bool = False,
        streams: Stream | None = None,
    ) -> Iterable[str]:
        """Lines of replica ``k`` of ``role_name``; ``streams`` None means both (combined).

        With ``should_tail`` it follows the log until the app has ended and every line is
        read. ``since``/``until`` use the times the supervisor saw the lines (within
        about 0.25 s of the write). A line longer than 1 MiB comes in pieces (only the
        last ends in ``\\n``), so reading takes bounded memory whatever the output. Without
        ``regex`` the iterable also has ``blocks(size)``: the same text in blocks of whole
        lines, which printers use. See :mod:`torchx.schedulers._local.logs`.
        """
        from torchx.schedulers._local import logs

        state = self._shared_state(app_id)
        if state is None:
            raise SchedulerError(f"no local app {app_id!r} in {self.state_dir}")
        replicas = state.get("replicas", {})
        if role_name not in replicas:
            raise SpecError(
                f"app {app_id} has no role {role_name!r}; its roles: {', '.join(replicas)}"
            )
        match = [rep for rep in replicas[role_name] if rep.get("id") == k]
        if not match:
            raise SpecError(
                f"role {role_name!r} of app {app_id} has no replica {k}; "
                f"it has 0..{len(replicas[role_name]) - 1}"
            )
        log_dir = match[0]["log_dir"]
        stream = Stream(streams) if streams is not None else Stream.COMBINED

        def done() -> bool:
            # asked at every idle poll of a followed log (see _shared_state)
            st = self._shared_state(app_id)
            return st is None or st.get("state") in _st.TERMINAL

        lines = logs.LogLines(
            log_dir,
            None if stream == Stream.COMBINED else stream.value,
            since,
            until,
            should_tail,
            done,
        )
        return filter_regex(regex, lines) if regex else lines


def create_scheduler(session_name: str, **kwargs: Any) -> LocalScheduler:
    """The factory the plugin registry calls: ``create_scheduler(session_name, state_dir=...)``.

    Other keyword arguments (given to every scheduler factory by some callers) are ignored.
    """
    state_dir = kwargs.get("state_dir")
    return LocalScheduler(session_name, state_dir=str(state_dir) if state_dir else None)


if TYPE_CHECKING:  # the type checker proves the factory has the contract's shape
    from torchx.schedulers.api import SchedulerFactory

    _FACTORY: SchedulerFactory = create_scheduler
