"""The conformance kit itself: a wrong declaration fails, an undeclared lack fails.

Each case runs the kit on the local scheduler in a separate pytest (pytester), so that
a kit test failing is the expected outcome here, not a failure of this suite.
"""

from __future__ import annotations

import sys

import pytest

from torchx.schedulers.contract.capabilities import LACKING, Capability, capability_table, missing

pytest_plugins = ["pytester"]

linux_only = pytest.mark.skipif(sys.platform != "linux", reason="the local scheduler is Linux-only")

# The kit test that depends on each capability (what must fail when it is wrongly declared).
DEPENDENT = {
    Capability.LOGS: "test_log_iter_regex",
    Capability.SEPARATE_STREAMS: "test_log_iter_stdout_and_stderr",
    Capability.COMBINED_STREAM: "test_log_iter_combined",
    Capability.LOG_TIME_WINDOW: "test_log_iter_since_until",
    Capability.EXIT_CODES: "test_describe_gives_every_replica",
    Capability.RETRIES: "test_retries_are_counted",
    Capability.DELETE: "test_delete_removes_the_app",
    Capability.LIST: "test_list_has_every_app_with_its_state",
    Capability.RANK0_ENV: "test_two_roles_of_n_replicas_with_macros",
    Capability.DESCRIBE_APPDEF: "test_describe_gives_back_the_appdef",
    Capability.DESCRIBE_RUN_OPTIONS: "test_describe_gives_back_the_run_options",
    Capability.REPLICA_STATUS: "test_one_failing_replica_of_several_fails_the_app",
    Capability.LAST_ATTEMPT_STATUS: "test_one_failing_replica_of_several_with_retries",
    Capability.MULTI_ROLE: "test_two_roles_of_n_replicas_with_macros",
}

HEADER = """
import pytest
from torchx.schedulers.local.scheduler import LocalScheduler, create_scheduler
from torchx.schedulers.contract.api import Stream
from torchx.schedulers.testing import Capability, SchedulerConformance
"""


def test_every_capability_has_a_dependent_test_and_a_documented_lack() -> None:
    assert set(DEPENDENT) == set(Capability) == set(LACKING)


@linux_only
def test_a_capability_declared_missing_but_present_fails(pytester: pytest.Pytester) -> None:
    single = [c for c in Capability if c != Capability.LOGS]
    pytester.makepyfile(
        HEADER
        + """
class TestAll(SchedulerConformance):
    missing = {c: "pretend" for c in Capability if c != Capability.LOGS}

    @pytest.fixture
    def scheduler(self, tmp_path):
        return create_scheduler("kit", state_dir=str(tmp_path / "state"))


class TestLogs(TestAll):
    missing = {Capability.LOGS: "pretend there are no logs"}


class TestLastAttempt(TestAll):
    missing = {Capability.LAST_ATTEMPT_STATUS: "pretend the failed attempt's pods are gone"}
"""
    )
    names = sorted(set(DEPENDENT.values()))
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-k", " or ".join(names))
    failed = {
        tuple(line.split(" ")[1].split("::")[1:3])
        for line in result.outlines
        if line.startswith("FAILED ")
    }
    # every test depending on a capability TestAll pretends to lack fails there
    assert {("TestAll", DEPENDENT[c]) for c in single} <= failed, result.stdout.str()
    assert ("TestLogs", "test_log_iter_regex") in failed, result.stdout.str()
    # alone (retries present), it fails on the exit code the local scheduler does keep
    last = ("TestLastAttempt", DEPENDENT[Capability.LAST_ATTEMPT_STATUS])
    assert last in failed, result.stdout.str()


@linux_only
def test_an_undeclared_lack_fails_and_a_declared_one_passes(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        HEADER
        + """
class OneLog(LocalScheduler):
    def log_iter(self, app_id, role_name, k=0, regex=None, since=None, until=None,
                 should_tail=False, streams=None):
        if streams in (Stream.STDOUT, Stream.STDERR):
            raise ValueError("one combined log per replica: use streams=combined")
        return super().log_iter(app_id, role_name, k, regex, since, until, should_tail, streams)


class TestUndeclared(SchedulerConformance):
    @pytest.fixture
    def scheduler(self, tmp_path):
        return OneLog("kit", state_dir=str(tmp_path / "state"))


class TestDeclared(TestUndeclared):
    missing = {Capability.SEPARATE_STREAMS: "one combined log per replica"}
"""
    )
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "-k", "test_log_iter_stdout_and_stderr"
    )
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*FAILED*TestUndeclared::test_log_iter_stdout_and_stderr*"])


def test_a_suite_without_a_scheduler_says_what_to_define(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        HEADER
        + """
class TestNothing(SchedulerConformance):
    pass
"""
    )
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "-k", "test_submit_returns_an_id"
    )
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*TestNothing must define the fixture 'scheduler'*"])


@linux_only
def test_a_factory_and_a_job_dir_option_are_the_fixtures(pytester: pytest.Pytester) -> None:
    """scheduler_factory gives the scheduler, job_dir_option the cfg and watched_paths."""
    pytester.makepyfile(
        HEADER
        + """
def _factory(name):
    return create_scheduler(name)


class TestDefaults(SchedulerConformance):
    scheduler_factory = _factory
    job_dir_option = "log_dir"

    def test_the_fixtures(self, scheduler, cfg, watched_paths, tmp_path):
        assert isinstance(scheduler, LocalScheduler) and scheduler.session_name == "kit"
        assert cfg == {"log_dir": str(tmp_path / "jobs")}
        assert watched_paths == [tmp_path]
"""
    )
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "-k", "test_the_fixtures or test_dryrun_creates_nothing"
    )
    result.assert_outcomes(passed=2)


def test_declarations_are_checked() -> None:
    class Good:
        missing_capabilities = {"list": "no API lists jobs", Capability.DELETE: "records stay"}

    assert missing(Good()) == {
        Capability.LIST: "no API lists jobs",
        Capability.DELETE: "records stay",
    }

    class Typo:
        missing_capabilities = {"lists": "no API lists jobs"}

    with pytest.raises(ValueError, match=r"Typo.missing_capabilities: 'lists' is not a Capabil"):
        missing(Typo)

    class NoReason:
        missing_capabilities = {Capability.LIST: ""}

    with pytest.raises(ValueError, match=r"NoReason.missing_capabilities\[LIST\]: the reason"):
        missing(NoReason)

    class NotAMapping:
        missing_capabilities = [Capability.LIST]

    with pytest.raises(ValueError, match="must map Capability to a reason"):
        missing(NotAMapping)

    class NoReplicaStatusButExitCodes:
        missing_capabilities = {Capability.REPLICA_STATUS: "one state per job"}

    with pytest.raises(ValueError, match="declares REPLICA_STATUS missing but not EXIT_CODES"):
        missing(NoReplicaStatusButExitCodes)


def test_the_table_escapes_pipes_and_lists_schedulers_lacking_nothing() -> None:
    class Sched:
        missing_capabilities = {Capability.LOGS: "a | b"}

    table = capability_table([("x", Sched), ("y", object())])
    assert "| x | `logs` | a \\| b | log_iter raises NotImplementedError |" in table
    assert table.endswith("| y | (nothing) | | |")
