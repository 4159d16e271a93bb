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
starts one small detached supervisor per app (``torchx.schedulers.local.supervisor``)
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
  is created fresh and private (see ``torchx.schedulers.local.writing.make_log_dir``).

Replica environment: the launcher's environment, then ``TORCHX_RANK0_HOST=localhost``
(the ``rank0_env`` macro names it), ``TORCHX_APP_ID``, ``TORCHX_ROLE_NAME``, ``TORCHX_REPLICA_ID``, ``PYTHONUNBUFFERED=1``,
``TORCHX_RDZV_PORT`` (a free port of the app's own, for ``dist.ddp``'s rendezvous), then the
role's own ``env`` (which wins; the submit pipeline gives it ``TORCHX_JOB_ID``, the app's
handle), then ``TORCHELASTIC_ERROR_FILE`` (``error.json`` in the
replica's log directory, unless the role set it: read back as a failed replica's
``structured_error_msg``); the launching Python's ``bin`` directory is appended to
``PATH`` when missing, so the console scripts of a venv that was not activated
(``torchrun``) are found. The working directory is the role's image, which must be
a directory (an empty image means the directory ``submit_dryrun`` ran in);
``${img_root}`` names it.

Refused at dryrun, before anything is written (``torchx.schedulers.local.checks``):
two roles with one name, an env key with ``=``, a NUL in an argument or env value, an
argument that is not a string, a negative ``max_retries``, an image that is not a
directory.

Upstream's other names are here too: :class:`~torchx.schedulers.local.options.LocalOpts`
(the run options), :class:`~torchx.schedulers.local.images.ReplicaParam` (what
``ImageProvider.get_replica_param`` returns), and, imported on first use,
``PopenRequest``, ``LogIterator`` and ``SignalException``
(:mod:`torchx.schedulers.local.classic`).

