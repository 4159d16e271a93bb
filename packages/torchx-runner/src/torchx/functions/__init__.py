"""Python functions as apps, with their results back: ``submit(fn, *args).result()``.

::

    from torchx.functions import submit

    future = submit(pow, 2, 10)  # one replica on the local scheduler
    print(future.handle)  # local://torchx/pow-...: `torchx status/log` follow it
    print(future.result(timeout=60))  # 1024

:func:`submit` runs ``fn(*args, **kwargs)`` as an app of one replica through the
Runner and returns an :class:`AppFuture`, a :class:`concurrent.futures.Future` that
also carries the app's handle. The call and its result travel through a job directory
the submitter and the replica share (see the torchx-runner README, "Python functions
as apps"): on ``local`` in the temporary directory, on ``slurm`` and ``lsf`` in the
scheduler's job directory (or ``channel_dir``). On ``docker``, ``kubernetes``,
``kubernetes_mcad``, ``aws_batch`` and ``aws_sagemaker``, which share no disk, the call travels in the role's environment and the
result comes back in the replica's log (``torchx.functions._logs``). :func:`map_array`
runs one call per item, at most ``parallelism`` at once.

Importing :mod:`torchx.runner` does not import this module.
"""

from __future__ import annotations

import concurrent.futures
import json
import os
import pickle
import re
import shutil
import sys
import threading
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, TypeVar

from torchx.functions import _jobdir, _logs
from torchx.functions._channel import META, PAYLOAD, RESULT, write_atomically
from torchx.functions._jobdir import JobDirError
from torchx.functions._logs import CallTooLarge

TYPE_CHECKING = False
if TYPE_CHECKING:
    from torchx.runner.api import Runner
    from torchx.specs import AppStatus, CfgVal, Resource

__all__ = [
    "AppFuture",
    "CallTooLarge",
    "JobDirError",
    "NoResult",
    "RemoteLoadError",
    "RemoteTraceback",
    "UnexpectedRemoteError",
    "UnsupportedSchedulerError",
    "map_array",
    "submit",
]

T = TypeVar("T")

#: Longest wait between two status polls of the watcher (seconds); the Runner's
#: ``wait`` polls sooner at first and wakes on a change where the scheduler can.
_WAIT_INTERVAL = 2.0

_ROLE = "fn"

#: The replica's memory on every scheduler but ``local`` when no ``resource`` is given
#: (with 1 CPU, no GPU): those schedulers need one; ``local`` runs without a limit.
DEFAULT_MEM_MB = 1024


class RemoteTraceback(Exception):
    """The replica's formatted traceback, the ``__cause__`` of a re-raised exception.

    Its ``str`` is the remote traceback text, so a local traceback print shows both:
    where the call failed on the replica, then where the caller asked for the result.
    """

    def __init__(self, tb: str) -> None:
        super().__init__(tb)
        self.tb = tb

    def __str__(self) -> str:
        return self.tb


class NoResult(RuntimeError):
    """The replica ended without a result: cancelled, killed, out of memory, or it
    exited before the worker wrote one. The message names the app's final state, the
    replica's exit code where the scheduler knows it, and the ``torchx log`` command
    that shows what the replica printed."""

    def __init__(self, handle: str, state: str, exit_code: int | None, detail: str = "") -> None:
        code = f", exit code {exit_code}" if exit_code is not None else ""
        more = f": {detail}" if detail else ""
        super().__init__(
            f"{handle} ended {state}{code} without a result{more}; see: torchx log {handle}"
        )
        self.handle = handle
        self.state = state
        self.exit_code = exit_code


class RemoteLoadError(RuntimeError):
    """The replica could not load the call: another Python minor version, or the
    function's module is not importable there. The message is the worker's one line."""


class UnexpectedRemoteError(RuntimeError):
    """A remote exception that could not be pickled back: its type name and message."""


class UnsupportedSchedulerError(ValueError):
    """:func:`submit` was asked for a scheduler it cannot bring a result back from."""


def _importable(fn: object) -> bool:
    """True when plain pickle can send ``fn`` by reference and a replica can import it:
    a module-level function (or class) of a module other than ``__main__``."""
    module = getattr(fn, "__module__", None)
    qualname = getattr(fn, "__qualname__", None)
    if not module or not qualname or module == "__main__" or "<" in qualname:
        return False
    obj: object = sys.modules.get(module)
    for part in qualname.split("."):
        obj = getattr(obj, part, None)
    return obj is fn


def _cloudpickle() -> Any | None:
    try:
        import cloudpickle  # type: ignore[import-not-found,unused-ignore]
    except ImportError:
        return None
    return cloudpickle


