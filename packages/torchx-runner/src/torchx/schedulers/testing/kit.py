"""The helper each conformance test gets: submit as users do, wait and read logs, bounded.

A :class:`Kit` wraps the scheduler under test: it submits through a
:class:`~torchx.runner.Runner` (the one submit pipeline), polls ``describe`` with a
deadline, reads logs in a thread with a deadline, and cancels and deletes every app it
submitted when the test ends. Every backend call goes through :func:`in_thread`, so a
hung backend fails its test instead of hanging the suite.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import pytest

from torchx.schedulers.contract.api import DescribeAppResponse, Scheduler
from torchx.schedulers.contract.capabilities import Capability
from torchx.schedulers.testing.apps import AppBuilder
from torchx.specs import AppDef, AppDryRunInfo, AppState, CfgVal, Role

__all__ = ["WAIT_SLACK", "Kit", "in_thread"]

T = TypeVar("T")

#: Seconds a ``wait_for_change`` of :meth:`Kit.wait_for` may take beyond its timeout.
WAIT_SLACK = 10.0


def in_thread(fn: Callable[[], T], timeout: float, what: str) -> T:
    """``fn()`` in a daemon thread; fails the test if it has not returned in ``timeout`` s.

    An exception of ``fn`` is raised here. A hung backend call fails its test (the
    thread is left behind, a daemon) instead of hanging the suite.
    """
    done: queue.Queue[tuple[bool, Any]] = queue.Queue()

    def run() -> None:
        try:
            done.put((True, fn()))
        except BaseException as e:  # handed to the test's thread
            done.put((False, e))

    threading.Thread(target=run, daemon=True, name=f"kit: {what}").start()
    try:
        ok, value = done.get(timeout=timeout)
    except queue.Empty:
        pytest.fail(f"{what} did not return within {timeout:g} s")
    if not ok:
        raise value
    result: T = value
    return result


class Kit:
    """What a conformance test uses: submit the way users do, wait, read logs, all bounded.

    Tracks every app it submitted; :meth:`cleanup` cancels and deletes them.
    """

    def __init__(
        self,
        scheduler: Scheduler[Any],
        cfg: Mapping[str, CfgVal],
        builder: AppBuilder,
        missing: Mapping[Capability, str],
        timeout: float,
    ) -> None:
        from torchx.runner import Runner

        self.scheduler = scheduler
        self.cfg = dict(cfg)
        self.builder = builder
        self.missing = dict(missing)
        self.timeout = timeout
        self.backend = scheduler.backend
        self.runner = Runner("kit", {self.backend: lambda *_a, **_k: scheduler})
        self.submitted: list[str] = []

    def lacks(self, capability: Capability) -> bool:
        """True if the backend declared ``capability`` missing."""
        return capability in self.missing

    # -- submitting ----------------------------------------------------------------------

    def dryrun(self, app: AppDef, cfg: Mapping[str, CfgVal] | None = None) -> AppDryRunInfo[Any]:
        """``Runner.dryrun`` (``torchx run --dryrun``) with the kit's cfg (or ``cfg``)."""
        return self.runner.dryrun(app, self.backend, self.cfg if cfg is None else cfg)

    def prepare(self, app: AppDef, cfg: Mapping[str, CfgVal] | None = None) -> AppDryRunInfo[Any]:
        """``Scheduler.prepare(app, cfg, dryrun=True)``: the scheduler's own dry run."""
        return self.scheduler.prepare(app, self.cfg if cfg is None else cfg, dryrun=True)

    def submit(self, app: AppDef, cfg: Mapping[str, CfgVal] | None = None) -> str:
        """Runs ``app`` as ``Runner.run`` does, with the kit's cfg (or ``cfg``); returns
        the app id (tracked for cleanup)."""
        from torchx.specs.handles import parse_app_handle

        handle = self.runner.run(app, self.backend, self.cfg if cfg is None else cfg)
        backend, _session, app_id = parse_app_handle(handle)
        assert backend == self.backend, f"handle {handle} names another scheduler"
        self.submitted.append(app_id)
        return app_id

    def env_option(self) -> str | None:
        """The scheduler's run option of ``NAME:VALUE`` pairs that sets the replicas'
        environment (docker's ``env``, SageMaker's ``environment``), if it has one: where
        the kit submits a secret-looking variable that must come back masked."""
        for name, opt in self.scheduler.run_opts_once():
            lowered = name.lower()
            if opt.is_type_dict_of_str and "env" in lowered and "secret" not in lowered:
                return name
        return None

    def run(self, *roles: Role, name: str = "kit") -> str:
        """Submits an app of ``roles``; returns its id."""
        return self.submit(self.builder.app(name, *roles))

    # -- waiting -------------------------------------------------------------------------

    def describe(self, app_id: str) -> DescribeAppResponse:
        """``describe(app_id)``, which must know the app."""
        desc = in_thread(
            lambda: self.scheduler.describe(app_id), self.timeout, f"describe({app_id!r})"
        )
        assert desc is not None, f"describe({app_id!r}) returned None for a submitted app"
        return desc

    def wait_for(
        self, app_id: str, done: Callable[[DescribeAppResponse], bool], what: str, timeout: float
    ) -> DescribeAppResponse:
        """Polls ``describe`` until ``done(desc)``; fails at timeout.

        Between two polls it waits as ``Runner.wait`` does: with the scheduler's
        ``wait_for_change`` (at most 1 s) where it can, else a sleep of 0.05 s, doubling
        to 1 s.
        """
        deadline = time.monotonic() + timeout
        delay = 0.05
        desc = self.describe(app_id)
        while not done(desc):
            if time.monotonic() > deadline:
                pytest.fail(f"app {app_id} not {what} within {timeout:g} s; last: {desc}")
            if not self.wait_for_change(app_id, 1.0):
                time.sleep(delay)  # a poll interval: the backend offers no event to wait on
                delay = min(delay * 2, 1.0)
            desc = self.describe(app_id)
        return desc

    def wait_for_change(self, app_id: str, timeout: float) -> bool:
        """The scheduler's ``wait_for_change``, bounded (an error is False, as for the Runner)."""

        def wait() -> bool:
            try:
                return bool(self.scheduler.wait_for_change(app_id, timeout))
            except Exception:
                return False

        return in_thread(wait, timeout + WAIT_SLACK, f"wait_for_change({app_id!r}, {timeout:g})")

    def wait_terminal(self, app_id: str) -> DescribeAppResponse:
        """The app's description once it is in a terminal state."""
        return self.wait_for(app_id, lambda d: d.state.is_terminal(), "ended", self.timeout)

    def wait_running(self, app_id: str) -> DescribeAppResponse:
        """The app's description once it is RUNNING (failing if it ended instead)."""
        desc = self.wait_for(
            app_id,
            lambda d: d.state == AppState.RUNNING or d.state.is_terminal(),
            "RUNNING",
            self.timeout,
        )
        assert desc.state == AppState.RUNNING, f"app {app_id} ended instead of running: {desc}"
        return desc

    # -- logs ----------------------------------------------------------------------------

    def logs(self, app_id: str, role: str, k: int = 0, **kwargs: Any) -> list[str]:
        """Every line of ``log_iter(app_id, role, k, **kwargs)``, read within the timeout."""
        return in_thread(
            lambda: list(self.scheduler.log_iter(app_id, role, k, **kwargs)),
            self.timeout,
            f"log_iter({app_id!r}, {role!r}, {k}, {kwargs})",
        )

    def follow(self, app_id: str, role: str, k: int = 0, **kwargs: Any) -> queue.Queue[Any]:
        """Reads ``log_iter(..., should_tail=True)`` in a thread into a queue.

        Each line is put as it comes; then ``StopIteration`` (the iterator ended) or the
        exception it raised.
        """
        out: queue.Queue[Any] = queue.Queue()

        def run() -> None:
            try:
                for line in self.scheduler.log_iter(app_id, role, k, should_tail=True, **kwargs):
                    out.put(line)
                out.put(StopIteration())
            except BaseException as e:
                out.put(e)

        threading.Thread(target=run, daemon=True, name=f"kit: follow {app_id}").start()
        return out

    def next_line(self, lines: queue.Queue[Any]) -> str | BaseException:
        """The next item of :meth:`follow`'s queue, failing the test at the timeout."""
        try:
            item: str | BaseException = lines.get(timeout=self.timeout)
        except queue.Empty:
            pytest.fail(f"no log line nor end of the log within {self.timeout:g} s")
        return item

    # -- cleaning up ---------------------------------------------------------------------

    def cleanup(self) -> None:
        """Cancels, then deletes, every app this kit submitted (unknown ones are skipped)."""
        for app_id in self.submitted:
            if self.scheduler.describe(app_id) is None:
                continue
            self.scheduler.cancel(app_id)
            self.wait_terminal(app_id)
            self.scheduler.delete(app_id)
