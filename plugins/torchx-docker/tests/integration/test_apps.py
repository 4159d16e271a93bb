"""Apps on the real engine, through the Runner and the ``torchx`` command.

Replicas meeting over TCP by container name, two roles, a failing replica's exit code,
an OOM-killed replica, cancel, each replica's logs on both streams, retries of both
policies, and a later process (a new ``torchx``) that follows an app it did not start.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from dockercmd import busybox

from torchx.runner import Runner, get_runner
from torchx.schedulers.testing.cli import TorchxCli, app_id
from torchx.specs import AppDef, AppState, BindMount, Resource, RetryPolicy, Role

SMALL = Resource(cpu=1, gpu=0, memMB=64)


@pytest.fixture
def runner() -> Iterator[Runner]:
    with get_runner("itest") as r:
        handles: list[str] = []
        r.started = handles  # type: ignore[attr-defined]
        yield r
        for handle in handles:
            r.delete(handle)


def _run(runner: Runner, app: AppDef, **cfg: Any) -> str:
    handle = runner.run(app, "docker", cfg=cfg)
    runner.started.append(handle)  # type: ignore[attr-defined]
    return handle


def _wait(runner: Runner, handle: str, timeout: float = 60) -> Any:
    status = runner.wait(handle, wait_interval=0.2, timeout=timeout)
    assert status is not None
    return status


def _role(name: str, script: str, n: int = 1, **kw: Any) -> Role:
    return Role(
        name, busybox(), entrypoint="sh", args=["-c", script], num_replicas=n, resource=SMALL, **kw
    )


def test_three_replicas_meet_over_tcp_by_container_name(cli: TorchxCli) -> None:
    # a listener (port) per peer: with one port listened on twice in turn, a peer whose
    # connection queued behind the first one's was dropped when that listener exited
    script = (
        'if [ "$0" = 0 ]; then nc -l -p 9001 & nc -l -p 9002 & wait; '
        # the message is in a file before nc starts: with a pipe, a listener whose stdin
        # is empty may close its side first and the sender then quits, 0, having sent nothing
        'else echo "hello from $0 to $TORCHX_RANK0_HOST" > /tmp/hello; '
        'until nc "$TORCHX_RANK0_HOST" 900$0 < /tmp/hello; '
        "do sleep 0.2; done; fi"
    )
    handle, proc = cli.run(
        "--wait", "--log", "utils.sh", "--image", busybox(),
        "--num_replicas", "3", "--memMB", "64", "sh", "-c", script, "${replica_id}",
    )  # fmt: skip
    got = sorted(line.split(" ", 1)[1] for line in proc.stdout.splitlines() if "hello from" in line)
    assert got == [f"hello from {k} to {app_id(handle)}-sh-0" for k in (1, 2)], proc.stdout
    assert "SUCCEEDED" in cli("status", handle).stdout
    # when it was created and when its last container exited (the engine's records)
    data = json.loads(cli("status", "--json", handle).stdout)["data"]
    status = data["status"]
    assert status["start_time"] <= status["end_time"] <= time.time(), status
    assert abs(data["duration_s"] - (status["end_time"] - status["start_time"])) < 0.01, data


def test_two_roles_a_failing_replica_and_its_exit_code(runner: Runner, tmp_path: Path) -> None:
    # bad/1 fails only once the test has seen both ok replicas end (it creates "go" in a
    # folder bind-mounted into every replica): the replicas that ended before the failure
    # keep their state and exit code; bad/0, still running then, is stopped (CANCELLED)
    wait_go = "until [ -e /sync/go ]; do sleep 0.1; done; "
    app = AppDef(
        "two",
        [
            _role("ok", "echo fine", n=2),
            _role(
                "bad",
                wait_go + 'if [ "$0" = 1 ]; then echo "bad batch $0" >&2; exit 7; fi; sleep 600',
                n=2,
                mounts=[BindMount(src_path=str(tmp_path), dst_path="/sync", read_only=True)],
            ),
        ],
    )
    app.roles[1].args.append("${replica_id}")
    handle = _run(runner, app)
    deadline = time.monotonic() + 60
    while True:
        status = runner.status(handle)
        assert status is not None and not status.state.is_terminal(), status
        ok = {r.role: r.replicas for r in status.roles}.get("ok", [])
        if [r.state for r in ok] == [AppState.SUCCEEDED] * 2:
            break
        assert time.monotonic() < deadline, status
        time.sleep(0.1)
    (tmp_path / "go").touch()
    status = _wait(runner, handle)
    assert status.state == AppState.FAILED
    by_role = {r.role: r.replicas for r in status.roles}
    assert [(r.id, r.state, r.exit_code) for r in by_role["ok"]] == [
        (0, AppState.SUCCEEDED, 0),
        (1, AppState.SUCCEEDED, 0),
    ]
    assert [(r.id, r.state) for r in by_role["bad"]] == [
        (0, AppState.CANCELLED),
        (1, AppState.FAILED),
    ]
    assert by_role["bad"][1].exit_code == 7
    assert "its other replicas were stopped" in status.msg
    assert "replica bad/1" in status.msg and "exited with 7" in status.msg
    # the engine knows only the exit code: the error is the end of the replica's stderr
    assert "bad batch 1" in by_role["bad"][1].structured_error_msg
    assert "bad batch 1" in status.structured_error_msg


def test_an_oom_killed_replica_says_so(runner: Runner) -> None:
    # busybox's sh keeps growing a variable until the 16 MiB limit kills it
    hog = Role(
        "hog",
        busybox(),
        entrypoint="sh",
        args=["-c", 'x=xxxxxxxxxxxxxxxx; while true; do x="$x$x"; done'],
        resource=Resource(cpu=1, gpu=0, memMB=16),
    )
    handle = _run(runner, AppDef("oom", [hog]))
    status = _wait(runner, handle)
    assert status.state == AppState.FAILED
    [replica] = status.roles[0].replicas
    assert replica.exit_code == 137
    assert "out of memory (OOMKilled" in status.msg
    error = json.loads(status.structured_error_msg)
    assert error["reason"] == "OOMKilled" and error["version"] == 1
    assert json.loads(replica.structured_error_msg)["reason"] == "OOMKilled"


def test_cancel_stops_every_container(runner: Runner, api: Any) -> None:
    handle = _run(runner, AppDef("long", [_role("sleep", "sleep 600", n=2)]), stop_grace=1)
    deadline = time.monotonic() + 30
    while runner.status(handle).state != AppState.RUNNING:  # type: ignore[union-attr]
        assert time.monotonic() < deadline
        time.sleep(0.1)
    start = time.monotonic()
    runner.cancel(handle)
    status = _wait(runner, handle, timeout=30)
    assert status.state == AppState.CANCELLED
    assert time.monotonic() - start < 10  # sh under the engine's init stops on SIGTERM
    live = api.containers(filters={"label": [f"torchx.pytorch.org/app-id={app_id(handle)}"]})
    assert live == []  # nothing of the app runs


def test_each_replica_log_on_both_streams(cli: TorchxCli) -> None:
    handle = cli.start(
        "--wait", "utils.sh", "--image", busybox(), "--num_replicas", "2",
        "sh", "-c", 'echo "out $0"; echo "err $0" >&2', "${replica_id}",
    )  # fmt: skip
    for k in (0, 1):
        out = cli("log", "--streams", "stdout", f"{handle}/sh/{k}").stdout
        err = cli("log", "--streams", "stderr", f"{handle}/sh/{k}").stdout
        assert out.splitlines() == [f"sh/{k} out {k}"]
        assert err.splitlines() == [f"sh/{k} err {k}"]
    both = cli("log", f"{handle}/sh").stdout.splitlines()
    assert sorted(both) == ["sh/0 err 0", "sh/0 out 0", "sh/1 err 1", "sh/1 out 1"]


@pytest.mark.parametrize("policy", [RetryPolicy.REPLICA, RetryPolicy.APPLICATION])
def test_retries_of_each_policy_are_counted(runner: Runner, policy: RetryPolicy) -> None:
    # replica 1 always fails; replica 0 succeeds
    role = _role("r", 'echo "try"; [ "$0" = 0 ]', n=2, max_retries=2, retry_policy=policy)
    role.args.append("${replica_id}")
    handle = _run(runner, AppDef("retry", [role]))
    status = _wait(runner, handle, timeout=90)
    assert status.state == AppState.FAILED
    assert status.num_restarts == 2
    failed = status.roles[0].replicas[1]
    assert failed.state == AppState.FAILED and failed.exit_code == 1
    tries = [line for line in runner.log_lines(handle, "r", 1) if line.strip() == "try"]
    assert len(tries) == 3  # the first run and two restarts, all in one container's log


def test_a_new_process_follows_an_app_it_did_not_start(cli: TorchxCli) -> None:
    handle = cli.start("utils.sh", "--image", busybox(), "sh", "-c", "echo from-afar")
    deadline = time.monotonic() + 30
    while "SUCCEEDED" not in cli("status", handle).stdout:
        assert time.monotonic() < deadline
        time.sleep(0.2)
    assert "sh/0 from-afar" in cli("log", f"{handle}/sh/0").stdout
    listed = cli("list", "-s", "docker").stdout
    assert app_id(handle) in listed
    described = cli("describe", handle).stdout
    assert "sh" in described and busybox() in described


def test_a_later_status_masks_the_run_options_secrets_the_app_printed(cli: TorchxCli) -> None:
    """``-cfg env=`` and ``copy_env`` put secrets in the container; the program prints them
    on stderr and fails. A later ``torchx status`` knows no run option: it masks them in
    the failure's message all the same, from the env the engine says the container ran
    with; ``--show-secrets`` shows them (so they are there to mask)."""
    secret, host = "hunter2-docker", "AKIA-host-only-7"
    cli.env["MY_SECRET_KEY"] = host
    script = 'echo "login $DB_PASSWORD $MY_SECRET_KEY refused" >&2; exit 1'
    handle, _ = cli.run(
        "-cfg", f"env=DB_PASSWORD:{secret},LEVEL:debug", "-cfg", "copy_env=MY_SECRET_KEY",
        "utils.sh", "--image", busybox(), "--memMB", "64", "sh", "-c", script,
    )  # fmt: skip
    cli.wait_state(handle, {"FAILED"})
    for extra in ([], ["--json"]):
        out = cli("status", *extra, handle).stdout
        assert secret not in out and host not in out and "**** **** refused" in out, out
    shown = cli("status", "--show-secrets", handle).stdout
    assert f"login {secret} {host} refused" in shown, shown


def test_a_role_retry_restarts_that_role_only(runner: Runner) -> None:
    failing = _role("a", 'echo "try"; [ "$0" = 0 ]', n=2, max_retries=1)
    failing.retry_policy = RetryPolicy.ROLE
    failing.args.append("${replica_id}")
    other = _role("b", "echo b-ran; sleep 3")
    handle = _run(runner, AppDef("role-retry", [failing, other]))
    status = _wait(runner, handle, timeout=90)
    assert status.state == AppState.FAILED
    assert status.num_restarts == 1
    tries = [line.strip() for line in runner.log_lines(handle, "a", 0)]
    assert tries == ["try", "try"]  # replica 0 succeeded, and was restarted with its role
    assert [line.strip() for line in runner.log_lines(handle, "b", 0)] == ["b-ran"]
