"""The Scheduler contract: the one class every scheduler plugin subclasses.

A scheduler turns an :class:`~torchx.specs.AppDef` into its native request
(``submit_dryrun``), submits it (``schedule``), and answers for the app afterwards
by its id (``describe``, ``list``, ``cancel``, ``delete``, ``log_iter``). The Runner
drives schedulers only through this class; a plugin registers a factory
``create_scheduler(session_name, **kwargs) -> Scheduler`` through the
``torchx_schedulers`` hook.

The one submit pipeline is :meth:`Scheduler.prepare`: it resolves the run options
against :meth:`Scheduler.run_opts` (unknown, mistyped or missing options are one-line
errors), runs ``_pre_build_validate``, builds the workspace (only for a real
submission, never for a dry run), runs ``_validate`` and makes the request with
``submit_dryrun``. :meth:`Scheduler.submit` is ``schedule(prepare(...))``, and the
Runner calls ``prepare`` too, so what a plugin's tests exercise is what users run.

What a scheduler must guarantee:

* ``submit_dryrun`` has no side effects: nothing is created, nothing written to disk,
  the caller's AppDef is not changed. Its request is a plain, printable object.
* ``schedule`` either submits the whole app and returns its id, or raises after
  removing whatever it had created (no half-submitted apps). It finds the app, the
  resolved run options and the scheduler name on the dryrun info (``dryrun_info.app``,
  ``.cfg``, ``.scheduler``).
* ``describe`` returns None for an app it does not know, and never blocks for long.
  Each replica's status carries its own exit code, not another replica's.
* Every replica runs with its role's ``env`` (macros substituted), on top of what the
  scheduler sets. The role's env reaches ``_submit_dryrun`` with ``TORCHX_JOB_ID`` set
  to ``{scheduler}://{session}/${app_id}`` (the app's handle once the ``app_id`` macro
  is substituted): a plugin sets nothing for it.
* An app is SUCCEEDED only when every replica of every role exited 0. One replica that
  fails (exits non-zero, or dies not by ``cancel``) when its role has no retry left
  makes the app FAILED, however many others succeeded: the replicas still running are
  stopped (or left to finish), those that had ended keep their own state and exit
  code, and ``msg`` says which replica failed. With ``Role.max_retries = m``, a failure
  first restarts, as the role's ``retry_policy`` says, the failed replica
  (``REPLICA``), its role (``ROLE``) or the whole app (``APPLICATION``; a backend that
  can only restart more than asked, like Slurm's requeue of the whole job, does so),
  at most ``m`` times per role, each restart counted in ``num_restarts``. The app is
  then SUCCEEDED if a later attempt ends with every replica exited 0, and FAILED once
  a replica fails with no restart left (after ``m`` restarts of its role). A backend
  without retries fails the app at the first failure.
* ``cancel`` stops the app: once ``describe`` says CANCELLED, no replica runs any more
  (its output stops growing). A cancel issued right after ``schedule``, while the app
  is still SUBMITTED or PENDING, is not lost: the app never runs on to SUCCEEDED.
* ``list`` gives every app the scheduler knows (not only some), each with its state.
* A failure of the backend raises :class:`SchedulerError` with a one-line message; a
  transient one (timeout, throttling, 5xx) raises :class:`TransientSchedulerError` (or
  ``TimeoutError``/``ConnectionError``) so that the Runner retries it with backoff
  instead of reporting a failed app. Map the SDK's exceptions to these in one place,
  :meth:`Scheduler.classify_error` (see :mod:`torchx.schedulers.contract.errors`), and retry the
  plugin's own calls with :func:`torchx.schedulers.helpers.retry.call_with_retries` (whose
  docstring also states what a multi-step ``schedule`` may retry).

Run options: every method receives them as the resolved ``Mapping[str, CfgVal]``
(defaults filled in, types checked, canonical names); subclass
``Scheduler[Mapping[str, CfgVal]]`` to say so. (The type parameter is not used by the
contract: it stays so that upstream code subclassing ``Scheduler[MyOpts]`` still works,
but it does not change what is passed.) A scheduler declares its options once, as one
:class:`StructuredOpts` class (see :mod:`torchx.specs.structured_opts`), and names it
``opts_class``: :meth:`Scheduler.run_opts` is built from it, and :meth:`Scheduler.prepare`
resolves a cfg once into an instance of it (every field's check run), which is the
mapping ``_submit_dryrun`` gets::

    @dataclass(frozen=True, kw_only=True)
    class MyOpts(StructuredOpts):
        queue: str = opt("default", help="the queue to submit to", check=check_queue)

    class MyScheduler(Scheduler[Mapping[str, CfgVal]]):
        opts_class = MyOpts

        def _submit_dryrun(self, app: AppDef, cfg: Mapping[str, CfgVal]) -> AppDryRunInfo[Req]:
            opts = MyOpts.of(cfg)  # the instance prepare made: opts.queue is a checked str
            ...

``list(cfg)`` reads the options given with ``MyOpts.given(cfg)`` (the same checks, no
defaults).

Options of several StructuredOpts combine with ``|``, and the result reads like a
mapping:

>>> from torchx.schedulers.contract.api import StructuredOpts
>>> from dataclasses import dataclass
>>> @dataclass
... class OptsA(StructuredOpts):
...     foo: str = "a"
>>> @dataclass
... class OptsB(StructuredOpts):
...     bar: int = 1
>>> cfg = OptsA(foo="x") | OptsB(bar=2)
>>> cfg["foo"], cfg["bar"]
('x', 2)
"""