Linux only: it relies on ``/proc``, process groups, sessions and ``prctl``. On another
platform ``schedule`` raises :class:`SchedulerError` saying so (dry runs work anywhere).
"""

from __future__ import annotations

import builtins
import os
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any

from torchx.schedulers.contract.api import (
    DescribeAppResponse,
    ListAppResponse,
    Scheduler,
    Stream,
    filter_regex,
)
from torchx.schedulers.contract.errors import InvalidAppIdError, SchedulerError
from torchx.schedulers.contract.states import to_app_state
from torchx.schedulers.helpers.ids import validate_app_id
from torchx.schedulers.local import records as _rec
from torchx.schedulers.local import state as _st
from torchx.schedulers.local.images import (
    CWDImageProvider,
    ImageProvider,
    LocalDirectoryImageProvider,
    ReplicaParam,
)
from torchx.schedulers.local.launch import READY_TIMEOUT
from torchx.schedulers.local.options import LocalOpts
from torchx.schedulers.local.reading import SharedRecords
from torchx.schedulers.local.request import RANK0_ENV, LocalReplica, LocalRequest, LocalRole
from torchx.specs import AppDef, AppDryRunInfo, AppState, CfgVal, SpecError

__all__ = [
    "CWDImageProvider",
    "ImageProvider",
    "InvalidAppIdException",
    "LocalDirectoryImageProvider",
    "LocalOpts",
    "LocalReplica",
    "LocalRequest",
    "LocalRole",
    "LocalScheduler",
    "LogIterator",
    "PopenRequest",
    "ReplicaParam",
    "SignalException",
    "create_scheduler",
    "default_state_dir",
]

#: A record with no supervisor pid this long after its creation was never started.
START_TIMEOUT = _rec.START_TIMEOUT
#: The records hold states by name; a name this release does not know is UNKNOWN.
_APP_STATES = AppState.__members__
#: Kept importable from here: the rank-0 host variable, and how long schedule waits.
__all__ += ["RANK0_ENV", "READY_TIMEOUT"]

default_state_dir = _st.default_state_dir


class InvalidAppIdException(InvalidAppIdError, SpecError):
    """An app id that is not of the form the local scheduler gives out (``name-xxxxxxxxxx``).

    The local scheduler's name for :class:`~torchx.schedulers.contract.errors.InvalidAppIdError`.
    """


def _check_app_id(app_id: str) -> str:
    return validate_app_id(app_id, what="local app id", error=InvalidAppIdException)


class LocalScheduler(Scheduler[Mapping[str, CfgVal]]):
    """Runs each app as local processes under a detached supervisor; see the module docs.

    Each job has its own module under ``torchx.schedulers.local``: the run options
    (``options``: :class:`~torchx.schedulers.local.options.LocalOpts`, this scheduler's
    ``opts_class``), the dry run (``request``), launching (``launch``, ``writing``),
    reading (``reading``, ``records``), cancel and delete (``control``), logs
    (``logs``); this class ties them to the Scheduler contract.

    Args:
        session_name: the session handles carry (any session finds any app)
        image_provider_class: called with the run options at each dry run, gives the
            :class:`ImageProvider` that says where each role runs and what
            (:class:`LocalDirectoryImageProvider`, :class:`CWDImageProvider`, or your
            own); default: each replica runs in its image directory, its entrypoint as
            given
        cache_size: accepted as upstream's; apps are kept on disk, not in memory, so it
            limits nothing (the ``retain_last`` run option bounds what is kept)
        extra_paths: directories put first on every replica's ``PATH``
        state_dir: where records live; default :func:`default_state_dir`
    """

    opts_class = LocalOpts

    def __init__(
        self,
        session_name: str,
        image_provider_class: Callable[[Mapping[str, CfgVal]], ImageProvider] | None = None,
        cache_size: int = 100,
        extra_paths: builtins.list[str] | None = None,
        *,
        state_dir: str | None = None,
    ) -> None:
        super().__init__("local", session_name)
        if isinstance(cache_size, bool) or not isinstance(cache_size, int) or cache_size <= 0:
            raise ValueError(f"cache_size must be a whole number > 0, got {cache_size!r}")
        if image_provider_class is not None and not callable(image_provider_class):
            raise TypeError(
                f"image_provider_class must be a class (or function) taking the run options "
                f"and returning an ImageProvider, got {image_provider_class!r}"
            )
        self.image_provider_class = image_provider_class
        self.cache_size = cache_size
        self.extra_paths = list(extra_paths or [])
        self.state_dir = os.path.abspath(state_dir) if state_dir else default_state_dir()
        self._shared = SharedRecords()

    def _validate(self, app: AppDef, scheduler: str, cfg: Mapping[str, CfgVal]) -> None:
        """Accepts roles without a resource: local processes are not given resources.

        (Only ``resource.gpu`` matters, with ``auto_set_cuda_visible_devices``.)
        """

    def _submit_dryrun(self, app: AppDef, cfg: Mapping[str, CfgVal]) -> AppDryRunInfo[Any]:
        from torchx.schedulers.local.request import build_request

        provider = self.image_provider_class(cfg) if self.image_provider_class else None
        request = build_request(app, cfg, self.state_dir, provider, self.extra_paths)
        return AppDryRunInfo(request, str)

    def schedule(self, dryrun_info: AppDryRunInfo[Any]) -> str:
        """Starts the app's supervisor and returns the app id once it has reported in.

        The record keeps the name the app was submitted under (``dryrun_info.scheduler``:
        ``local_cwd`` when the Runner was asked for that name), so that :meth:`list`
        gives back the handle its user was given.
        """
        from torchx.schedulers.local.launch import schedule

        request: LocalRequest = dryrun_info.request
        app_id = _check_app_id(request.app_id)
        try:
            submitted_as = dryrun_info.scheduler
        except SpecError:  # an info not made by a dry run: the launch refuses it anyway
            submitted_as = self.backend
        schedule(request, dryrun_info.app, submitted_as)
        return app_id

    # -- reading records --------------------------------------------------------------------

    def _app_dir(self, app_id: str) -> str:
        """The app's record directory: in this state directory, or where its link points."""
        return _rec.app_dir(self.state_dir, _check_app_id(app_id))

    def _link_paths(self, app_id: str) -> list[str]:
        """Where a link to the app may be: this state directory's, then the default one's."""
        return _rec.link_paths(self.state_dir, app_id)

    def _state(self, app_id: str) -> dict[str, Any] | None:
        app_dir = self._app_dir(app_id)
        state = _rec.read_state(app_dir)
        return None if state is None else _rec.settle(app_dir, state)

    def _shared_state(self, app_id: str) -> dict[str, Any] | None:
        """The app's settled record, shared by its readers (see :class:`SharedRecords`)."""
        return self._shared.get(app_id, self._app_dir, self._state)

    def exists(self, app_id: str) -> bool:
        return os.path.exists(os.path.join(self._app_dir(app_id), "state.json"))

    def describe(self, app_id: str) -> DescribeAppResponse | None:
        """The app's state, per-replica states and exit codes, and the exact AppDef submitted.

        ``name``, ``roles`` and ``metadata`` are the submitted AppDef's, untouched;
        ``ui_url`` is the ``file://`` URL of the app's log directory.
        """
        from torchx.schedulers.local.reading import describe_response

        app_dir = self._app_dir(app_id)
        state = self._state(app_id)
        if state is None:
            return None
        return describe_response(app_id, app_dir, state)

    def list(self, cfg: Mapping[str, CfgVal] | None = None) -> list[ListAppResponse]:
        """Every app in the state directory (and the ones linked from it), newest first.

        Each ``app_handle`` names the scheduler the app was submitted under (``local``
        or ``local_cwd``: one scheduler, two names), as recorded at :meth:`schedule`;
        apps recorded before that was kept are ``local``.

        The ``state_dir`` run option, if given (``torchx list -s local -cfg
        state_dir=DIR``), names another state directory to list: the apps run there.
        An app whose record this version cannot read is listed as UNKNOWN.
        """
        given = LocalOpts.given(cfg).get("state_dir")  # checked as a submission's are
        state_dir = os.path.abspath(given) if given else self.state_dir
        return [
            ListAppResponse(
                app_id=app_id,
                state=to_app_state(state, _APP_STATES),
                app_handle=f"{submitted_as}://{self.session_name}/{app_id}",
                name=name,
                start_time=start,
                end_time=end,
            )
            for app_id, state, name, start, end, submitted_as in _rec.list_rows(
                state_dir, _rec.settle
            )
        ]

    def _app_dirs(self) -> Iterable[tuple[str, str]]:
        """(app id, record directory) of every app here, then of every linked app."""
        return _rec.app_dirs(self.state_dir)

    # -- cancel and delete ------------------------------------------------------------------

    def _cancel_existing(self, app_id: str) -> None:
        """Records the cancel and signals the supervisor (see ``.control.cancel``)."""
        from torchx.schedulers.local.control import cancel

        cancel(self._app_dir(app_id), self._state(app_id))

    def delete(self, app_id: str, force: bool = False) -> None:
        """Removes the app's records and logs; does nothing for an unknown app.

        Refuses an app that is still running (SchedulerError) unless ``force``, which
        kills it first (SIGKILL, no grace period). An app whose record is unreadable (cut
        short, say) can only be deleted, and is: its processes cannot be told from a
        stranger's, so none is signalled.
        """
        from torchx.schedulers.local.control import delete

        try:
            known = self._state(app_id)
        except _rec.UnreadableRecord:
            known = {}
        delete(app_id, self._app_dir(app_id), self._link_paths(app_id), known, force)

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
        from torchx.schedulers.local.retention import parse_duration, prune

        keep_for = parse_duration(older_than) if isinstance(older_than, str) else older_than
        if keep_for is None and keep_last is None:
            raise ValueError("prune() needs older_than or keep_last: say what to keep")
        state_dirs = {self.state_dir}
        for _, app_dir in self._app_dirs():
            state_dirs.add(os.path.dirname(os.path.dirname(app_dir)))
        removed: builtins.list[str] = []
        for state_dir in sorted(state_dirs):
            _rec.check_dirs(state_dir)
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
        lines, which printers use. See ``torchx.schedulers.local.logs``.
        """
        from torchx.schedulers.local import logs

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

    ``image_provider_class``, ``cache_size`` and ``extra_paths`` are passed on to
    :class:`LocalScheduler`, as upstream's factory does; other keyword arguments (given to
    every scheduler factory by some callers) are ignored.
    """
    state_dir = kwargs.get("state_dir")
    return LocalScheduler(
        session_name,
        image_provider_class=kwargs.get("image_provider_class"),
        cache_size=kwargs.get("cache_size", 100),
        extra_paths=kwargs.get("extra_paths"),
        state_dir=str(state_dir) if state_dir else None,
    )


if TYPE_CHECKING:  # the type checker proves the factory has the contract's shape
    from torchx.schedulers.contract.api import SchedulerFactory

    _FACTORY: SchedulerFactory = create_scheduler
    from torchx.schedulers.local.classic import LogIterator, PopenRequest, SignalException

#: Upstream's names that live in :mod:`torchx.schedulers.local.classic`, imported on first use.
_CLASSIC = frozenset({"LogIterator", "PopenRequest", "SignalException"})


def __getattr__(name: str) -> Any:
    if name in _CLASSIC:
        from torchx.schedulers.local import classic

        return getattr(classic, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