def _by_value(fn: object, cloud: Any | None) -> bool:
    """True when ``fn``'s module is registered with
    ``cloudpickle.register_pickle_by_value``: the replica's image lacks that module."""
    module = str(getattr(fn, "__module__", None) or "")
    if cloud is None or not module:
        return False
    registered: set[str] = set(cloud.list_registry_pickle_by_value())
    return any(module == name or module.startswith(f"{name}.") for name in registered)


def _payload(fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> bytes:
    """``(fn, args, kwargs)`` pickled: by reference when ``fn`` is importable (and its
    module is not registered with cloudpickle to go by value), else by value with
    cloudpickle; refused in one line when neither can work."""
    call = (fn, args, kwargs)
    cloud = _cloudpickle()
    if _importable(fn) and not _by_value(fn, cloud):
        try:
            return pickle.dumps(call, protocol=pickle.HIGHEST_PROTOCOL)
        except Exception as e:
            if cloud is None:
                raise ValueError(
                    f"the arguments of {_name_of(fn)} cannot be pickled ({e}):"
                    " install torchx-runner[functions] (cloudpickle) to send them by value"
                ) from None
    elif cloud is None:
        raise ValueError(
            f"{_name_of(fn)} is not importable on the replica (defined in __main__, a"
            " closure or a lambda): install torchx-runner[functions] (cloudpickle) to send"
            " it by value, or move it to a module"
        )
    data: bytes = cloud.dumps(call, protocol=pickle.HIGHEST_PROTOCOL)
    return data


def _name_of(fn: object) -> str:
    return str(getattr(fn, "__qualname__", None) or type(fn).__name__)


def _app_name(fn: object, name: str | None) -> str:
    if name:
        return name
    raw = getattr(fn, "__name__", None) or type(fn).__name__
    cleaned = re.sub(r"[^a-z0-9-]+", "-", raw.lower()).strip("-")
    return cleaned[:40] or "fn"


class AppFuture(concurrent.futures.Future[T]):
    """The future of one :func:`submit` call; ``handle`` is its app's handle.

    A background thread follows the app with the Runner's ``wait`` (no faster than it
    polls) and settles the future when the app ends: the return value, the remote
    exception (its ``__cause__`` a :class:`RemoteTraceback`), or :class:`NoResult`.
    :meth:`cancel` cancels the app. ``running()`` is true until the app has ended.
    """

    def __init__(self, handle: str | None, job_dir: Path | None, token: str = "") -> None:
        super().__init__()
        #: the app's handle; None while a :func:`map_array` call waits for its turn
        self.handle = handle
        #: the call's job directory on a shared disk; None where the log carries it
        self.job_dir = job_dir
        #: where the log carries the result: the token of its frames
        self.token = token
        self._settle_lock = threading.RLock()
        self._on_end: Callable[[], None] | None = None
        self._watcher: threading.Thread | None = None

    def _start(self) -> None:
        """Starts the thread that follows the app (once it has a handle)."""
        self._watcher = threading.Thread(
            target=self._watch, name=f"torchx.functions {self.handle}", daemon=True
        )
        self._watcher.start()

    def __repr__(self) -> str:
        return f"<AppFuture {self.handle} {self._state.lower()}>"

    def running(self) -> bool:
        return not self.done()

    def cancel(self) -> bool:
        """Cancels the app; True unless the app (and so this future) had already ended.

        The future reads cancelled at once; the app stops as the scheduler's ``cancel``
        stops it (on ``local``: SIGTERM, then SIGKILL after ``grace_period``).
        """
        from torchx.runner.api import get_runner

        with self._settle_lock:
            if self.done():
                return self.cancelled()
            if self.handle is None:  # a map_array call not started yet: it never will be
                return super().cancel()
            with get_runner() as runner:
                status = runner.status(self.handle)
                if status is not None and status.is_terminal():
                    return False  # ended: the watcher is settling it with the outcome
                runner.cancel(self.handle)
            return super().cancel()

    def _watch(self) -> None:
        from torchx.runner.api import get_runner

        assert self.handle is not None
        try:
            # after cancel() too: the app has ended only when the scheduler says so
            with get_runner() as runner:
                status = runner.wait(self.handle, wait_interval=_WAIT_INTERVAL)
                self._settle(status, runner)
        except BaseException as e:  # never leave the future pending forever
            with self._settle_lock:
                if not self.done():
                    self.set_exception(e)
        finally:
            if self.job_dir is not None:
                shutil.rmtree(self.job_dir, ignore_errors=True)
            if self._on_end is not None:
                self._on_end()

    def _outcome(self, runner: Runner | None) -> tuple[bytes | None, str]:
        """The pickled outcome (None when there is none) and why it is missing."""
        assert self.handle is not None
        if self.job_dir is not None:
            path = self.job_dir / RESULT
            data = path.read_bytes() if path.exists() else None
            # gone before the caller hears: a script may exit as soon as result() returns
            shutil.rmtree(self.job_dir, ignore_errors=True)
            return data, ""
        from torchx.runner.api import get_runner

        if runner is None:
            with get_runner() as own:
                return self._outcome(own)
        # stdout and stderr together: Kubernetes, AWS Batch and SageMaker keep one stream;
        # the frames are found by their marker and token among the other lines
        handle = self.handle
        patience = _logs.LATE_LOGS.get(handle.split("://", 1)[0], 0.0)
        data, seen = _logs.read(lambda: runner.log_lines(handle, _ROLE, 0), self.token, patience)
        return data, "its result frames in the log are incomplete or corrupt" if seen else ""

    def _settle(self, status: AppStatus | None, runner: Runner | None = None) -> None:
        """Sets the outcome from the channel, else :class:`NoResult` from ``status``."""
        assert self.handle is not None
        with self._settle_lock:
            if self.done():  # cancelled meanwhile
                return
            data, why = self._outcome(runner)
            if data is None:
                self.set_exception(_no_result(self.handle, status, why))
                return
            self._set_outcome(data)

    def _set_outcome(self, data: bytes) -> None:
        """Settles the future from the worker's ``result.pkl`` (see ``_channel``)."""
        with self._settle_lock:
            outcome = pickle.loads(data)
            kind = outcome[0]
            if kind == "ok":
                self.set_result(outcome[1])
            elif kind == "raised":
                exc, tb = outcome[1], outcome[2]
                exc.__cause__ = RemoteTraceback(tb)
                self.set_exception(exc)
            elif kind == "raised_text":
                err = UnexpectedRemoteError(f"{outcome[1]}: {outcome[2]}")
                err.__cause__ = RemoteTraceback(outcome[3])
                self.set_exception(err)
            else:
                self.set_exception(RemoteLoadError(f"{self.handle}: {outcome[1]}"))


def _no_result(handle: str, status: AppStatus | None, detail: str = "") -> NoResult:
    if status is None:
        return NoResult(handle, "UNKNOWN", None, "the scheduler no longer knows the app")
    exit_code: int | None = None
    for role in status.roles:
        for replica in role.replicas:
            if replica.exit_code is not None:
                exit_code = replica.exit_code
    return NoResult(handle, status.state.name, exit_code, detail)


def submit(
    fn: Callable[..., T],
    *args: Any,
    scheduler: str = "local",
    cfg: Mapping[str, CfgVal] | None = None,
    resource: Resource | None = None,
    image: str | None = None,
    name: str | None = None,
    channel_dir: str | os.PathLike[str] | None = None,
    **kwargs: Any,
) -> AppFuture[T]:
    """Runs ``fn(*args, **kwargs)`` as an app of one replica; returns its future.

    ``fn`` travels by reference (plain :mod:`pickle`) when it is a module-level function
    of an importable module (and that module is not registered with
    ``cloudpickle.register_pickle_by_value``), else by value with cloudpickle (``pip
    install 'torchx-runner[functions]'``; without it such a function is refused here,
    before anything is submitted). On ``local``, Slurm and LSF the replica runs ``python
    -m torchx.functions._worker`` with this interpreter (``sys.executable``, so on Slurm
    and LSF a path the nodes see too) in ``image``, with this process's ``sys.path`` put
    first on its own, so whatever imports here imports there. On ``docker``,
    ``kubernetes``, ``kubernetes_mcad``, ``aws_batch`` and ``aws_sagemaker`` it runs the
    image's ``python3`` with the worker's source (``python3 -c``; on SageMaker in
    pieces of the environment): the image needs Python of this minor version, cloudpickle
    for a function sent by value, and the function's module for one sent by reference;
    no torchx.

    ``scheduler`` is ``local`` (alias ``local_cwd``), ``slurm``, ``lsf``, ``docker``,
    ``kubernetes``, ``kubernetes_mcad``, ``aws_batch`` or ``aws_sagemaker``; ``cfg`` is as for
    :meth:`torchx.runner.api.Runner.run`; ``resource`` is the replica's
    :class:`~torchx.specs.Resource` (1 CPU and ``DEFAULT_MEM_MB`` by default on every
    scheduler but ``local``); ``image`` is ignored on ``local``, on Slurm and LSF the
    directory the replica runs in (default: the current directory), and on the others
    the container image (required); ``name`` is the app's name (default: the
    function's). ``channel_dir`` is the directory the call's private job directory is
    made in (default: the temporary directory on ``local``, ``.torchx-functions`` in the
    scheduler's job directory on Slurm and LSF; refused where the log carries the call).

    Raises, before anything is submitted: :class:`UnsupportedSchedulerError` for another
    scheduler, :class:`~torchx.specs.errors.UnknownSchedulerError` when its plugin is not
    installed, :class:`JobDirError` when the job directory cannot be made,
    :class:`CallTooLarge` when the call is over the log channel's cap
    (``torchx.functions._logs.CALL_CAP``, 20 KiB), ``ValueError`` for an image that is
    not a directory on Slurm or LSF, or a missing image where the log carries the call.
    """
    if not callable(fn):
        raise TypeError(f"submit() needs a callable, got {type(fn).__name__}")
    target = _Target.check(scheduler, cfg, resource, image, channel_dir)
    data = _payload(fn, args, kwargs)
    target.check_size(fn, data)
    handle, job_dir, token = target.launch(data, _app_name(fn, name))
    future: AppFuture[T] = AppFuture(handle, job_dir, token)
    future._start()
    return future


def map_array(
    fn: Callable[[Any], T],
    iterable: Iterable[Any],
    parallelism: int,
    *,
    scheduler: str = "local",
    cfg: Mapping[str, CfgVal] | None = None,
    resource: Resource | None = None,
    image: str | None = None,
    name: str | None = None,
    channel_dir: str | os.PathLike[str] | None = None,
) -> list[AppFuture[T]]:
    """Runs ``fn(item)`` for each item as its own app, at most ``parallelism`` at once.

    Returns one :class:`AppFuture` per item, in the items' order, at once: every call is
    pickled first (a function that cannot travel is refused before anything starts).
    The other options are :func:`submit`'s, checked before anything starts.

    On ``slurm`` the items are one native job array, one app (``sbatch
    --array=0-(N-1)%parallelism``, the plugin's run option ``array_parallelism``): Slurm
    runs at most ``parallelism`` at once; item ``i`` is replica ``i`` of role ``fn``.
    Every future has the app's ``handle`` (``torchx log HANDLE/fn/I`` shows item ``I``)
    and settles as soon as its own array task has ended, from one status poll of the
    whole array; cancelling one future cancels its array task alone (``scancel
    JOBID_I``). The items' files are one job directory with a sub-directory per item.

    On ``local`` and ``lsf`` these are N apps named ``NAME-0`` ... ``NAME-{N-1}``: a
    background thread starts them in order, the next one when a running app has ended
    (as its scheduler reports it, cancelled ones included). A future whose app has not
    started yet has ``handle`` None; cancelling it means its app never starts.
    """
    if not callable(fn):
        raise TypeError(f"map_array() needs a callable, got {type(fn).__name__}")
    if isinstance(parallelism, bool) or not isinstance(parallelism, int) or parallelism < 1:
        raise ValueError(f"parallelism must be an int >= 1, got {parallelism!r}")
    target = _Target.check(scheduler, cfg, resource, image, channel_dir)
    payloads = [_payload(fn, (item,), {}) for item in iterable]
    for data in payloads:
        target.check_size(fn, data)
    base = _app_name(fn, name)
    if scheduler == "slurm" and payloads:
        from torchx.functions._array import map_slurm_array

        return map_slurm_array(
            _name_of(fn), payloads, parallelism, target, base, _ROLE, DEFAULT_MEM_MB
        )
    futures: list[AppFuture[T]] = [AppFuture(None, None) for _ in payloads]
    slots = threading.BoundedSemaphore(parallelism)

    def dispatch() -> None:
        for index, (future, data) in enumerate(zip(futures, payloads, strict=True)):
            slots.acquire()  # blocks until a running app has ended: no polling
            with future._settle_lock:
                if future.done():  # cancelled before its turn
                    slots.release()
                    continue
                try:
                    launched = target.launch(data, f"{base}-{index}")
                    future.handle, future.job_dir, future.token = launched
                except BaseException as e:
                    future.set_exception(e)
                    slots.release()
                    continue
                future._on_end = slots.release
                future._start()

    threading.Thread(target=dispatch, name=f"torchx.functions map {base}", daemon=True).start()
    return futures


class _Target:
    """Where and how the calls of one :func:`submit` or :func:`map_array` run, checked
    before anything is submitted. ``parent`` is None where the log carries the result."""

    def __init__(
        self,
        scheduler: str,
        cfg: Mapping[str, CfgVal] | None,
        resource: Resource | None,
        image: str,
        parent: Path | None,
    ) -> None:
        self.scheduler = scheduler
        self.cfg = cfg
        self.resource = resource
        self.image = image
        self.parent = parent

    @classmethod
    def check(
        cls,
        scheduler: str,
        cfg: Mapping[str, CfgVal] | None,
        resource: Resource | None,
        image: str | None,
        channel_dir: str | os.PathLike[str] | None,
    ) -> _Target:
        logs = scheduler in _logs.LOG_SCHEDULERS
        if not logs and not _jobdir.supported(scheduler):
            raise UnsupportedSchedulerError(
                "submit() supports the local, slurm, lsf, docker, kubernetes, kubernetes_mcad,"
                f" aws_batch and aws_sagemaker schedulers in this version, not {scheduler!r}"
            )
        if logs:
            if not image:
                raise ValueError(
                    f"submit() on {scheduler} needs image=: a container image with python3"
                    f" {sys.version_info[0]}.{sys.version_info[1]} (and cloudpickle for a"
                    " function sent by value)"
                )
            if channel_dir is not None:
                raise ValueError(
                    f"channel_dir is for schedulers with a shared disk: on {scheduler} the"
                    " result comes back through the replica's log"
                )
            role_image = image
        else:
            role_image = _jobdir.role_image(scheduler, image)
        if logs or scheduler in _jobdir.SHARED_DISK_SCHEDULERS:
            from torchx.runner.api import get_runner

            # its plugin must be installed: the Runner's one line naming the package,
            # before a directory is made for a call that cannot be submitted
            with get_runner() as runner:
                runner.scheduler_run_opts(scheduler)
        if logs:
            return cls(scheduler, cfg, resource, role_image, None)
        parent = _jobdir.channel_parent(scheduler, cfg, channel_dir)
        own_folder = channel_dir is None and scheduler in _jobdir.SHARED_DISK_SCHEDULERS
        _jobdir.prepare(parent, scheduler, own_folder=own_folder)
        return cls(scheduler, cfg, resource, role_image, parent)

    def check_size(self, fn: object, data: bytes) -> None:
        """:class:`CallTooLarge` when the log channel cannot carry this call."""
        if self.parent is None:
            _logs.check_size(_name_of(fn), _logs.call_env(self._meta(), data)[1], self.scheduler)

    def _meta(self) -> dict[str, Any]:
        # a replica without a shared disk sees none of this machine's paths
        paths = [] if self.parent is None else list(sys.path)
        return {"python": list(sys.version_info[:2]), "sys_path": paths}

    def launch(self, data: bytes, app_name: str) -> tuple[str, Path | None, str]:
        """Submits the app of one call: ``(handle, job_dir, token)``.

        On a shared disk ``data`` goes in a fresh job directory (removed again when the
        submit fails); through the log, in the role's environment (the frames' token).
        """
        from torchx.runner.api import get_runner
        from torchx.specs import AppDef, Resource, Role

        if self.parent is None:
            token, value = _logs.call_env(self._meta(), data)
            args, env = _logs.program(self.scheduler, value)
            role = Role(name=_ROLE, image=self.image, entrypoint=_logs.PYTHON, args=args, env=env)
            role.resource = self.resource or Resource(cpu=1, gpu=0, memMB=DEFAULT_MEM_MB)
            with get_runner() as runner:
                handle = _run(runner, AppDef(name=app_name, roles=[role]), self.scheduler, self.cfg)
            return handle, None, token
        job_dir = _jobdir.make(self.parent)
        try:
            write_atomically(job_dir / META, json.dumps(self._meta()).encode())
            write_atomically(job_dir / PAYLOAD, data)
            role = Role(
                name=_ROLE,
                image=self.image,
                entrypoint=sys.executable,
                args=["-m", "torchx.functions._worker", str(job_dir)],
            )
            if self.resource is not None:
                role.resource = self.resource
            elif self.scheduler in _jobdir.SHARED_DISK_SCHEDULERS:
                role.resource = Resource(cpu=1, gpu=0, memMB=DEFAULT_MEM_MB)
            app = AppDef(name=app_name, roles=[role])
            with get_runner() as runner:
                handle = _run(runner, app, self.scheduler, self.cfg)
        except BaseException:
            shutil.rmtree(job_dir, ignore_errors=True)
            raise
        return handle, job_dir, ""


def _run(runner: Runner, app: Any, scheduler: str, cfg: Mapping[str, CfgVal] | None) -> str:
    return str(runner.run(app, scheduler, cfg=cfg))