from __future__ import annotations

import abc
import copy
import re
from collections.abc import Iterable, Iterator, Mapping
from enum import StrEnum
from typing import TYPE_CHECKING, Any, ClassVar, Generic, Protocol, TypeVar

import attrs

# re-exported for upstream's imports; their home is errors (import them from there)
from torchx.schedulers.contract.errors import SchedulerError, TransientSchedulerError
from torchx.specs import (
    NONE,
    NULL_RESOURCE,
    AppDef,
    AppDryRunInfo,
    AppState,
    AppStatus,
    CfgVal,
    Role,
    RoleStatus,
    SpecError,
    StructuredOpts,
    Workspace,
    runopts,
)
from torchx.workspace.api import WorkspaceMixin

if TYPE_CHECKING:
    from datetime import datetime  # annotations only: a scheduler's start need not load it

__all__ = [
    "DescribeAppResponse",
    "ListAppResponse",
    "Scheduler",
    "SchedulerError",
    "SchedulerFactory",
    "Stream",
    "StructuredOpts",
    "TransientSchedulerError",
    "WorkspaceMixin",
    "filter_regex",
    "split_lines",
    "split_lines_iterator",
]

T = TypeVar("T")


class Stream(StrEnum):
    """Which output stream of a replica ``log_iter`` reads."""

    STDOUT = "stdout"
    STDERR = "stderr"
    COMBINED = "combined"


