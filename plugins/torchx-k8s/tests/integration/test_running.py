"""Apps that run on the real node (kubelet, kube-scheduler, Volcano; JobSet's controller
is the stand-in's).

Through the real ``torchx`` command and the Runner, both flavours: three replicas meeting
over TCP at the rank-0 host, rank 0 resolving that host at its first instruction (as
torchrun's c10d rendezvous does to decide who hosts the store), a failing replica's exit code, a pod that cannot be
scheduled (the real scheduler's reason in ``msg``: kube-scheduler's for a pod, Volcano's
PodGroup condition for a gang), an image that cannot be pulled, logs read (and followed)
from a new process, lines of 20 KB and 10 MB read whole, and the kubelet stopped for a
minute while an app runs (UNKNOWN once the node is NotReady, never FAILED; the app then
ends as it did). Apps others disrupt: test_disruption.py.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path
from typing import Any

import pytest
from k8scmd import Made, image, wait_ended

from torchx.runner import Runner
from torchx.schedulers.testing.cli import TorchxCli
from torchx.specs import AppDef, AppState, Resource, Role, macros, parse_app_handle

FLAVOURS = ["volcano", "jobset"]
SMALL = Resource(cpu=1, gpu=0, memMB=128)


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


#: $1: the replica id, $2: the name of the rank-0 host's variable. Rank 0 looks the host
#: up once, at its first instruction, as torchrun's c10d rendezvous does to decide whether
#: this node hosts the store (the name must be one of this machine's addresses); the
#: others retry, as torchrun's clients do.
RESOLVE = """
import os, socket, sys, time
rank, host = sys.argv[1], os.environ[sys.argv[2]]
def addrs(name):
    return {a[4][0] for a in socket.getaddrinfo(name, None, proto=socket.IPPROTO_TCP)}
own = addrs(socket.gethostname())
if rank == "0":
    try:
        found = addrs(host)
    except socket.gaierror as e:
        sys.exit(f"rank 0: {host}: {e}")
    print(f"rank 0: {host} -> {sorted(found)}, mine: {sorted(own)}")
    sys.exit(0 if found & own else 3)
for _ in range(100):
    try:
        print(f"rank {rank}: {host} -> {sorted(addrs(host))}")
        sys.exit(0)
    except socket.gaierror:
        time.sleep(0.3)
sys.exit(4)
"""


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_rank0_resolves_the_rank0_host_at_once(runner: Runner, made: Made, flavour: str) -> None:
    # The qualified <host>.<subdomain> resolves only once the cluster DNS has the pod's
    # address (0.5 to 0.7 s after the container starts on an idle dev node): a rank 0
    # given that name, as before, failed here (both flavours), and torchrun's rank 0 then
    # joined as a client of a store nobody hosted.
    python = os.environ.get("TORCHX_DEV_DOCKER_PYTHON_IMAGE", "torchx-dev/python:2")
    role = Role(
        "peer", python, entrypoint="python3",
        args=["-c", RESOLVE, macros.replica_id, macros.rank0_env], num_replicas=2, resource=SMALL,
    )  # fmt: skip
    handle = runner.run(AppDef("resolve", [role]), "kubernetes", {"flavour": flavour})
    made.add(parse_app_handle(handle).app_id)
    assert wait_ended(runner, handle) == AppState.SUCCEEDED, runner.status(handle)


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
    if flavour == "volcano":  # Volcano's scheduler places the gang: no pod is made
        assert "gang unschedulable" in status.msg and "NotEnoughResources" in status.msg
    else:  # kube-scheduler, for the pod
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


def test_long_lines_come_back_whole(cli: TorchxCli, made: Made) -> None:
    # the runtime keeps a line as 16 KiB pieces, each sent by the kubelet with a timestamp
    script = (
        "echo first; head -c 20000 /dev/zero | tr '\\0' a; echo; "
        "head -c 10000000 /dev/zero | tr '\\0' b; echo; echo last"
    )
    out = cli("run", "-s", "kubernetes", "utils.sh", "--image", image(), "sh", "-c", script)
    handle = out.stdout.strip().splitlines()[-1]
    made.add(parse_app_handle(handle).app_id)
    for args in (("log", "-t"), ("log",)):  # followed, then read once
        lines = cli(*args, f"{handle}/sh/0", timeout=300).stdout.splitlines()
        for char, n in (("a", 20_000), ("b", 10_000_000)):
            [line] = [x for x in lines if char * 100 in x]
            assert len(line) - len(line.rstrip(char)) == n, (args, char, line[:200])
            assert len(line) < n + 100, (args, char, len(line))  # no timestamps inside
        assert any(x.endswith("first") for x in lines) and lines[-1].endswith("last"), lines[-1]


def _node_ready(kube: Any) -> bool:
    from kubernetes import client

    node = client.CoreV1Api(kube).read_node("torchx-dev-node")
    return any(c.type == "Ready" and c.status == "True" for c in node.status.conditions or [])


def test_the_kubelet_stopped_for_a_minute_is_unknown_then_recovers(
    runner: Runner, made: Made, kube: Any
) -> None:
    # the node's kubelet stops answering (SIGSTOP) while the app runs: its pod's status
    # goes stale, the node NotReady after 40 s (the node monitor's grace), and the node
    # lifecycle controller marks the pod not Ready. The app must read UNKNOWN from then
    # on (not a stale RUNNING, never FAILED); once the kubelet is back the app ends as
    # it did (its container kept running)
    pidfile = (
        Path(os.environ.get("TORCHX_DEV_K8S_DIR", "/var/tmp/torchx-dev-k8s")) / "run/kubelet.pid"
    )
    assert pidfile.exists(), f"no real kubelet ({pidfile}): dev/k8s up with the real node"
    kubelet = int(pidfile.read_text().split()[0])
    role = Role("w", image(), entrypoint="sh", args=["-c", "sleep 30; echo done"], resource=SMALL)
    handle = runner.run(AppDef("nokubelet", [role]), "kubernetes")
    made.add(parse_app_handle(handle).app_id)
    deadline = time.monotonic() + 60
    while runner.status(handle).state != AppState.RUNNING:  # type: ignore[union-attr]
        assert time.monotonic() < deadline
        time.sleep(0.5)
    # (seconds since the node went NotReady, or None while it was Ready; the app's state)
    seen: list[tuple[float | None, AppState, str]] = []
    os.kill(kubelet, signal.SIGSTOP)
    try:
        stopped, not_ready = time.monotonic(), None
        # a minute, and at least 20 s of the node NotReady
        while (
            time.monotonic() - stopped < 60
            or not_ready is None
            or (time.monotonic() - not_ready < 20)
        ):
            assert time.monotonic() - stopped < 120, seen
            if not_ready is None and not _node_ready(kube):
                not_ready = time.monotonic()
            status = runner.status(handle)
            assert status is not None
            since = None if not_ready is None else time.monotonic() - not_ready
            seen.append((since, status.state, status.msg))
            time.sleep(2)
    finally:
        os.kill(kubelet, signal.SIGCONT)
    states = [s for _, s, _ in seen]
    assert AppState.FAILED not in states and not any(s.is_terminal() for s in states), seen
    # the node controller marks the pods within its 5 s monitor period of the node
    late = [(s, msg) for since, s, msg in seen if since is not None and since > 6]
    assert len(late) >= 5 and all(s == AppState.UNKNOWN for s, _ in late), seen
    assert all("node torchx-dev-node not ready" in msg for _, msg in late), seen
    assert wait_ended(runner, handle, timeout=120) == AppState.SUCCEEDED
