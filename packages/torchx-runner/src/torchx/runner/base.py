"""What the two halves of the :class:`~torchx.runner.Runner` share.

:class:`RunnerBase` holds a Runner's state and the pieces both submitting
(:mod:`torchx.runner.submitting`) and following (:mod:`torchx.runner.following`) use:
the schedulers, created on first use by name and closed by ``close()``; a handle
resolved to its scheduler and app id; retries of a transient backend failure; the run
options merged with ``.torchxconfig``. Also the Runner's errors and constants, which
:mod:`torchx.runner.api` exports.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from types import TracebackType
from typing import TYPE_CHECKING, Any

from torchx.specs.errors import (
    SpecError,
    UnknownSchedulerError,
    did_you_mean,
)
from torchx.specs.handles import AppHandle, parse_handle

if TYPE_CHECKING:
    import logging
    from typing import Self

    from torchx.schedulers.contract.api import (
        Scheduler,
        SchedulerFactory,
    )
    from torchx.schedulers.helpers.retry import Backoff
    from torchx.specs.api import AppDef, AppStatus
    from torchx.specs.options import CfgVal, runopts
    from torchx.specs.workspace import Workspace


def runner_logger() -> logging.Logger:
    """The ``torchx.runner`` logger; :mod:`logging` costs milliseconds to import, so on use."""
    import logging

    return logging.getLogger("torchx.runner")


#: The session name handles carry when none is given (upstream's default).
DEFAULT_SESSION_NAME = "torchx"
#: Environment variable set on every role when ``parent_run_id`` is given.
ENV_TORCHX_PARENT_RUN_ID = "TORCHX_PARENT_RUN_ID"


# wait(): the first poll comes this soon after the first status, then the delay doubles
# up to wait_interval, so a short app is not waited on for a whole interval.
FIRST_POLL_DELAY = 0.1
#: For how long (seconds) an app the scheduler just described counts as known, so that
#: ``log_lines`` right after ``status`` (what ``torchx log`` does) asks once, not twice.
KNOWN_FOR = 1.0


def broken_plugins_hint() -> str:
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


def as_dict(cfg: Mapping[str, CfgVal] | Any | None) -> dict[str, CfgVal]:
    """A plain dict of a cfg given as a mapping, a StructuredOpts or None."""
    if cfg is None:
        return {}
    if isinstance(cfg, Mapping):
        return dict(cfg)
    return {key: cfg[key] for key in cfg}  # StructuredOpts: iterable keys, item access


def named_as_called(scheduler: str, backend: str, e: Exception) -> str:
    """``e``'s message naming the scheduler as the caller did (an alias, not the backend)."""
    message = str(e)
    prefix = f"scheduler '{backend}': "
    if message.startswith(prefix):
        message = message[len(prefix) :]
    return f"scheduler '{scheduler}': {message}"


def as_workspace(workspace: Workspace | str | None) -> Workspace | None:
    if workspace is None or workspace == "":
        return None
    if isinstance(workspace, str):
        from torchx.specs.workspace import Workspace

        return Workspace.from_str(workspace)
    return workspace


def check_app(app: AppDef) -> None:
    from torchx.specs.api import MISSING, AppDef

    if not isinstance(app, AppDef):
        raise InvalidAppError(f"expected an AppDef, got {type(app).__name__}")
    from torchx.schedulers.helpers.scriptroles import require_roles

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


def check_image(app: AppDef, scheduler: str, runs_container_images: bool) -> None:
    """Refuses the image ``"."`` on a scheduler that runs container images.

    ``"."`` is the built-in components' default (:data:`torchx.components.DEFAULT_IMAGE`):
    the launch directory, where the local scheduler (and Slurm) run the job. A container
    scheduler would pass it on as an image name that no registry has (LSF would run
    ``docker run ... .``), so the dry run says which image to give instead. Why not a
    default image, as upstream's ``ghcr.io/pytorch/torchx:<version>``: no image of this
    project is published, and one of another project's, with its own torchx inside,
    pulled unasked, would fail later and further from the cause.
    """
    if not runs_container_images:
        return
    from torchx.components import DEFAULT_IMAGE

    for role in app.roles:
        if role.image == DEFAULT_IMAGE:
            raise InvalidAppError(
                f"role '{role.name}' has image '.' (the launch directory, the built-in "
                f"components' default), but scheduler '{scheduler}' runs container images: "
                "pass one with --image (e.g. --image python:3.12)"
            )


class RunnerBase:
    """A Runner's state and what submitting and following both use (see the module docs).

    Not used alone: :class:`~torchx.runner.Runner` is this plus
    :class:`~torchx.runner.submitting.Submitting` and
    :class:`~torchx.runner.following.Following`.
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
        # handle -> when the scheduler last described it (see KNOWN_FOR)
        self._described_at: dict[AppHandle, float] = {}
        # replaced in tests to run wait()/retries on a fake clock
        self._sleep: Callable[[float], None] = time.sleep
        self._clock: Callable[[], float] = time.monotonic

    def __enter__(self) -> Self:
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
                runner_logger().debug("closing scheduler %r failed", backend, exc_info=True)

    def __repr__(self) -> str:
        return f"Runner(name={self._name!r}, schedulers={self.scheduler_backends()!r})"

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
        """The run options ``scheduler`` accepts (``torchx runopts <scheduler>``).

        The scheduler's one schema, also what :meth:`~torchx.runner.Runner.dryrun`
        resolves against (built once): read it, never change it.
        """
        return self._scheduler(scheduler).run_opts_once()

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
                        f"{hint}; installed: {installed}{broken_plugins_hint()}"
                    )
                raise UnknownSchedulerError(
                    f"unknown scheduler '{backend}'{did_you_mean(backend, self._factories)}; "
                    f"installed: {installed}{broken_plugins_hint()}"
                )
            sched = factory(self._name, **self._scheduler_params)
            self._schedulers[backend] = sched
        return sched

    def _resolve(self, app_handle: AppHandle) -> tuple[Scheduler[Any], str, str]:
        # a Handle (what the CLI passes) was parsed by its maker: read, not parsed again
        handle = parse_handle(app_handle)
        return self._scheduler(handle.scheduler_backend), handle.scheduler_backend, handle.app_id

    def _retrying(self, sched: Scheduler[Any], what: str, fn: Callable[[], Any]) -> Any:
        from torchx.schedulers.helpers.retry import call_with_retries

        return call_with_retries(
            fn,
            what,
            self._backoff,
            classify=sched.classify_error,
            sleep=self._sleep,
            clock=self._clock,
        )

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
