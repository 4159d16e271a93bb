"""The Runner: run an AppDef (or a component) on a scheduler, then follow it by its handle.

Usage::

    from torchx.runner import get_runner

    with get_runner() as runner:
        handle = runner.run_component("dist.ddp", ["-j", "2x4", "--script", "train.py"], "local")
        print(runner.wait(handle, wait_interval=1, timeout=600))
        for line in runner.log_lines(handle, "train", k=0):
            print(line, end="")

What each call does:

* ``run(app, scheduler, cfg)`` = ``dryrun`` + workspace build + ``schedule``; returns the
  app handle ``{scheduler}://{session}/{app_id}``. ``run_component`` /
  ``dryrun_component`` first materialize the component's AppDef from its arguments.
* ``dryrun`` validates everything (the app, the run config, strictly, against the
  scheduler's run options) and returns the native request as an ``AppDryRunInfo``,
  with no side effect: the caller's AppDef is not changed, no workspace is built and
  nothing is written. ``schedule(dryrun_info)`` submits it.
* ``status``, ``wait``, ``describe``, ``log_lines``, ``cancel``, ``delete`` take a handle.
  A handle carries all a later process needs: its scheduler name finds the scheduler
  (through the plugin registry), its app id finds the app; no state of this Runner is
  needed. ``list(scheduler)`` lists a scheduler's apps with their handles.
* A transient failure of the backend (``TransientSchedulerError``, ``TimeoutError``,
  ``ConnectionError``) while following an app is retried with exponential backoff
  (:class:`~torchx.schedulers.retry.Backoff`), after the scheduler's
  ``classify_error`` mapped its SDK's exceptions; when retries run out, a
  ``RetriesExhaustedError`` is raised: an app is never reported FAILED because its
  scheduler could not be reached. Submitting is never retried (not idempotent).

Schedulers are created on first use, one instance per name, by the factories the
plugin registry provides (so a scheduler's module is imported only when used), and
closed by :meth:`Runner.close` (or leaving the ``with`` block).

With ``use_config`` (the default of :func:`get_runner`), the ``.torchxconfig`` files
(:mod:`torchx.runner.config`) give defaults under the explicit ``cfg`` and component
arguments.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable, Iterable, Mapping
from types import TracebackType
from typing import TYPE_CHECKING, Any

from torchx.specs.errors import (
    InvalidRunConfigException,
    SpecError,
    UnknownAppError,
    UnknownSchedulerError,
    did_you_mean,
)
from torchx.specs.handles import AppHandle, Handle, make_app_handle, parse_handle

if TYPE_CHECKING:
    import logging
    from datetime import datetime

    from torchx.schedulers.api import (
        DescribeAppResponse,
        ListAppResponse,
        Scheduler,
        SchedulerFactory,
        Stream,
    )
    from torchx.schedulers.retry import Backoff
    from torchx.specs.api import AppDef, AppDryRunInfo, AppStatus
    from torchx.specs.options import CfgVal, runopts
    from torchx.specs.workspace import Workspace

__all__ = [
    "DEFAULT_SESSION_NAME",
    "ENV_TORCHX_PARENT_RUN_ID",
    "AppWaitTimeout",
    "InvalidAppError",
    "Runner",
    "SchedulerFactory",
    "UnknownAppError",
    "UnknownSchedulerError",
    "get_runner",
]


def __getattr__(name: str) -> Any:
    # ``SchedulerFactory`` is a typing Protocol of torchx.schedulers.api (loaded on use)
    if name == "SchedulerFactory":
        from torchx.schedulers.api import SchedulerFactory

        return SchedulerFactory
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _logger() -> logging.Logger:
    """The ``torchx.runner`` logger; :mod:`logging` costs milliseconds to import, so on use."""
    import logging

    return logging.getLogger("torchx.runner")


#: The session name handles carry when none is given (upstream's default).
DEFAULT_SESSION_NAME = "torchx"
#: Environment variable set on every role when ``parent_run_id`` is given.
ENV_TORCHX_PARENT_RUN_ID = "TORCHX_PARENT_RUN_ID"


# wait(): the first poll comes this soon after the first status, then the delay doubles
# up to wait_interval, so a short app is not waited on for a whole interval.
_FIRST_POLL_DELAY = 0.1
#: For how long (seconds) an app the scheduler just described counts as known, so that
#: ``log_lines`` right after ``status`` (what ``torchx log`` does) asks once, not twice.
_KNOWN_FOR = 1.0


def _broken_plugins_hint() -> str:
    """``; plugins that failed to load: ...`` when some did (the scheduler may be theirs)."""
    from torchx.specs.plugins import get_registry

    broken = get_registry().failed_plugins
    if not broken:
        return ""
    return f"; plugins that failed to load: {', '.join(broken)} (see torchx plugins)"


class InvalidAppError(SpecError):
    """An AppDef cannot be run as given: no roles, a role without entrypoint, ..."""


class AppWaitTimeout(TimeoutError):
    """:meth:`Runner.wait` gave up: the app did not reach a terminal state in time.

    ``app_handle``, ``elapsed`` (seconds) and ``last_status`` say which app, how long,
    and what it was doing. The app itself is left running.
    """

    def __init__(self, app_handle: AppHandle, elapsed: float, last_status: AppStatus) -> None:
        super().__init__(
            f"app {app_handle} did not reach a terminal state within {elapsed:.1f}s "
            f"(last state: {last_status.state.name}); it is still running: "
            "wait longer, or cancel it"
        )
        self.app_handle = app_handle
        self.elapsed = elapsed
        self.last_status = last_status


def _as_dict(cfg: Mapping[str, CfgVal] | Any | None) -> dict[str, CfgVal]:
    """A plain dict of a cfg given as a mapping, a StructuredOpts or None."""
    if cfg is None:
        return {}
    if isinstance(cfg, Mapping):
        return dict(cfg)
    return {key: cfg[key] for key in cfg}  # StructuredOpts: iterable keys, item access


class Runner:
    """Runs AppDefs on schedulers and follows them by handle.

    Args:
        name: the session name carried by the handles of apps this runner submits
        scheduler_factories: scheduler name -> ``create_scheduler(session_name, **kw)``
        component_defaults: component name -> default arguments (``{"j": "2x8"}``);
            they win over ``[component:...]`` sections of ``.torchxconfig``
        scheduler_params: keyword arguments given to every scheduler factory
        use_config: read ``.torchxconfig`` files for run options under the explicit
            ``cfg`` and for component defaults
        backoff: how transient scheduler failures are retried (default ``Backoff()``)
    """

    def __init__(
        self,
        name: str,
        scheduler_factories: Mapping[str, SchedulerFactory],
        component_defaults: Mapping[str, Mapping[str, str]] | None = None,
        scheduler_params: Mapping[str, object] | None = None,
        *,
        use_config: bool = False,
        backoff: Backoff | None = None,
    ) -> None:
        if "/" in name or not name.strip() or any(c.isspace() for c in name):
            raise SpecError(
                f"invalid session name {name!r}: a handle's session may not contain '/' "
                "or whitespace (e.g. 'torchx')"
            )
        self._name = name
        self._factories: dict[str, SchedulerFactory] = dict(scheduler_factories)
        self._component_defaults = {k: dict(v) for k, v in (component_defaults or {}).items()}
        self._scheduler_params: dict[str, object] = dict(scheduler_params or {})
        self._use_config = use_config
        self._backoff = backoff
        self._schedulers: dict[str, Scheduler[Any]] = {}
        # apps this runner scheduled: handle -> AppDef as submitted (describe's fallback)
        self._apps: dict[AppHandle, AppDef] = {}
        # handle -> when the scheduler last described it (see _KNOWN_FOR)
        self._described_at: dict[AppHandle, float] = {}
        # replaced in tests to run wait()/retries on a fake clock
        self._sleep: Callable[[float], None] = time.sleep
        self._clock: Callable[[], float] = time.monotonic

    # -- context manager ----------------------------------------------------------------

    def __enter__(self) -> Runner:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        """Closes every scheduler this runner created. Idempotent; never raises.

        A later call that needs a scheduler creates a new one.
        """
        schedulers, self._schedulers = self._schedulers, {}
        for backend, sched in schedulers.items():
            try:
                sched.close()
            except Exception:  # a scheduler's close must not hide the caller's error
                _logger().debug("closing scheduler %r failed", backend, exc_info=True)

    def __repr__(self) -> str:
        return f"Runner(name={self._name!r}, schedulers={self.scheduler_backends()!r})"

    # -- schedulers ---------------------------------------------------------------------

    @property
    def session_name(self) -> str:
        """The session name in the handles of apps this runner submits."""
        return self._name

    def name(self) -> str:
        """The session name (upstream TorchX's spelling of :attr:`session_name`)."""
        return self._name

    def scheduler_backends(self) -> list[str]:
        """Names of the installed schedulers (the first is the default)."""
        return list(self._factories)

    def scheduler_run_opts(self, scheduler: str) -> runopts:
        """The run options ``scheduler`` accepts (``torchx runopts <scheduler>``)."""
        return self._scheduler(scheduler).run_opts()

    def run_opts(self) -> dict[str, runopts]:
        """Run options of every installed scheduler (creates each scheduler)."""
        return {name: self.scheduler_run_opts(name) for name in self._factories}

    def _scheduler(self, backend: str) -> Scheduler[Any]:
        sched = self._schedulers.get(backend)
        if sched is None:
            factory = self._factories.get(backend)
            if factory is None:
                from torchx.runner.first_party import install_hint

                installed = ", ".join(self._factories) or "none"
                hint = install_hint(backend)
                if hint:
                    raise UnknownSchedulerError(
                        f"{hint}; installed: {installed}{_broken_plugins_hint()}"
                    )
                raise UnknownSchedulerError(
                    f"unknown scheduler '{backend}'{did_you_mean(backend, self._factories)}; "
                    f"installed: {installed}{_broken_plugins_hint()}"
                )
            sched = factory(self._name, **self._scheduler_params)
            self._schedulers[backend] = sched
        return sched

    def _resolve(self, app_handle: AppHandle) -> tuple[Scheduler[Any], str, str]:
        # a Handle (what the CLI passes) was parsed by its maker: read, not parsed again
        handle = parse_handle(app_handle)
        return self._scheduler(handle.scheduler_backend), handle.scheduler_backend, handle.app_id

    def _retrying(self, sched: Scheduler[Any], what: str, fn: Callable[[], Any]) -> Any:
        from torchx.schedulers.retry import call_with_retries

        return call_with_retries(
            fn,
            what,
            self._backoff,
            classify=sched.classify_error,
            sleep=self._sleep,
            clock=self._clock,
        )

    # -- submitting ---------------------------------------------------------------------

    def run(
        self,
        app: AppDef,
        scheduler: str,
        cfg: Mapping[str, CfgVal] | None = None,
        workspace: Workspace | str | None = None,
        parent_run_id: str | None = None,
    ) -> AppHandle:
        """Validates, builds the workspace (if the scheduler supports one) and submits.

        Returns the app handle. ``app`` itself is not changed.
        """
        info = self._dryrun(app, scheduler, cfg, workspace, parent_run_id, build=True)
        return self.schedule(info)

    def run_component(
        self,
        component: str,
        component_args: list[str] | dict[str, Any],
        scheduler: str,
        cfg: Mapping[str, CfgVal] | None = None,
        workspace: Workspace | str | None = None,
        parent_run_id: str | None = None,
    ) -> AppHandle:
        """Materializes ``component`` with ``component_args`` and runs it (see :meth:`run`).

        ``component`` is a built-in name (``dist.ddp``), ``path/file.py:fn`` or a
        plugin's component. ``component_args`` is its command line (``["-j", "2x8"]``),
        completed by the component defaults; or a dict of keyword arguments passed to
        the component function as they are.
        """
        app = self.materialize(component, component_args)
        return self.run(app, scheduler, cfg, workspace, parent_run_id)

    def dryrun_component(
        self,
        component: str,
        component_args: list[str] | dict[str, Any],
        scheduler: str,
        cfg: Mapping[str, CfgVal] | None = None,
        workspace: Workspace | str | None = None,
        parent_run_id: str | None = None,
    ) -> AppDryRunInfo[Any]:
        """Materializes ``component`` and dry-runs it (see :meth:`dryrun`)."""
        app = self.materialize(component, component_args)
        return self.dryrun(app, scheduler, cfg, workspace, parent_run_id)

    def dryrun(
        self,
        app: AppDef,
        scheduler: str,
        cfg: Mapping[str, CfgVal] | None = None,
        workspace: Workspace | str | None = None,
        parent_run_id: str | None = None,
    ) -> AppDryRunInfo[Any]:
        """The request that :meth:`schedule` would submit, with no side effect.

        Checks the app, then ``cfg`` strictly against the scheduler's run options
        (unknown key, naming the nearest valid one; wrong type; missing required
        option: :class:`~torchx.specs.InvalidRunConfigException`). The caller's
        ``app`` is never modified, a workspace is only recorded (built by
        :meth:`schedule`), and nothing is written anywhere.
        """
        return self._dryrun(app, scheduler, cfg, workspace, parent_run_id, build=False)

    def _dryrun(
        self,
        app: AppDef,
        scheduler: str,
        cfg: Mapping[str, CfgVal] | None,
        workspace: Workspace | str | None,
        parent_run_id: str | None,
        *,
        build: bool,
    ) -> AppDryRunInfo[Any]:
        _check_app(app)
        sched = self._scheduler(scheduler)
        merged = self._merge_cfg(scheduler, sched.run_opts(), _as_dict(cfg))
        if parent_run_id:
            app = copy.deepcopy(app)  # the caller's AppDef is never changed
            for role in app.roles:
                role.env[ENV_TORCHX_PARENT_RUN_ID] = parent_run_id
        try:
            info = sched.prepare(app, merged, workspace=_workspace(workspace), dryrun=not build)
        except InvalidRunConfigException as e:
            raise InvalidRunConfigException(_named(scheduler, sched.backend, e)) from None
        info.scheduler = scheduler  # the name the caller used (an alias stays an alias)
        return info

    def _merge_cfg(
        self, scheduler: str, opts: runopts, explicit: dict[str, CfgVal]
    ) -> dict[str, CfgVal]:
        if not self._use_config:
            return explicit
        from torchx.runner import config

        from_files = config.get_scheduler_cfg(scheduler, opts, installed=self._factories)
        if not from_files:
            return explicit
        given = {opts.canonical_name(k) or k for k, v in explicit.items() if v is not None}
        merged = {k: v for k, v in from_files.items() if k not in given}
        for key, value in explicit.items():
            if value is not None or key not in merged:
                merged[key] = value
        return merged

    def materialize(self, component: str, component_args: list[str] | dict[str, Any]) -> AppDef:
        """The AppDef ``component`` returns for ``component_args``, without running it.

        What :meth:`run_component` and :meth:`dryrun_component` run: ``component_args``
        is the component's command line, completed by the component defaults, or a dict
        of keyword arguments. For a caller that changes the AppDef before
        :meth:`dryrun` (``torchx run --dryrun`` masks its secrets), so that the request
        is made once.
        """
        from torchx.components.args import materialize_appdef
        from torchx.components.finder import get_component
        from torchx.specs.api import AppDef

        component_def = get_component(component)
        if isinstance(component_args, dict):
            app = component_def.fn(**component_args)
        else:
            from torchx.components.errors import ComponentArgError, ComponentDefaultError

            defaults = self._defaults_for(component, component_def.name)
            try:
                app = materialize_appdef(
                    component_def.fn, list(component_args), defaults or None, prog=component
                )
            except ComponentDefaultError as e:
                where = self._default_source(e.key, component, component_def.name)
                if where is None:
                    raise
                raise ComponentArgError(f"{where}: {e}", usage=e.usage) from e
        if not isinstance(app, AppDef):
            raise InvalidAppError(
                f"component '{component}' returned {type(app).__name__}, expected an AppDef"
            )
        return app

    def _default_source(self, key: str, *names: str) -> str | None:
        """The file and section a component default came from (None: given in code)."""
        if not self._use_config or any(key in self._component_defaults.get(n, {}) for n in names):
            return None
        from torchx.runner import config

        for name in names:
            where = config.source_of(f"component:{name}", key)
            if where is not None:
                return where
        return None

    def _defaults_for(self, *names: str) -> dict[str, str]:
        defaults: dict[str, str] = {}
        if self._use_config:
            from torchx.runner import config

            from_files = config.get_component_defaults()
            for name in names:
                defaults.update(from_files.get(name, {}))
        for name in names:
            defaults.update(self._component_defaults.get(name, {}))
        return defaults

    def schedule(self, dryrun_info: AppDryRunInfo[Any]) -> AppHandle:
        """Submits the request of a :meth:`dryrun` and returns the app handle.

        The request is submitted as the dry run made it (same app id, same request; the
        app is not prepared again). A workspace the dry run left to build is built first
        (``Scheduler.build_workspaces_of``, with the dry run's resolved run options); the
        request is made again only if the build put it elsewhere than the dry run
        planned. If the scheduler fails, it has removed what it created (the Scheduler
        contract); the error propagates. Never retried: a submit is not idempotent.
        """
        # each raises SpecError ("dry-run the app first") on an info no dry run made
        backend, _app = dryrun_info.scheduler, dryrun_info.app
        sched = self._scheduler(backend)
        if dryrun_info.needs_workspace_build:
            # a copy is built: the caller's dryrun info stays as it was
            dryrun_info = sched.build_workspaces_of(dryrun_info)
            dryrun_info.scheduler = backend
        app_id = sched.schedule(dryrun_info)
        try:
            handle = make_app_handle(backend, self._name, app_id)
        except SpecError as e:
            # the scheduler answered with an id no handle can carry: do not leave the
            # app running where nobody can find it
            from torchx.schedulers.api import SchedulerError

            try:
                sched.delete(app_id)
            except Exception:
                _logger().warning("could not remove app %r of %r", app_id, backend, exc_info=True)
            raise SchedulerError(
                f"scheduler '{backend}' returned app id {app_id!r}, which no handle can "
                f"carry; the app was removed: {e}"
            ) from e
        self._apps[handle] = dryrun_info.app
        return handle

    # -- following an app ---------------------------------------------------------------

    def status(self, app_handle: AppHandle) -> AppStatus | None:
        """The app's status, or None if the scheduler does not know it.

        Transient scheduler failures are retried; see the module docstring. A FAILED
        app's failed replicas carry their error in ``structured_error_msg``: the
        scheduler's, or else one made from the end of their stderr
        (:mod:`torchx.runner.failures`).
        """
        handle = parse_handle(app_handle)  # once: the calls below read its parts
        desc = self._describe_response(handle, f"status of {handle}")
        return None if desc is None else self._explained(handle, desc.app_status())

    def status_and_app(self, app_handle: AppHandle) -> tuple[AppStatus, AppDef] | None:
        """The app's status and its definition (as :meth:`describe`), from one question.

        What ``torchx status`` needs to print a status with the app's secret env values
        masked: asking the scheduler once instead of twice matters where each question
        is a command or an API call (``squeue``, a REST request). None if the scheduler
        does not know the app.
        """
        handle = parse_handle(app_handle)
        desc = self._describe_response(handle, f"status of {handle}")
        if desc is None:
            return None
        return self._explained(handle, desc.app_status()), self._app_of(handle, desc)

    def _explained(self, app_handle: AppHandle, status: AppStatus) -> AppStatus:
        """``status`` with a FAILED app's replica errors filled in (:mod:`torchx.runner.failures`)."""
        if status.state.name != "FAILED":  # the common case imports nothing more
            return status
        from torchx.runner.failures import explain_failure

        sched, _backend, app_id = self._resolve(app_handle)
        return explain_failure(sched, app_id, status)

    def wait(
        self,
        app_handle: AppHandle,
        wait_interval: float = 10,
        timeout: float | None = None,
    ) -> AppStatus | None:
        """Polls the app's status until it is terminal; returns that status.

        Returns None if the app does not exist (any more). Polls soon after the first
        check, then at growing intervals up to ``wait_interval`` seconds; between two
        polls it waits with :meth:`wait_for_change` where the scheduler can, so the end
        is seen as it happens, and sleeps otherwise. With ``timeout`` (seconds), raises
        :class:`AppWaitTimeout` if the app is still running by then (the app is left
        alone).
        """
        if wait_interval <= 0:
            raise SpecError(f"wait_interval must be > 0 seconds, got {wait_interval!r}")
        start = self._clock()
        polls = 0
        while True:
            status = self.status(app_handle)
            if status is None or status.is_terminal():
                return status
            delay = min(float(wait_interval), _FIRST_POLL_DELAY * 2**polls)
            bound = float(wait_interval)  # a wait that wakes on a change may take all of it
            if timeout is not None:
                elapsed = self._clock() - start
                remaining = timeout - elapsed
                if remaining <= 0:
                    raise AppWaitTimeout(app_handle, elapsed, status)
                delay, bound = min(delay, remaining), min(bound, remaining)
            if not self.wait_for_change(app_handle, bound):
                self._sleep(delay)
            polls += 1

    def wait_for_change(self, app_handle: AppHandle, timeout: float) -> bool:
        """Blocks until the app may have changed state, at most ``timeout`` seconds.

        What to call between two :meth:`status` calls when following an app, instead of
        sleeping: True once it has waited (something happened, or the time passed),
        False at once where the scheduler cannot wait for the app (then sleep). See
        ``Scheduler.wait_for_change``. It never raises for the backend: an error there
        is False, and the next :meth:`status` reports it as it always does.
        """
        sched, _backend, app_id = self._resolve(app_handle)
        try:
            return bool(sched.wait_for_change(app_id, timeout))
        except Exception:
            _logger().debug("wait_for_change(%r) failed", app_handle, exc_info=True)
            return False

    def describe(self, app_handle: AppHandle) -> AppDef | None:
        """The app's definition as the scheduler knows it, or None if it does not exist.

        Schedulers that keep the submitted AppDef (the local scheduler does) give it
        back exactly (name, roles, metadata), from any process, ready to run again.
        A scheduler that keeps roles but not the name gives an AppDef named by the app
        id (as upstream TorchX does). Otherwise, an app submitted by this runner is
        described by what was submitted.
        """
        handle = parse_handle(app_handle)
        desc = self._describe_response(handle, f"describe {handle}")
        return None if desc is None else self._app_of(handle, desc)

    def _describe_response(self, app_handle: AppHandle, what: str) -> DescribeAppResponse | None:
        """The scheduler's answer for the app (retried); forgets an app it does not know."""
        sched, _backend, app_id = self._resolve(app_handle)
        desc: DescribeAppResponse | None = self._retrying(
            sched, what, lambda: sched.describe(app_id)
        )
        if desc is None:
            self._apps.pop(app_handle, None)
            self._described_at.pop(app_handle, None)
        else:
            self._described_at[app_handle] = self._clock()
        return desc

    def _app_of(self, handle: Handle, desc: DescribeAppResponse) -> AppDef:
        from torchx.specs.api import AppDef

        app_id = handle.app_id
        if desc.roles:
            return AppDef(
                name=desc.name or app_id, roles=list(desc.roles), metadata=dict(desc.metadata)
            )
        submitted = self._apps.get(handle)
        if submitted is not None:
            return copy.deepcopy(submitted)
        return AppDef(name=app_id, roles=[], metadata=dict(desc.metadata))

    def cancel(self, app_handle: AppHandle) -> None:
        """Asks the scheduler to stop the app; does nothing for an unknown app.

        Returns without waiting for the app to stop: follow with :meth:`wait`.
        """
        sched, _backend, app_id = self._resolve(app_handle)
        self._retrying(sched, f"cancel {app_handle}", lambda: sched.cancel(app_id))

    def stop(self, app_handle: AppHandle) -> None:
        """Deprecated name of :meth:`cancel` (upstream TorchX's), kept for old callers."""
        import warnings

        warnings.warn(
            "Runner.stop() is deprecated: use Runner.cancel()", DeprecationWarning, stacklevel=2
        )
        self.cancel(app_handle)

    def delete(self, app_handle: AppHandle) -> None:
        """Removes the app and its records from the scheduler.

        What happens to an app that is still running is the scheduler's choice: the
        contract's default cancels it; the local scheduler refuses (``SchedulerError``:
        cancel it and :meth:`wait` first) rather than kill a live app by surprise.
        """
        sched, _backend, app_id = self._resolve(app_handle)
        self._retrying(sched, f"delete {app_handle}", lambda: sched.delete(app_id))
        self._apps.pop(app_handle, None)

    def log_lines(
        self,
        app_handle: AppHandle,
        role_name: str,
        k: int = 0,
        regex: str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        should_tail: bool = False,
        streams: Stream | None = None,
    ) -> Iterable[str]:
        """Log lines of replica ``k`` of ``role_name`` (see ``Scheduler.log_iter``).

        Raises :class:`UnknownAppError` if the scheduler does not know the app (not
        asked again when this runner described the app within the last second, as
        ``torchx log`` does just before). A transient failure while opening the log is
        retried; once lines flow, errors
        propagate to the caller (a log cannot be resumed where it broke).
        """
        sched, _backend, app_id = self._resolve(app_handle)
        described_at = self._described_at.get(app_handle)
        known = described_at is not None and self._clock() - described_at < _KNOWN_FOR
        if not known and not self._retrying(
            sched, f"logs of {app_handle}", lambda: sched.exists(app_id)
        ):
            raise UnknownAppError(
                f"unknown app {app_handle}: its scheduler does not know it "
                "(never submitted, or deleted); `torchx list -s <scheduler>` shows the apps"
            )
        lines: Iterable[str] = self._retrying(
            sched,
            f"logs of {app_handle}",
            lambda: sched.log_iter(
                app_id,
                role_name,
                k=k,
                regex=regex,
                since=since,
                until=until,
                should_tail=should_tail,
                streams=streams,
            ),
        )
        return lines

    def list(
        self, scheduler: str, cfg: Mapping[str, CfgVal] | None = None
    ) -> list[ListAppResponse]:
        """The apps ``scheduler`` knows of, each with its ``app_handle`` filled in.

        ``cfg`` says where to look, for backends that route by a run option (a k8s
        namespace, an AWS queue and region): it goes over the ``[scheduler]`` section of
        ``.torchxconfig`` files as for :meth:`dryrun`, and is checked the same way (an
        unknown option names the nearest one, a wrong type is an error). Unlike a
        submission, no default is filled in and no required option is asked for: the
        scheduler gets only the options given (None when there are none), so that a
        default queue does not narrow the listing.
        """
        sched = self._scheduler(scheduler)
        opts = sched.run_opts()
        merged = self._merge_cfg(scheduler, opts, _as_dict(cfg))
        try:
            given = opts.resolve(merged, strict=True, fill_defaults=False)
        except InvalidRunConfigException as e:
            raise InvalidRunConfigException(_named(scheduler, sched.backend, e)) from None
        apps: list[ListAppResponse] = self._retrying(
            sched, f"list apps of scheduler '{scheduler}'", lambda: sched.list(given or None)
        )
        for app in apps:
            try:
                app.app_handle = make_app_handle(scheduler, self._name, app.app_id)
            except SpecError as e:
                from torchx.schedulers.api import SchedulerError

                raise SchedulerError(
                    f"scheduler '{scheduler}' listed app id {app.app_id!r}, which no handle "
                    f"can carry (a scheduler's app ids have no '/' and no whitespace): {e}"
                ) from None
        return apps


def _named(scheduler: str, backend: str, e: Exception) -> str:
    """``e``'s message naming the scheduler as the caller did (an alias, not the backend)."""
    message = str(e)
    prefix = f"scheduler '{backend}': "
    if message.startswith(prefix):
        message = message[len(prefix) :]
    return f"scheduler '{scheduler}': {message}"


def _workspace(workspace: Workspace | str | None) -> Workspace | None:
    if workspace is None or workspace == "":
        return None
    if isinstance(workspace, str):
        from torchx.specs.workspace import Workspace

        return Workspace.from_str(workspace)
    return workspace


def _check_app(app: AppDef) -> None:
    from torchx.specs.api import MISSING, AppDef

    if not isinstance(app, AppDef):
        raise InvalidAppError(f"expected an AppDef, got {type(app).__name__}")
    from torchx.schedulers.scriptroles import require_roles

    require_roles(app, error=InvalidAppError)
    for role in app.roles:
        if not role.entrypoint or role.entrypoint == MISSING:
            raise InvalidAppError(
                f"role '{role.name}' of app '{app.name}' has no entrypoint: set "
                "Role.entrypoint to the command to run (e.g. 'python')"
            )
        if role.num_replicas < 1:
            raise InvalidAppError(
                f"role '{role.name}' of app '{app.name}' has num_replicas="
                f"{role.num_replicas}: it must be at least 1"
            )


def get_runner(
    name: str | None = None,
    component_defaults: Mapping[str, Mapping[str, str]] | None = None,
    *,
    use_config: bool = True,
    backoff: Backoff | None = None,
    **scheduler_params: Any,
) -> Runner:
    """A Runner for every installed scheduler; use it as a context manager.

    ``name`` is the session name in the handles (default ``"torchx"``);
    ``scheduler_params`` are passed to every scheduler's factory. Nothing is imported
    or created until a scheduler is used; ``.torchxconfig`` files are read when a run
    needs them (``use_config=False`` ignores them).

    >>> with get_runner() as runner:
    ...     "local" in runner.scheduler_backends()
    True
    """
    from torchx.schedulers import get_scheduler_factories

    return Runner(
        name or DEFAULT_SESSION_NAME,
        get_scheduler_factories(),
        component_defaults,
        scheduler_params,
        use_config=use_config,
        backoff=backoff,
    )
