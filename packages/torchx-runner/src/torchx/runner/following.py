"""Following an app by its handle: the Runner's half that asks a scheduler about an app.

Every call takes a handle and needs nothing else of the Runner that submitted the
app: the handle names the scheduler and the app id. ``status``, ``wait``,
``describe``, ``log_lines``, ``cancel``, ``delete`` and ``list`` retry a transient
backend failure with backoff (an app is never reported FAILED because its scheduler
could not be reached); a FAILED app's replicas carry their errors
(:mod:`torchx.runner.failures`).
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from torchx.runner.base import (
    FIRST_POLL_DELAY,
    KNOWN_FOR,
    AppWaitTimeout,
    RunnerBase,
    as_dict,
    named_as_called,
    runner_logger,
)
from torchx.specs.errors import (
    InvalidRunConfigException,
    SpecError,
    UnknownAppError,
)
from torchx.specs.handles import AppHandle, Handle, make_app_handle, parse_handle

if TYPE_CHECKING:
    from datetime import datetime
    from typing import Any

    from torchx.schedulers.contract.api import (
        DescribeAppResponse,
        ListAppResponse,
        Scheduler,
        Stream,
    )
    from torchx.specs.api import AppDef, AppStatus
    from torchx.specs.options import CfgVal


class Following(RunnerBase):
    """The following calls of :class:`~torchx.runner.Runner` (see the module docs)."""

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
        found = self._status_described(app_handle)
        return None if found is None else (found[0], found[1])

    def status_app_and_options(
        self, app_handle: AppHandle
    ) -> tuple[AppStatus, AppDef, dict[str, Any]] | None:
        """:meth:`status_and_app` and the run options the app was submitted with
        (``DescribeAppResponse.run_options``: masked when kept, ``{}`` where the scheduler
        keeps none), from the same one question: what ``torchx ui``'s app page shows."""
        found = self._status_described(app_handle)
        return None if found is None else (found[0], found[1], dict(found[3]))

    def status_and_envs(
        self, app_handle: AppHandle
    ) -> tuple[AppStatus, list[dict[str, str]]] | None:
        """The app's status and every environment its replicas run with, from one question.

        The envs are each role's (as :meth:`describe`) and the one the scheduler tells
        beyond them (``DescribeAppResponse.env``: run options such as docker's ``env``),
        where it can: what ``torchx status`` masks secret-looking values with, in a
        message that quotes the app's stderr. None if the scheduler does not know the app.
        """
        found = self._status_described(app_handle)
        if found is None:
            return None
        status, app, env, _options = found
        return status, [*(dict(role.env) for role in app.roles), env]

    def _status_described(
        self, app_handle: AppHandle
    ) -> tuple[AppStatus, AppDef, dict[str, str], dict[str, Any]] | None:
        """(status, AppDef, the backend's ``env``, the run options) from one describe;
        None for no app."""
        handle = parse_handle(app_handle)
        desc = self._describe_response(handle, f"status of {handle}")
        if desc is None:
            return None
        status = self._explained(handle, desc.app_status())
        # getattr: a third-party scheduler's own response class may predate the field
        options = getattr(desc, "run_options", None) or {}
        return status, app_of(desc, handle, self._apps.get(handle)), dict(desc.env), dict(options)

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
            delay = min(float(wait_interval), FIRST_POLL_DELAY * 2**polls)
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
            runner_logger().debug("wait_for_change(%r) failed", app_handle, exc_info=True)
            return False

    def describe(self, app_handle: AppHandle) -> AppDef | None:
        """The app's definition as the scheduler knows it, or None if it does not exist.

        Schedulers that keep the submitted AppDef (the local scheduler does) give it
        back exactly (name, roles, metadata), from any process, ready to run again.
        A scheduler that keeps roles but not the name gives an AppDef named by the app
        id (as upstream TorchX does). Otherwise, an app submitted by this runner is
        described by what was submitted.
        """
        found = self.describe_with_options(app_handle)
        return None if found is None else found[0]

    def describe_with_options(self, app_handle: AppHandle) -> tuple[AppDef, dict[str, Any]] | None:
        """:meth:`describe` and the run options the app was submitted with (as
        :meth:`status_app_and_options` gives them), from the one question; None if the
        app does not exist."""
        handle = parse_handle(app_handle)
        desc = self._describe_response(handle, f"describe {handle}")
        if desc is None:
            return None
        options = getattr(desc, "run_options", None) or {}
        return app_of(desc, handle, self._apps.get(handle)), dict(options)

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
        known = described_at is not None and self._clock() - described_at < KNOWN_FOR
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
        ``.torchxconfig`` files as for
        :meth:`~torchx.runner.submitting.Submitting.dryrun`, and is checked the same way
        (an unknown option names the nearest one, a wrong type is an error). Unlike a
        submission, no default is filled in and no required option is asked for: the
        scheduler gets only the options given (None when there are none), so that a
        default queue does not narrow the listing.
        """
        sched = self._scheduler(scheduler)
        opts = sched.run_opts_once()
        merged = self._merge_cfg(scheduler, opts, as_dict(cfg))
        try:
            given = opts.resolve(merged, strict=True, fill_defaults=False)
        except InvalidRunConfigException as e:
            raise InvalidRunConfigException(named_as_called(scheduler, sched.backend, e)) from None
        apps: list[ListAppResponse] = self._retrying(
            sched, f"list apps of scheduler '{scheduler}'", lambda: sched.list(given or None)
        )
        aliases: dict[str, bool] = {}
        for app in apps:
            name = self._submitted_as(app.app_handle, scheduler, sched, aliases)
            try:
                app.app_handle = make_app_handle(name, self._name, app.app_id)
            except SpecError as e:
                from torchx.schedulers.contract.errors import SchedulerError

                raise SchedulerError(
                    f"scheduler '{scheduler}' listed app id {app.app_id!r}, which no handle "
                    f"can carry (a scheduler's app ids have no '/' and no whitespace): {e}"
                ) from None
        return apps

    def _submitted_as(
        self, reported: str, scheduler: str, sched: Scheduler[Any], aliases: dict[str, bool]
    ) -> str:
        """The scheduler name a listed app's handle carries: the one it was submitted under.

        ``scheduler`` (the name listed), unless the scheduler's own ``app_handle`` names
        another installed name of the same scheduler (an alias such as ``local_cwd`` for
        ``local``, whose records keep the name each app was submitted under): then that
        one, so that ``torchx list`` gives back the handle the user was given. Any other
        scheme a scheduler reports is ignored. ``aliases`` caches the answers of one list.
        """
        given, sep, _ = reported.partition("://")
        if not sep or given == scheduler or given not in self._factories:
            return scheduler
        same = aliases.get(given)
        if same is None:
            try:
                other = self._scheduler(given)
                same = type(other) is type(sched) and other.backend == sched.backend
            except Exception:  # a broken plugin under that name: not this scheduler
                same = False
            aliases[given] = same
        return given if same else scheduler


def app_of(desc: DescribeAppResponse, handle: Handle, submitted: AppDef | None) -> AppDef:
    """The AppDef ``desc`` gives back, named by the app id where it has no name; where it
    has no roles, a copy of what this runner submitted (``submitted``), else none."""
    from torchx.specs.api import AppDef

    app_id = handle.app_id
    if desc.roles:
        return AppDef(
            name=desc.name or app_id, roles=list(desc.roles), metadata=dict(desc.metadata)
        )
    if submitted is not None:
        return copy.deepcopy(submitted)
    return AppDef(name=app_id, roles=[], metadata=dict(desc.metadata))