@attrs.define(eq=True)
class DescribeAppResponse:
    """What ``Scheduler.describe(app_id)`` returns: the app's status and, where known, its roles.

    For schedulers that keep the submitted AppDef (the local scheduler does), ``name``,
    ``roles`` and ``metadata`` are that AppDef's (the app's own, never another's), so
    ``Runner.describe`` gives back exactly what was submitted, ready to run again. A
    scheduler keeps its own bookkeeping out of ``metadata`` (``ui_url`` says where to
    look at the app). One whose backend does not keep the AppDef declares
    ``Capability.DESCRIBE_APPDEF`` missing: ``roles`` is then empty and ``name`` the
    app's name or the backend's job name made from it.

    ``name`` is not in upstream TorchX's response; it defaults to ``""`` (unknown), in
    which case ``Runner.describe`` names the AppDef by its app id, as upstream does.
    Neither are ``start_time`` and ``end_time``: when the app started (or was submitted,
    where the backend cannot tell) and ended, in seconds since the epoch, None where
    unknown or not yet; ``torchx status`` and ``list`` show them
    (``AppStatus.start_time``/``end_time``).

    Nor is ``env``: the environment the app's replicas run with, as far as the backend
    tells it (docker: each inspected container's ``Config.Env``), where it holds more
    than the roles' env (run options such as docker's ``env`` and ``copy_env``, or
    SageMaker's ``environment``); empty where the backend cannot tell. ``torchx status``
    masks the values of its secret-looking names wherever they show (a failed app's
    stderr quoted in its message), as it masks the roles' env
    (``Runner.status_and_envs``). A value that is secret whatever its variable's name
    (the kubernetes schedulers' values read from a Secret for ``secret_env``) is
    reported under a name that starts with ``secret:`` (``secret:hf-creds/token``), which
    every masker that goes by names treats as secret: no field of its own is needed.

    Nor is ``run_options``: the run options (cfg) the app was submitted with, resolved,
    as the scheduler keeps them beside the AppDef (:mod:`torchx.specs.appdef_json`):
    plain JSON values, keys sorted, masked when written
    (:func:`torchx.specs.secrets.masked_run_options`: never a secret's value). Empty
    where unknown: an app submitted by an older release, or a backend that declares
    ``Capability.DESCRIBE_RUN_OPTIONS`` missing. It defaults to empty, so schedulers
    written before it keep working.
    """

    app_id: str = "<NOT_SET>"
    state: AppState = AppState.UNSUBMITTED
    num_restarts: int = -1
    msg: str = NONE
    structured_error_msg: str = NONE
    ui_url: str | None = None
    metadata: dict[str, str] = attrs.field(factory=dict)
    roles_statuses: list[RoleStatus] = attrs.field(factory=list)
    roles: list[Role] = attrs.field(factory=list)
    name: str = ""
    start_time: float | None = None
    end_time: float | None = None
    env: dict[str, str] = attrs.field(factory=dict)
    run_options: dict[str, Any] = attrs.field(factory=dict)

    def app_status(self) -> AppStatus:
        """The app's status this answer says (what ``Runner.status`` returns, before a
        FAILED app's errors are looked for)."""
        return AppStatus(
            state=self.state,
            num_restarts=self.num_restarts,
            msg=self.msg,
            structured_error_msg=self.structured_error_msg,
            ui_url=self.ui_url,
            roles=self.roles_statuses,
            start_time=self.start_time,
            end_time=self.end_time,
        )


@attrs.define(eq=True)
class ListAppResponse:
    """One app in the answer of ``Scheduler.list()`` / ``Runner.list()``.

    ``app_handle`` is filled in by the Runner (``{scheduler}://{session}/{app_id}``,
    ``scheduler`` the name listed). A scheduler registered under several names that
    records the one each app was submitted under (the local scheduler: ``local``,
    ``local_cwd``) may fill it in itself: the Runner keeps that name when it is another
    installed name of the same scheduler, and ignores any other.
    ``start_time``/``end_time`` as in :class:`DescribeAppResponse` (None where unknown).
    """

    app_id: str
    state: AppState
    app_handle: str = "<NOT_SET>"
    name: str = ""
    start_time: float | None = None
    end_time: float | None = None

    def __hash__(self) -> int:
        return hash((self.app_id, self.app_handle, self.state))


