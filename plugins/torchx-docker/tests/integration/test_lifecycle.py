"""What an app's end does, through ``torchx`` on the real engine: a cancel is a cancel
whatever the replicas exit with; a replica that fails stops the others, and ``list``
and ``status`` agree; an ended app gives its network back (its logs and status stay)."""

from __future__ import annotations

import time
from typing import Any

from dockercmd import busybox

from torchx.schedulers.testing.cli import TorchxCli, app_id, replicas

LABEL = "torchx.pytorch.org/app-id"


def _states(cli: TorchxCli, handle: str) -> dict[str, str]:
    return {k: r["state"] for k, r in replicas(cli.status(handle)).items()}


def _listed(cli: TorchxCli, handle: str) -> str:
    for line in cli("list", "-s", "docker").stdout.splitlines():
        if line.startswith(handle + " "):
            return line.split()[1]
    raise AssertionError(f"{handle} not listed")


def test_replicas_that_exit_0_on_sigterm_are_cancelled(cli: TorchxCli) -> None:
    handle = cli.start(
        "utils.sh", "--image", busybox(), "--num_replicas", "2", "--memMB", "64",
        "sh", "-c", "trap 'exit 0' TERM; echo trapping; while :; do sleep 1 & wait $!; done",
    )  # fmt: skip
    for k in (0, 1):
        cli.wait_output(f"{handle}/sh/{k}", "trapping")
    assert cli("cancel", handle).stdout == f"cancelled {handle}\n"
    status = cli.wait_state(handle, {"SUCCEEDED", "FAILED", "CANCELLED"}, timeout=30)
    assert status["state"] == "CANCELLED", status
    assert _states(cli, handle) == {"sh/0": "CANCELLED", "sh/1": "CANCELLED"}
    assert [r["exit_code"] for r in replicas(status).values()] == [0, 0]
    assert _listed(cli, handle) == "CANCELLED"


def test_a_failed_replica_stops_the_others(cli: TorchxCli, api: Any) -> None:
    script = 'if [ "$0" = 1 ]; then sleep 1; exit 3; fi; echo up; sleep 600'
    handle = cli.start(
        "utils.sh", "--image", busybox(), "--num_replicas", "3", "--memMB", "64",
        "sh", "-c", script, "${replica_id}",
    )  # fmt: skip
    cli.wait_output(f"{handle}/sh/0", "up")
    # nobody followed it: the first look (status, here) sees sh/1 failed and stops the others
    started = time.monotonic()
    status = cli.wait_state(handle, {"FAILED"}, timeout=30)
    assert time.monotonic() - started < 15
    assert _states(cli, handle) == {"sh/0": "CANCELLED", "sh/1": "FAILED", "sh/2": "CANCELLED"}
    assert "its other replicas were stopped" in status["msg"], status
    running = api.containers(filters={"label": [f"{LABEL}={app_id(handle)}"]})
    assert running == [], [c["Names"] for c in running]
    assert _listed(cli, handle) == "FAILED"
    assert "nothing to cancel" in cli("cancel", handle).stdout


def test_run_wait_ends_when_a_replica_fails(cli: TorchxCli) -> None:
    script = 'if [ "$0" = 1 ]; then sleep 1; exit 3; fi; sleep 600'
    started = time.monotonic()
    proc = cli(
        "run", "-s", "docker", "--wait", "utils.sh", "--image", busybox(), "--num_replicas", "2",
        "--memMB", "64", "sh", "-c", script, "${replica_id}", rc=None, timeout=60,
    )  # fmt: skip
    handle = proc.stdout.splitlines()[0]
    cli.started.append(handle)
    assert proc.returncode == 1, proc.stderr  # the app failed
    assert time.monotonic() - started < 20
    assert _states(cli, handle) == {"sh/0": "CANCELLED", "sh/1": "FAILED"}
    assert _listed(cli, handle) == "FAILED"


def test_an_ended_app_gives_its_network_back(cli: TorchxCli, api: Any) -> None:
    handle, _ = cli.run(
        "--wait", "utils.sh", "--image", busybox(), "--num_replicas", "2", "--memMB", "64",
        "echo", "done",
    )  # fmt: skip
    cli.status(handle)
    nets = api.networks(filters={"label": [f"{LABEL}={app_id(handle)}"]})
    assert nets == [], [n["Name"] for n in nets]
    assert cli.status(handle)["state"] == "SUCCEEDED"  # the containers, status and logs stay
    assert cli("log", handle).stdout.count("done") == 2


def test_an_engine_out_of_addresses_gets_ended_apps_networks_back(cli: TorchxCli, api: Any) -> None:
    """Apps nobody looked at since they ended keep their networks; once the engine has no
    address left for a new one, a submit frees those and goes on."""
    made = []
    try:
        for i in range(300):  # the engine's pool (dev/docker: 128 networks of /24)
            try:
                net = api.create_network(
                    f"torchx-test-ended-{i}", driver="bridge", labels={LABEL: f"ended-app-{i}"}
                )
            except Exception as e:
                assert "address pool" in str(e) or "available" in str(e), e
                break
            made.append(net["Id"])
        else:
            raise AssertionError("the engine's address pool never ran out")
        _, proc = cli.run(
            "--wait", "--log", "utils.sh", "--image", busybox(), "--num_replicas", "2",
            "--memMB", "64", "echo", "fits",
        )  # fmt: skip
        assert proc.stdout.count("fits") == 2, proc.stdout
        left = api.networks(filters={"label": [LABEL]})
        assert not any(n["Name"].startswith("torchx-test-ended-") for n in left)
    finally:
        for net_id in made:
            try:
                api.remove_network(net_id)
            except Exception:
                pass
