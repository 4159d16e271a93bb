"""The conformance kit fails a scheduler with any of the bugs it is meant to catch.

Each bug is planted, one at a time, into a subclass of the local scheduler (which passes
the whole kit: ``test_scheduler_conformance.py``); the kit tests that must catch it run
against it in a separate pytest (pytester), all in one run to keep this quick, and
must fail, while the same tests pass on the unplanted scheduler.
"""

from __future__ import annotations

import sys

import pytest

pytest_plugins = ["pytester"]

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="the local scheduler is Linux-only")

SUITE = '''
import time

import pytest

from torchx.schedulers.local.scheduler import LocalScheduler
from torchx.schedulers.testing import Kit, SchedulerConformance
from torchx.specs import AppState


class NoEnv(LocalScheduler):
    """The role's env never reaches the replicas."""

    def _submit_dryrun(self, app, cfg):
        for role in app.roles:  # the scheduler's own copy
            role.env = {}
        return super()._submit_dryrun(app, cfg)


class NewestOnly(LocalScheduler):
    """list() shows only the newest app."""

    def list(self, cfg=None):
        return super().list(cfg)[:1]


class OtherAppDef(LocalScheduler):
    """describe() gives another app's name, roles and metadata."""

    def describe(self, app_id):
        desc = super().describe(app_id)
        others = [a.app_id for a in super().list() if a.app_id != app_id]
        other = super().describe(others[0]) if desc is not None and others else None
        if other is not None:
            desc.name, desc.roles, desc.metadata = other.name, other.roles, other.metadata
        return desc


class NoRoles(LocalScheduler):
    """describe() drops the roles."""

    def describe(self, app_id):
        desc = super().describe(app_id)
        if desc is not None:
            desc.roles = []
        return desc


class NoName(LocalScheduler):
    """describe() drops the name."""

    def describe(self, app_id):
        desc = super().describe(app_id)
        if desc is not None:
            desc.name = ""
        return desc


class OneExitCode(LocalScheduler):
    """The first replica's exit code is reported for every replica."""

    def describe(self, app_id):
        desc = super().describe(app_id)
        for role in desc.roles_statuses if desc is not None else []:
            for rep in role.replicas:
                rep.exit_code = role.replicas[0].exit_code
        return desc


class AnySuccess(LocalScheduler):
    """An app with a replica that succeeded is SUCCEEDED, whatever the others did."""

    def describe(self, app_id):
        desc = super().describe(app_id)
        if desc is not None and desc.state == AppState.FAILED:
            reps = [rep for role in desc.roles_statuses for rep in role.replicas]
            if any(rep.state == AppState.SUCCEEDED for rep in reps):
                desc.state = AppState.SUCCEEDED
        return desc


class CancelledInName(LocalScheduler):
    """cancel() only makes describe and list say CANCELLED: the replicas keep running."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.cancelled = set()

    def _cancel_existing(self, app_id):
        self.cancelled.add(app_id)

    def describe(self, app_id):
        desc = super().describe(app_id)
        if desc is not None and app_id in self.cancelled:
            desc.state = AppState.CANCELLED
        return desc

    def list(self, cfg=None):
        apps = super().list(cfg)
        for app in apps:
            if app.app_id in self.cancelled:
                app.state = AppState.CANCELLED
        return apps

    def delete(self, app_id, force=False):  # the kit's cleanup: really stop it
        super().delete(app_id, force=True)


class ExitZeroReadsSucceeded(LocalScheduler):
    """A cancelled app whose replicas all exited 0 reads SUCCEEDED (docker did)."""

    def describe(self, app_id):
        desc = super().describe(app_id)
        if desc is not None and desc.state == AppState.CANCELLED:
            reps = [rep for role in desc.roles_statuses for rep in role.replicas]
            if reps and all(rep.exit_code == 0 for rep in reps):
                desc.state = AppState.SUCCEEDED
                for rep in reps:
                    rep.state = AppState.SUCCEEDED
        return desc


class LostEarlyCancel(LocalScheduler):
    """A cancel within a second of the submit (the app still pending) is lost."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.submitted = {}

    def schedule(self, dryrun_info):
        app_id = super().schedule(dryrun_info)
        self.submitted[app_id] = time.monotonic()
        return app_id

    def _cancel_existing(self, app_id):
        if time.monotonic() - self.submitted.get(app_id, 0.0) > 1.0:
            super()._cancel_existing(app_id)


class WaitsByPolling(LocalScheduler):
    """Not a bug: wait_for_change done right (it polls describe until the state changes)."""

    def wait_for_change(self, app_id, timeout):
        deadline = time.monotonic() + timeout
        first = self.describe(app_id)
        while time.monotonic() < deadline:
            time.sleep(0.05)
            now = self.describe(app_id)
            if now is None or first is None or now.state != first.state:
                break
        return True


class Oversleeps(WaitsByPolling):
    """wait_for_change sleeps through the app's end (until its timeout)."""

    def wait_for_change(self, app_id, timeout):
        time.sleep(timeout)
        return True


class Overruns(WaitsByPolling):
    """wait_for_change takes far longer than its timeout."""

    def wait_for_change(self, app_id, timeout):
        time.sleep(timeout + 30)
        return True


class Clean(SchedulerConformance):
    cancel_timeout = 8  # the kit's default is 60 s: a planted bug fails sooner here
    planted = LocalScheduler

    @pytest.fixture
    def scheduler(self, tmp_path):
        return self.planted("kit", state_dir=str(tmp_path / "state"))


class TestClean(Clean):
    pass
'''

