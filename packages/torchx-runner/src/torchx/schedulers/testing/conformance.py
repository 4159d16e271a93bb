"""The conformance test class a plugin subclasses: the checks, the fixtures, the knobs.

:class:`SchedulerConformance` gathers the check groups of
:mod:`torchx.schedulers.testing.checks` and gives them their fixtures (the scheduler
under test, run options, the app builder, the :class:`~torchx.schedulers.testing.kit.Kit`
of each test). A plugin adapts it only through those fixtures and the class attributes
below (see :mod:`torchx.schedulers.testing`); a subclass that overrides a check, or sizes
the apps below 2 replicas, fails the check (a weakened check would pass a scheduler
that breaks the contract).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

import pytest

from torchx.schedulers.contract.api import Scheduler
from torchx.schedulers.contract.capabilities import Capability, missing
from torchx.schedulers.testing.apps import AppBuilder
from torchx.schedulers.testing.checks.dryrun import DryrunChecks
from torchx.schedulers.testing.checks.following import FollowingChecks
from torchx.schedulers.testing.checks.logs import LogChecks
from torchx.schedulers.testing.checks.running import RunningChecks
from torchx.schedulers.testing.kit import Kit
from torchx.specs import CfgVal

__all__ = ["SchedulerConformance"]


def _check_not_weakened(cls: type, test: str, replicas: int) -> None:
    """Fails the test if its class changed the check or sized the apps below 2 replicas.

    A plugin adapts the kit through fixtures, :class:`AppBuilder` and declared
    capabilities; a check it overrides (or apps of one replica, where no replica can
    differ from another) would pass a scheduler the contract fails.
    """
    if replicas < 2:
        pytest.fail(
            f"{cls.__name__}.replicas is {replicas}: the kit needs apps of at least 2 "
            "replicas (set no value for the default 2, or a larger one)"
        )
    kit_check = getattr(SchedulerConformance, test, None)
    if kit_check is not None and getattr(cls, test) is not kit_check:
        pytest.fail(
            f"{cls.__name__}.{test} overrides a check of the conformance kit: a plugin may "
            "not change one; adapt the fixtures or the AppBuilder, or declare what the "
            "backend lacks (missing_capabilities)"
        )


class SchedulerConformance(DryrunChecks, RunningChecks, LogChecks, FollowingChecks):
    """The conformance tests; subclass it as ``Test<Backend>`` (see the module docs)."""

    #: Capabilities the backend lacks, with reasons; None: the scheduler's declaration.
    missing: ClassVar[Mapping[Capability, str] | None] = None
    #: Seconds an app (or a call) may take to end.
    timeout: ClassVar[float] = 120.0
    #: Seconds from ``cancel`` to CANCELLED.
    cancel_timeout: ClassVar[float] = 60.0
    #: Seconds a call about an unknown app id may take.
    unknown_id_timeout: ClassVar[float] = 10.0
    #: The N of apps with N replicas.
    replicas: ClassVar[int] = 2
    #: Seconds a ``wait_for_change`` may take beyond its timeout, and after a replica's
    #: end before it wakes (schedulers that override it).
    wait_slack: ClassVar[float] = 5.0
    #: The plugin's ``create_scheduler(session_name)``: the default ``scheduler`` fixture.
    scheduler_factory: ClassVar[Callable[[str], Scheduler[Any]] | None] = None
    #: The run option naming the job directory: each test's own, watched by dryruns.
    job_dir_option: ClassVar[str | None] = None

    # -- what a plugin provides -------------------------------------------------------------

    @pytest.fixture
    def scheduler(self) -> Scheduler[Any]:
        # read from the class: a function stored on it is not bound to the instance
        factory = type(self).scheduler_factory
        if factory is None:
            pytest.fail(
                f"{type(self).__name__} must define the fixture 'scheduler' (the Scheduler "
                "under test) or the attribute 'scheduler_factory': see torchx.schedulers.testing"
            )
        return factory("kit")

    @pytest.fixture
    def cfg(self, tmp_path: Path) -> Mapping[str, CfgVal]:
        if self.job_dir_option is None:
            return {}
        return {self.job_dir_option: str(tmp_path / "jobs")}

    @pytest.fixture
    def app_builder(self) -> AppBuilder:
        return AppBuilder()

    @pytest.fixture
    def watched_paths(self, tmp_path: Path) -> Sequence[Path]:
        return [tmp_path] if self.job_dir_option is not None else []

    @pytest.fixture
    def unknown_app_id(self) -> str:
        return f"kit-unknown-{uuid.uuid4().hex[:10]}"

    @pytest.fixture
    def kit(
        self,
        request: pytest.FixtureRequest,
        scheduler: Scheduler[Any],
        cfg: Mapping[str, CfgVal],
        app_builder: AppBuilder,
    ) -> Iterator[Kit]:
        _check_not_weakened(type(self), request.function.__name__, self.replicas)
        lacking = missing(scheduler) if self.missing is None else dict(self.missing)
        kit = Kit(scheduler, cfg, app_builder, lacking, self.timeout)
        try:
            yield kit
        finally:
            kit.cleanup()
