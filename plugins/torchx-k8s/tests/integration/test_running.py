"""Apps that run: pods made by the stand-in's controllers run as containers on its node.

Through the real ``torchx`` command and the Runner, both flavours: three replicas meeting
over TCP at the rank-0 host, a failing replica's exit code, a pod that cannot be
scheduled (its reason in ``msg``), an image that cannot be pulled, logs read (and
followed) from a new process.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from k8scmd import Made, image, wait_ended

from torchx.runner import Runner, get_runner
from torchx.schedulers.testing.cli import TorchxCli
from torchx.specs import AppDef, AppState, Resource, Role, macros, parse_app_handle

FLAVOURS = ["volcano", "jobset"]
SMALL = Resource(cpu=1, gpu=0, memMB=128)


@pytest.fixture
def runner() -> Iterator[Runner]:
    with get_runner("it") as r:
        yield r


def _sh(name: str, script: str, n: int = 1, **kw: object) -> Role:
    # the replica id and the *name* of the rank-0 host's variable as $0 and $1
    return Role(
        name,
        image(),
        entrypoint="sh",
        args=["-c", script, macros.replica_id, macros.rank0_env],
        num_replicas=n,
        resource=SMALL,
        **kw,  # type: ignore[arg-type]
    )


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_three_replicas_meet_over_tcp_at_the_rank0_host(
    runner: Runner, made: Made, cli: TorchxCli, flavour: str
) -> None:
    script = (
        'eval "host=\\${$1}"; '
        # a listener (port) per peer: one port listened on twice in turn drops a peer
        # whose connection queued behind the first one's
        'if [ "$0" = 0 ]; then nc -l -p 9001 & nc -l -p 9002 & wait; '
        # the message is in a file before nc starts: with a pipe, a listener whose stdin
        # is empty may close its side first and the sender then quits, 0, having sent nothing
        'else echo "hello from $0 via $host" > /tmp/hello; '
        'until nc "$host" 900$0 < /tmp/hello; do sleep 0.3; done; fi'
    )
    handle = runner.run(
        AppDef("meet", [_sh("peer", script, n=3)]), "kubernetes", {"flavour": flavour}
    )
    app_id = made.add(parse_app_handle(handle).app_id)
    assert wait_ended(runner, handle) == AppState.SUCCEEDED
    # the rank-0 replica's log, read by a new process
    out = cli("log", f"{handle}/peer/0").stdout
    got = sorted(
        line.split("hello from ", 1)[1] for line in out.splitlines() if "hello from" in line
    )
    assert [g.split(" via ")[0] for g in got] == ["1", "2"], out
    name = app_id.split(":")[1]
    assert all(g.split(" via ")[1].startswith(name) for g in got), got


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_a_failing_replica_fails_the_app_with_its_exit_code(
    runner: Runner, made: Made, flavour: str
) -> None:
    script = 'if [ "$0" = 1 ]; then echo failing; exit 7; fi; sleep 120'
    handle = runner.run(AppDef("fail", [_sh("w", script, n=2)]), "kubernetes", {"flavour": flavour})
    made.add(parse_app_handle(handle).app_id)
    assert wait_ended(runner, handle) == AppState.FAILED
    status = runner.status(handle)
    assert status is not None
    failed = status.roles[0].replicas[1]
    assert failed.state == AppState.FAILED and failed.exit_code == 7, status
    assert "exited with 7" in status.msg


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_an_unschedulable_pod_says_why(runner: Runner, made: Made, flavour: str) -> None:
    role = Role(
        "big",
        image(),
        entrypoint="sleep",
        args=["60"],
        resource=Resource(cpu=4096, gpu=0, memMB=128),
    )
    handle = runner.run(AppDef("big", [role]), "kubernetes", {"flavour": flavour})
    made.add(parse_app_handle(handle).app_id)
    deadline = time.monotonic() + 60
    while True:
        status = runner.status(handle)
        assert status is not None and status.state == AppState.PENDING, status
        if "Unschedulable" in status.msg:
            break
        assert time.monotonic() < deadline, status
        time.sleep(0.5)
    assert "Insufficient cpu" in status.msg and "big/0" in status.msg


def test_an_image_that_cannot_be_pulled_says_so(runner: Runner, made: Made) -> None:
    role = Role("w", "torchx-dev/no-such-image:0", entrypoint="true", resource=SMALL)
    handle = runner.run(AppDef("pull", [role]), "kubernetes")
    made.add(parse_app_handle(handle).app_id)
    deadline = time.monotonic() + 60
    while True:
        status = runner.status(handle)
        assert status is not None and not status.state.is_terminal(), status
        if "ErrImagePull" in status.msg or "ImagePullBackOff" in status.msg:
            break
        assert time.monotonic() < deadline, status
        time.sleep(0.5)
    assert "no-such-image" in status.msg


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_logs_are_followed_from_a_new_process(cli: TorchxCli, made: Made, flavour: str) -> None:
    out = cli(
        "run", "-s", "kubernetes", "-cfg", f"flavour={flavour}", "utils.sh", "--image", image(),
        "sh", "-c", "for i in 1 2 3 4 5; do echo line $i; sleep 0.5; done",
    )  # fmt: skip
    handle = out.stdout.strip().splitlines()[-1]
    made.add(parse_app_handle(handle).app_id)
    followed = cli("log", "-t", f"{handle}/sh/0", timeout=180).stdout
    assert [x.split("line ", 1)[1] for x in followed.splitlines() if "line " in x] == [
        "1",
        "2",
        "3",
        "4",
        "5",
    ]
    assert cli.status(handle)["state"] == "SUCCEEDED"
    tail = cli("log", "--regex", "line [45]", f"{handle}/sh/0").stdout
    assert [x.split("line ", 1)[1] for x in tail.splitlines() if "line " in x] == ["4", "5"]