# The planted bug -> the kit tests that must fail with it.
CAUGHT_BY = {
    "NoEnv": ["test_the_role_env_reaches_every_replica"],
    "NewestOnly": ["test_list_has_every_app_with_its_state"],
    "OtherAppDef": ["test_describe_gives_back_the_appdef"],
    "NoRoles": ["test_describe_gives_back_the_appdef"],
    "NoName": ["test_describe_gives_back_the_appdef"],
    "OneExitCode": ["test_one_failing_replica_of_several_fails_the_app"],
    "AnySuccess": [
        "test_one_failing_replica_of_several_fails_the_app",
        "test_one_failing_replica_of_several_with_retries",
    ],
    "CancelledInName": ["test_cancel_reaches_cancelled"],
    "ExitZeroReadsSucceeded": ["test_cancel_is_cancelled_when_replicas_exit_0"],
    "LostEarlyCancel": ["test_cancel_right_after_submit_is_not_lost"],
    "Oversleeps": ["test_wait_for_change_is_bounded_and_wakes_at_the_end"],
    "Overruns": ["test_wait_for_change_is_bounded_and_wakes_at_the_end"],
}
#: Schedulers without a planted bug that take another path through some checks.
ALSO_CLEAN = {"WaitsByPolling": ["test_wait_for_change_is_bounded_and_wakes_at_the_end"]}


def _outcomes(pytester: pytest.Pytester, source: str, expr: str) -> dict[tuple[str, str], str]:
    """Runs ``source`` with ``-k expr``; (class, test) -> PASSED, FAILED or ERROR."""
    pytester.makepyfile(source)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-rA", "-k", expr)
    found = {}
    for line in result.outlines:
        word, _, rest = line.partition(" ")
        if word in ("PASSED", "FAILED", "ERROR") and "::" in rest:
            cls, test = rest.split(" ", 1)[0].split("::")[1:3]
            found[(cls, test)] = word
    return found


def test_each_planted_bug_fails_the_kit_and_the_clean_scheduler_passes(
    pytester: pytest.Pytester,
) -> None:
    source = SUITE + "".join(
        f"\n\nclass Test{bug}(Clean):\n    planted = {bug}\n" for bug in [*CAUGHT_BY, *ALSO_CLEAN]
    )
    tests = sorted({t for ts in CAUGHT_BY.values() for t in ts})
    expr = " or ".join(
        [f"(TestClean and {t})" for t in tests]
        + [f"(Test{bug} and {t})" for bug, ts in CAUGHT_BY.items() for t in ts]
        + [f"(Test{name} and {t})" for name, ts in ALSO_CLEAN.items() for t in ts]
    )
    found = _outcomes(pytester, source, expr)
    expected = {("TestClean", t): "PASSED" for t in tests}
    expected |= {(f"Test{bug}", t): "FAILED" for bug, ts in CAUGHT_BY.items() for t in ts}
    expected |= {(f"Test{name}", t): "PASSED" for name, ts in ALSO_CLEAN.items() for t in ts}
    assert found == expected


def test_a_plugin_cannot_weaken_a_check(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        SUITE
        + """

class TestFewer(Clean):
    replicas = 1


class TestOverride(Clean):
    def test_submit_returns_an_id(self, kit):
        pass
"""
    )
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "-k", "(TestFewer or TestOverride) and test_submit_returns_an_id"
    )
    result.assert_outcomes(errors=2)
    result.stdout.fnmatch_lines_random(
        [
            "*TestFewer.replicas is 1: the kit needs apps of at least 2 replicas*",
            "*TestOverride.test_submit_returns_an_id overrides a check of the conformance kit*",
        ]
    )
