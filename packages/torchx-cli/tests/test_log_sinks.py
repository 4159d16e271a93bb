"""``torchx log`` and ``torchx log --json`` are two sinks of one reader: the same exit
statuses and the same following across the attempts of a retried app.

A plugin installed for these tests (``fake-plugin``) has apps whose logs break (an
outage, credentials refused) and a retried app whose replicas restart as docker's and
Kubernetes' do: a followed log ends with its attempt. Its logs keep stdout and stderr
apart; its backend is a folder in which each stream read to its end under ``-t`` is
noted, and an attempt of a replica ends once both its streams were (no clock involved).
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from typing import Any

import pytest
from helpers import Cli, scheduler_plugin

SCHEDULER = """
import os

from torchx.schedulers.contract.api import DescribeAppResponse, Scheduler, Stream
from torchx.schedulers.contract.errors import AuthenticationError, TransientSchedulerError
from torchx.specs import AppState, ReplicaStatus, RoleStatus

#: The log of each attempt of each replica of the app "retried", by stream.
OUT = {"w/0": [["a0 only"]], "w/1": [["b0 first", "b0 failed"], ["b1 second"]]}
ERR = {"w/0": [[]], "w/1": [["b0 oops"], []]}


def _path(name, stream):
    return os.path.join(os.environ["FAKE_BACKEND"], f"ended-{name.replace('/', '-')}-{stream}")


def _ended(name):
    counts = []
    for stream in ("stdout", "stderr"):
        try:
            with open(_path(name, stream)) as f:
                counts.append(len(f.readlines()))
        except FileNotFoundError:
            counts.append(0)
    return min(counts)


class Fake(Scheduler):
    def __init__(self, session_name):
        super().__init__("fake", session_name)

    def _submit_dryrun(self, app, cfg):
        raise NotImplementedError

    def schedule(self, dryrun_info):
        raise NotImplementedError

    def describe(self, app_id):
        if app_id != "retried":  # running; its logs break (see log_iter)
            replicas = [ReplicaStatus(k, AppState.RUNNING, "w", "host") for k in (0, 1)]
            return DescribeAppResponse(
                app_id=app_id, state=AppState.RUNNING, roles_statuses=[RoleStatus("w", replicas)]
            )
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
        if app_id == "logdown":  # the backend stopped answering mid-stream
            if streams != Stream.STDERR:
                yield f"{name} first line"
            raise TransientSchedulerError("log service down")
        if app_id == "authlog":  # the credentials expired while the log was read
            if streams != Stream.STDERR:
                yield f"{name} first line"
            raise AuthenticationError("the backend did not accept the credentials: ExpiredToken")
        wanted = {
            Stream.STDOUT: ["stdout"], Stream.STDERR: ["stderr"]
        }.get(streams, ["stdout", "stderr"])
        attempt = _ended(name)
        for stream, lines in (("stdout", OUT[name]), ("stderr", ERR[name])):
            if stream in wanted:
                yield from lines[min(attempt, len(lines) - 1)]
        if should_tail:  # followed to the end of this attempt
            for stream in wanted:
                with open(_path(name, stream), "a") as f:
                    f.write("ended\\n")

    def list(self, cfg=None):
        return []

    def _cancel_existing(self, app_id):
        pass


def create_scheduler(session_name, **kwargs):
    return Fake(session_name)
