"""``torchx log -t`` of a retried app follows it to its end, attempt after attempt.

A plugin installed for these tests (``retry-plugin``) has a scheduler whose replicas
restart as docker's and Kubernetes' do: a followed log ends with its attempt. Its app has
two replicas; w/1 fails once and is restarted alone (``REPLICA`` policy) while w/0 has
succeeded. Its backend is a folder: each time a replica's log has been read to its end,
the attempt ended, which is what moves the app on (no clock involved).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import Cli, scheduler_plugin

SCHEDULER = """
import os

from torchx.schedulers.contract.api import DescribeAppResponse, Scheduler
from torchx.schedulers.contract.errors import SchedulerError
from torchx.specs import AppState, ReplicaStatus, RoleStatus

#: The log of each attempt of each replica.
ATTEMPTS = {"w/0": [["a0 only"]], "w/1": [["b0 first", "b0 failed"], ["b1 second"]]}


def _ended(name):
    path = os.path.join(os.environ["RETRY_BACKEND"], "ended-" + name.replace("/", "-"))
    try:
        with open(path) as f:
            return len(f.readlines())
    except FileNotFoundError:
        return 0


class Retry(Scheduler):
    def __init__(self, session_name):
        super().__init__("retry", session_name)

    def _submit_dryrun(self, app, cfg):
        raise NotImplementedError

    def schedule(self, dryrun_info):
        raise NotImplementedError

    def describe(self, app_id):
        done0, done1 = _ended("w/0"), _ended("w/1")
        w0 = AppState.SUCCEEDED if done0 else AppState.RUNNING
        if done1 >= 2:
            state, restarts, w1 = AppState.SUCCEEDED, 1, AppState.SUCCEEDED
        else:
            state, restarts, w1 = AppState.RUNNING, done1, AppState.RUNNING
        replicas = [
            ReplicaStatus(id=0, state=w0, role="w", hostname="h"),
            ReplicaStatus(id=1, state=w1, role="w", hostname="h"),
        ]
        return DescribeAppResponse(
            app_id=app_id, state=state, num_restarts=restarts,
            roles_statuses=[RoleStatus("w", replicas)],
        )

    def log_iter(self, app_id, role_name, k=0, regex=None, since=None, until=None,
                 should_tail=False, streams=None):
        name = f"{role_name}/{k}"
        if app_id == "broken":
            raise SchedulerError("the backend lost the log")
        attempts = ATTEMPTS[name]
        attempt = _ended(name)
        yield from attempts[min(attempt, len(attempts) - 1)]
        if should_tail:  # followed to the end of this attempt: it ended
            path = os.path.join(os.environ["RETRY_BACKEND"], "ended-" + name.replace("/", "-"))
            with open(path, "a") as f:
                f.write("ended\\n")

    def list(self, cfg=None):
        return []

    def _cancel_existing(self, app_id):
        pass


def create_scheduler(session_name, **kwargs):
    return Retry(session_name)
"""


def _retry_plugin(root: Path) -> dict[str, str]:
    """The plugin ``retry-plugin`` on PYTHONPATH, with its backend folder; returns the env."""
    backend = root / "retry-backend"
    backend.mkdir()
    return {**scheduler_plugin(root, "retry", SCHEDULER), "RETRY_BACKEND": str(backend)}


@pytest.fixture
def env(cli: Cli) -> dict[str, str]:
    return _retry_plugin(cli.root)


def test_log_t_follows_every_attempt_with_a_marker_between(cli: Cli, env: dict[str, str]) -> None:
    proc = cli("log", "-t", "retry://torchx/app1", env=env)
    lines = proc.stdout.splitlines()
    marker = "--- retry://torchx/app1: restarted (restart 1); the logs of attempt 2 follow ---"
    assert marker in lines, proc.stdout
    before, after = lines[: lines.index(marker)], lines[lines.index(marker) + 1 :]
    assert sorted(before) == ["w/0 a0 only", "w/1 b0 failed", "w/1 b0 first"]
    assert after == ["w/1 b1 second"]  # the restarted replica alone; w/0 is not repeated
    assert proc.stderr == ""


def test_log_without_t_reads_once(cli: Cli, env: dict[str, str]) -> None:
    out = cli("log", "retry://torchx/app1/w/1", env=env).stdout
    assert out.splitlines() == ["w/1 b0 first", "w/1 b0 failed"]


def test_an_error_reading_a_log_goes_to_stderr_and_exits_1(cli: Cli, env: dict[str, str]) -> None:
    for extra in ([], ["-t"]):
        proc = cli("log", *extra, "retry://torchx/broken", env=env, rc=1)
        assert proc.stdout == ""
        assert sorted(proc.stderr.splitlines()) == [
            f"torchx log: error reading the log of w/{k}: SchedulerError: the backend lost the log"
            for k in (0, 1)
        ]