class Scheduler(abc.ABC, Generic[T]):
    """An interface to one scheduler backend. Implement the ``@abc.abstractmethod`` s.

    The type parameter ``T`` is not used by the contract (run options always arrive
    as the resolved ``Mapping[str, CfgVal]``); it stays so that upstream code written
    as ``class MyScheduler(Scheduler[MyOpts])`` keeps working. New code writes
    ``Scheduler[Mapping[str, CfgVal]]``, which says what is passed.

    Args:
        backend: the scheduler's registered name (e.g. ``"local"``)
        session_name: the session the handles of this scheduler's apps carry
    """

    #: The scheduler's run options, declared once (a :class:`StructuredOpts` subclass):
    #: :meth:`run_opts` is built from it and ``_submit_dryrun`` gets an instance of it.
    #: None: the scheduler declares its options by overriding :meth:`_run_opts`.
    opts_class: ClassVar[type[StructuredOpts] | None] = None
    #: True for a scheduler that runs each role in a container of ``role.image`` (Docker,
    #: Kubernetes, AWS, LSF's ``docker run``): the Runner's dry run then refuses the image
    #: ``"."``, the built-in components' default, which names the launch directory.
    runs_container_images: ClassVar[bool] = False

    def __init__(self, backend: str, session_name: str) -> None:
        self.backend = backend
        self.session_name = session_name

    def close(self) -> None:
        """Frees local resources. Idempotent, never raises; the object is unusable afterwards.

        Only schedulers with local state need to override it.
        """

    def classify_error(self, e: BaseException) -> SchedulerError | None:
        """The contract's error that ``e`` (raised by the backend's SDK) stands for.

        The one place where a plugin says which of its SDK's exceptions are transient
        (a :class:`~torchx.schedulers.contract.errors.TransientSchedulerError`, with
        ``retry_after`` if the backend said how long to wait) and which are permanent (a
        :class:`~torchx.schedulers.contract.errors.SchedulerError` with a one-line message); None
        leaves ``e`` as it is (the default, for every exception). The Runner applies it to
        what escapes ``describe``, ``list``, ``cancel``, ``delete`` and opening a log, and
        retries the transient ones; pass it as ``classify`` to
        :func:`torchx.schedulers.helpers.retry.call_with_retries` around the plugin's own calls.
        ``TimeoutError`` and ``ConnectionError`` are transient without it.
        """
        del e
        return None

    # -- submitting -------------------------------------------------------------------------

    def prepare(
        self,
        app: AppDef,
        cfg: Mapping[str, CfgVal] | None = None,
        *,
        workspace: str | Workspace | None = None,
        dryrun: bool = False,
    ) -> AppDryRunInfo[Any]:
        """The one submit pipeline: everything up to the request, ready for :meth:`schedule`.

        In order:

        1. ``cfg`` is resolved against :meth:`run_opts`, strictly: an unknown option
           (naming the nearest valid one), a value of the wrong type or a missing
           required option raises :class:`~torchx.specs.InvalidRunConfigException`;
           with an ``opts_class``, the result becomes one instance of it (each field's
           check run, once), which is what the steps below and ``_submit_dryrun`` get
           (``info.cfg`` keeps the resolved dict);
        2. the app is copied (the caller's ``app`` is never changed) and ``workspace``,
           if given, becomes the first role's workspace. A scheduler that does not mix
           in :class:`WorkspaceMixin` ignores workspaces (logged at INFO);
        3. :meth:`_pre_build_validate`;
        4. the workspace of each role that has one is built
           (:meth:`WorkspaceMixin.build_workspaces`), only when ``dryrun`` is False.
           On a dry run nothing is built: the roles are pointed where the build will
           put the workspace if the scheduler can tell
           (:meth:`WorkspaceMixin.plan_workspaces`), and the returned info has
           ``needs_workspace_build`` set (:meth:`build_workspaces_of` finishes it);
        5. :meth:`_validate`;
        6. the request is made as :meth:`submit_dryrun` makes it (by the subclass's
           own ``submit_dryrun`` when it overrides it, as upstream wrappers do).

        ``Scheduler.submit`` and the Runner both go through here.
        """
        from torchx.schedulers.contract import _pipeline as pipeline

        own = type(self).submit_dryrun is not Scheduler.submit_dryrun
        return pipeline.prepare(self, app, cfg, workspace=workspace, dryrun=dryrun, own_dryrun=own)

    def build_workspaces_of(self, dryrun_info: AppDryRunInfo[Any]) -> AppDryRunInfo[Any]:
        """Finishes a dry run that left a workspace to build: builds it, makes the request.

        Builds on a copy of ``dryrun_info.app`` (the caller's info stays as it was) with
        the dry run's run options: they were resolved once, and are not again. When the
        build leaves the roles as the dry run planned them
        (:meth:`WorkspaceMixin.plan_workspaces`: a job directory, a content-addressed
        image), the dry run's request is kept: same request, same app id, no second
        ``submit_dryrun``. Otherwise the request is made again (steps 5 and 6 of
        :meth:`prepare`), as it has to name what was built, and a scheduler that picks
        the app id while making it picks a new one. An info without
        ``needs_workspace_build`` (nothing to build) comes back as it is.
        """
        from torchx.schedulers.contract import _pipeline as pipeline

        own = type(self).submit_dryrun is not Scheduler.submit_dryrun
        return pipeline.build_workspaces_of(self, dryrun_info, own_dryrun=own)

    def submit(
        self,
        app: AppDef,
        cfg: Mapping[str, CfgVal] | None = None,
        workspace: str | Workspace | None = None,
    ) -> str:
        """Validates, builds the workspace (if any), dry-runs and schedules ``app``.

        ``schedule(prepare(app, cfg, workspace=workspace))``; returns the app id.
        Mostly for tests: users go through the Runner, which adds handles, config
        files and retries.
        """
        return self.schedule(self.prepare(app, cfg, workspace=workspace))

    @abc.abstractmethod
    def schedule(self, dryrun_info: AppDryRunInfo[Any]) -> str:
        """Submits the request in ``dryrun_info`` and returns the app id.

        ``dryrun_info.app``, ``.cfg`` and ``.scheduler`` say what it was made from.
        On failure it removes whatever it had created, then raises.
        """

    def submit_dryrun(self, app: AppDef, cfg: Mapping[str, CfgVal]) -> AppDryRunInfo[Any]:
        """Returns the request that would be submitted, without submitting anything.

        ``cfg`` is resolved against :meth:`run_opts` (defaults filled in, types
        checked; unknown keys pass through); each role's ``pre_proc`` may then adjust
        the request. The caller's ``app`` is never modified: the scheduler works on a
        copy. No validation hook runs here: :meth:`prepare` is the full pipeline.
        """
        from torchx.schedulers.contract import _pipeline as pipeline

        resolved = self.run_opts_once().resolve(cfg)
        return pipeline.dryrun_of_copy(self, copy.deepcopy(app), resolved)

    @abc.abstractmethod
    def _submit_dryrun(self, app: AppDef, cfg: Mapping[str, CfgVal]) -> AppDryRunInfo[Any]:
        """Builds the native request for ``app`` (a private copy) with the resolved ``cfg``.

        With an ``opts_class``, ``cfg`` is an instance of it (read it as ``MyOpts.of(cfg)``,
        which takes a plain resolved dict too).
        """

    def run_opts(self) -> runopts:
        """The run options this scheduler accepts (its ``--help`` for ``run``)."""
        opts = self._run_opts()
        if isinstance(self, WorkspaceMixin):
            opts.update(self.workspace_opts())
        return opts

    def run_opts_once(self) -> runopts:
        """:meth:`run_opts`, built once per scheduler object: what cfgs are resolved against.

        :meth:`prepare` and the Runner (merging ``.torchxconfig``, listing) read this one
        schema instead of building it again for each step. Shared: never change it
        (:meth:`run_opts` gives a copy of one's own).
        """
        opts: runopts | None = self.__dict__.get("_run_opts_once")
        if opts is None:
            opts = self.run_opts()
            self.__dict__["_run_opts_once"] = opts
        return opts

    def _run_opts(self) -> runopts:
        """The scheduler's own options (``opts_class``'s; without one, none)."""
        return self.opts_class.as_runopts() if self.opts_class is not None else runopts()

    # -- following an app -------------------------------------------------------------------

    @abc.abstractmethod
    def describe(self, app_id: str) -> DescribeAppResponse | None:
        """The app's status (and roles where known), or None if the app does not exist."""

    @abc.abstractmethod
    def list(self, cfg: Mapping[str, CfgVal] | None = None) -> list[ListAppResponse]:
        """Every app this scheduler knows of (newest first where the backend can tell).

        ``cfg`` holds the run options the user gave to say where to look (``torchx list
        -s X -cfg namespace=team-a``, or the ``[X]`` section of ``.torchxconfig``), for
        backends that route by them: checked against :meth:`run_opts` and with canonical
        names, but, unlike a submission's, with no default filled in and no required
        option asked for (a default queue would narrow the listing). None or empty: list
        everything the backend shows this user.
        """

    def exists(self, app_id: str) -> bool:
        """True if the app was submitted and the scheduler still knows it."""
        return self.describe(app_id) is not None

    def wait_for_change(self, app_id: str, timeout: float) -> bool:
        """Blocks until the app's state may have changed, for at most ``timeout`` seconds.

        Optional. Whoever follows an app until it ends (``Runner.wait``, ``torchx run
        --wait``) calls it between two :meth:`describe` calls instead of sleeping, so a
        backend that can say when something happens (a blocking wait call, an event
        stream) is noticed as it happens rather than at the next poll. Return True once
        it has waited: something happened (a replica ended, say) or ``timeout`` passed,
        whichever came first; the caller then describes the app again. Return False, at
        once, where it cannot wait for this app: the caller sleeps instead. That is the
        default, so schedulers without such a call need nothing here.

        What an override keeps: it never waits beyond ``timeout`` (plus the time of a
        call to the backend); waking without a change is allowed (the caller only
        describes once more), sleeping through an app's end is not; errors may be
        raised (the caller treats them as "could not wait" and describes the app,
        which reports an outage as it always does). The conformance kit checks the
        first two against the real backend.
        """
        del app_id, timeout
        return False

    @abc.abstractmethod
    def _cancel_existing(self, app_id: str) -> None:
        """Kills an app that exists. Called only after :meth:`exists` said so."""

    def cancel(self, app_id: str) -> None:
        """Cancels the app; does nothing for an app that does not exist.

        Does not wait for the app to reach CANCELLED: use ``Runner.wait`` for that.
        """
        if self.exists(app_id):
            self._cancel_existing(app_id)

    def delete(self, app_id: str) -> None:
        """Removes the app from the scheduler's records, cancelling it first if it is live.

        Schedulers without persistent job records may treat it as :meth:`cancel`
        (the default).
        """
        if self.exists(app_id):
            self._delete_existing(app_id)

    def _delete_existing(self, app_id: str) -> None:
        self._cancel_existing(app_id)

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
        """Log lines of replica ``k`` of ``role_name``, each ending in ``\\n``.

        ``regex`` keeps matching lines; ``since``/``until`` bound them in time where
        the backend records times. With ``should_tail`` the iterator follows the log
        until the app reaches a terminal state, then ends once every line is read.
        ``streams`` selects stdout, stderr or both; an unsupported choice raises
        ``torchx.specs.SpecError`` (a ValueError) saying what is supported. Schedulers
        without logs raise NotImplementedError.
        """
        raise NotImplementedError(f"scheduler '{self.backend}' does not support log iteration")

    # -- validation -------------------------------------------------------------------------

    def _pre_build_validate(self, app: AppDef, scheduler: str, cfg: Mapping[str, CfgVal]) -> None:
        """Checks, before a workspace is built, that the app suits this scheduler.

        Called by :meth:`prepare` with its copy of the app and the resolved options;
        raise a ``ValueError`` (or :class:`~torchx.schedulers.contract.errors.SchedulerError`) with a
        one-line message.
        """

    def _validate(self, app: AppDef, scheduler: str, cfg: Mapping[str, CfgVal]) -> None:
        """Checks, after the workspace is built, that the app suits this scheduler.

        The default rejects roles that carry no resource at all.
        """
        for role in app.roles:
            if role.resource == NULL_RESOURCE:
                raise SpecError(
                    f"role '{role.name}' has no resource: give it one, e.g. "
                    "resource=specs.resource(h='cpu.small') or -h cpu.small on a component"
                )