"""

#: What ``following`` says when the credentials are refused (torchx.cli._runtime).
REFUSED = (
    "torchx log: error: the backend did not accept the credentials: ExpiredToken; the state "
    "of fake://torchx/authlog is unknown (it was not stopped): once the credentials are "
    "accepted again, follow it with 'torchx status fake://torchx/authlog'"
)


@pytest.fixture
def env(cli: Cli) -> dict[str, str]:
    backend = cli.root / "fake-backend"
    backend.mkdir()
    return {**scheduler_plugin(cli.root, "fake", SCHEDULER), "FAKE_BACKEND": str(backend)}


def _docs(stdout: str) -> list[dict[str, Any]]:
    docs = [json.loads(line) for line in stdout.splitlines()]
    assert all(d["formatVersion"] == "torchx.cli/v1" for d in docs), stdout
    return docs


@pytest.mark.parametrize("follow", [[], ["-t"]])
def test_log_json_cut_short_by_an_outage_exits_4_as_the_text_form(
    cli: Cli, env: dict[str, str], follow: list[str]
) -> None:
    handle = "fake://torchx/logdown/w/0"
    text = cli("log", *follow, handle, env=env, rc=4)
    assert text.stdout == "w/0 w/0 first line\n"
    proc = cli("log", *follow, "--json", handle, env=env, rc=4)
    assert [(d["kind"], d["data"]["stream"], d["data"]["line"]) for d in _docs(proc.stdout)] == [
        ("LogLine", "stdout", "w/0 first line")
    ]
    # said once for the replica (both its streams broke), as the text form says it
    assert proc.stderr.splitlines() == text.stderr.splitlines()
    assert proc.stderr.splitlines() == [
        "torchx log: error reading the log of w/0: TransientSchedulerError: log service down"
    ]


def test_log_t_json_follows_a_retried_app_across_its_attempts(
    cli: Cli, env: dict[str, str]
) -> None:
    proc = cli("log", "-t", "--json", "fake://torchx/retried", env=env)
    assert proc.stderr == ""
    docs = _docs(proc.stdout)
    kinds = [d["kind"] for d in docs]
    assert kinds.count("LogAttempt") == 1, proc.stdout
    cut = kinds.index("LogAttempt")
    assert docs[cut]["data"] == {
        "handle": "fake://torchx/retried",
        "restarts": 1,
        "attempt": 2,
        "line": "--- fake://torchx/retried: restarted (restart 1); "
        "the logs of attempt 2 follow ---",
    }

    def seen(part: list[dict[str, Any]]) -> list[tuple[str, str, str]]:
        return [
            (f"{d['data']['role']}/{d['data']['replica']}", d["data"]["stream"], d["data"]["line"])
            for d in part
        ]

    before, after = seen(docs[:cut]), seen(docs[cut + 1 :])
    assert sorted(before) == [
        ("w/0", "stdout", "a0 only"),
        ("w/1", "stderr", "b0 oops"),
        ("w/1", "stdout", "b0 failed"),
        ("w/1", "stdout", "b0 first"),
    ]
    assert before.index(("w/1", "stdout", "b0 first")) < before.index(
        ("w/1", "stdout", "b0 failed")
    )
    assert after == [("w/1", "stdout", "b1 second")]  # the restarted replica alone
    assert all(d["data"]["time"] is None for d in docs if d["kind"] == "LogLine")


def test_log_help_documents_the_attempt_document(cli: Cli) -> None:
    assert "LogAttempt" in cli("log", "--help").stdout


def test_credentials_refused_while_following_a_log_exit_4_in_one_line(
    cli: Cli, env: dict[str, str]
) -> None:
    handle = "fake://torchx/authlog"
    text = cli("log", "-t", handle, env=env, rc=4)
    assert text.stderr.splitlines() == [REFUSED]
    assert set(text.stdout.splitlines()) <= {"w/0 w/0 first line", "w/1 w/1 first line"}
    assert text.stdout.splitlines(), "what was read before the refusal is printed"
    proc = cli("log", "-t", "--json", handle, env=env, rc=4)
    assert proc.stderr.splitlines() == [REFUSED]
    assert {d["kind"] for d in _docs(proc.stdout)} <= {"LogLine"}
    # asked once (no -t), the refusal is the scheduler's answer about that log: exit 1
    once = cli("log", handle, env=env, rc=1)
    assert sorted(once.stderr.splitlines()) == [
        f"torchx log: error reading the log of w/{k}: AuthenticationError: the backend did "
        "not accept the credentials: ExpiredToken"
        for k in (0, 1)
    ]


def test_a_refusal_while_following_ends_the_cut_line_and_ends_the_command(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """In the reader itself: followed, the first refusal of the credentials is raised (for
    the command's one line), after the line it cut is ended; read once, it is one
    replica's error among others."""
    from torchx.cli import logs
    from torchx.schedulers.contract.errors import AuthenticationError

    class Cut:  # a log in blocks that cannot be polled: a thread each
        def blocks(self, size: int) -> Iterator[str]:
            yield "half a line"
            raise AuthenticationError("expired")

        def __iter__(self) -> Iterator[str]:
            return self.blocks(1)

    class Source:
        def log_lines(self, app_handle: str, role_name: str, k: int = 0, **kw: Any) -> Cut:
            return Cut()

    pairs = [("w", 0), ("w", 1)]
    out = io.StringIO()
    with pytest.raises(AuthenticationError, match=r"^expired$"):
        logs.stream(Source(), "x://s/app", pairs, out=out, tail=True)
    assert out.getvalue() in ("w/0 half a line\n", "w/1 half a line\n")
    assert capsys.readouterr().err == ""
    out = io.StringIO()
    unread = logs.stream(Source(), "x://s/app", pairs, out=out)
    assert unread == 2 and unread.exit_status == 1
    assert sorted(out.getvalue().splitlines()) == ["w/0 half a line", "w/1 half a line"]
    assert sorted(capsys.readouterr().err.splitlines()) == [
        f"torchx log: error reading the log of w/{k}: AuthenticationError: expired" for k in (0, 1)
    ]
