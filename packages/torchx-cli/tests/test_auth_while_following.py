"""Credentials the backend refuses while an app is followed: its state is unknown (exit 4).

They expired during ``run --wait`` (AWS's session tokens last hours): the app runs on, so
the command must not say it failed (exit 1). A plugin installed for these tests
(``expiry-plugin``) submits, then refuses every later call as a backend refuses expired
credentials.
"""

from __future__ import annotations

import pytest
from helpers import Cli, scheduler_plugin

SCHEDULER = """
from torchx.schedulers.contract.api import Scheduler
from torchx.schedulers.contract.errors import AuthenticationError, SchedulerError
from torchx.specs import AppDryRunInfo


class Expiry(Scheduler):
    def __init__(self, session_name):
        super().__init__("expiry", session_name)

    def _submit_dryrun(self, app, cfg):
        return AppDryRunInfo({"app": app.name}, str)

    def schedule(self, dryrun_info):
        return "app1"

    def describe(self, app_id):
        if app_id == "refused":  # any other refusal is still the scheduler's answer
            raise SchedulerError("the queue is gone")
        raise AuthenticationError("the backend did not accept the credentials: ExpiredToken")

    def list(self, cfg=None):
        return []

    def _cancel_existing(self, app_id):
        pass


def create_scheduler(session_name, **kwargs):
    return Expiry(session_name)
"""

EXPECTED = (
    "the backend did not accept the credentials: ExpiredToken; the state of "
    "expiry://torchx/app1 is unknown (it was not stopped): once the credentials are "
    "accepted again, follow it with 'torchx status expiry://torchx/app1'"
)


@pytest.fixture
def env(cli: Cli) -> dict[str, str]:
    return scheduler_plugin(cli.root, "expiry", SCHEDULER)


def test_run_wait_says_the_state_is_unknown(cli: Cli, env: dict[str, str]) -> None:
    proc = cli("run", "-s", "expiry", "--wait", "utils.echo", env=env, rc=4)
    assert proc.stdout.splitlines()[0] == "expiry://torchx/app1"
    assert proc.stderr.splitlines() == [f"torchx run: error: {EXPECTED}"]


def test_log_t_says_the_state_is_unknown(cli: Cli, env: dict[str, str]) -> None:
    proc = cli("log", "-t", "expiry://torchx/app1", env=env, rc=4)
    assert proc.stderr.splitlines() == [f"torchx log: error: {EXPECTED}"]


def test_a_one_shot_status_and_other_refusals_still_exit_1(cli: Cli, env: dict[str, str]) -> None:
    # status asks once: the scheduler's refusal is its answer (exit 1), as before
    proc = cli("status", "expiry://torchx/app1", env=env, rc=1)
    assert "did not accept the credentials" in proc.stderr
    assert len(proc.stderr.splitlines()) == 1
    proc = cli("log", "-t", "expiry://torchx/refused", env=env, rc=1)
    assert proc.stderr.splitlines() == ["torchx log: error: the queue is gone"]