class SchedulerFactory(Protocol):
    """What the ``torchx_schedulers`` hook's references name: ``create_scheduler``.

    ``create_scheduler(session_name, **kwargs) -> Scheduler``. ``kwargs`` are the
    ``scheduler_params`` a caller gives every factory (``get_runner(**params)``); a
    factory ignores the ones it does not know. For typing only (``Runner`` takes a
    mapping of these)::

        def create_scheduler(session_name: str, **kwargs: object) -> MyScheduler: ...

        _check: SchedulerFactory = create_scheduler  # under `if TYPE_CHECKING:`
    """

    def __call__(self, session_name: str, **kwargs: Any) -> Scheduler[Any]: ...


def filter_regex(regex: str, data: Iterable[str]) -> Iterator[str]:
    """Yields the items of ``data`` in which ``regex`` matches (``re.search``)."""
    pattern = re.compile(regex)
    return (item for item in data if pattern.search(item))


def split_lines(text: str) -> list[str]:
    """Splits ``text`` into lines, keeping each line's ``\\n``.

    >>> split_lines("a\\nb\\nc")
    ['a\\n', 'b\\n', 'c']
    """
    lines = [line + "\n" for line in text.split("\n")]
    lines[-1] = lines[-1][:-1]
    return [line for line in lines if line]


def split_lines_iterator(chunks: Iterable[str]) -> Iterator[str]:
    """Splits each chunk of ``chunks`` into lines (see :func:`split_lines`)."""
    for chunk in chunks:
        yield from split_lines(chunk)
