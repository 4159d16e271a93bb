"""Replicas in containers: the role's image run with ``docker run`` on the LSF host.

Needs the Docker engine of ``dev/docker up`` (``nox -s integration_lsf`` starts it with
the small busybox image, holding the engine's machine lock): DOCKER_HOST and
TORCHX_DEV_DOCKER_BUSYBOX_IMAGE come from it, and the LSF jobs inherit them from the
submitting shell as LSF jobs do.
"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

from torchx.schedulers.testing.cli import TorchxCli, app_id, replicas

SECRET = "s3cret; $HOME 'q'"


@pytest.fixture
def image() -> str:
    name = os.environ.get("TORCHX_DEV_DOCKER_BUSYBOX_IMAGE")
    if not name or not os.environ.get("DOCKER_HOST"):
        pytest.fail('no Docker engine: run `eval "$(dev/docker up)"` first (nox does)')
    return name


def _cmdlines() -> str:
    found = []
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                found.append(Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" "))
            except OSError:
                pass
    return b"\n".join(found).decode(errors="replace")


def _containers(project: str) -> list[str]:
    out = subprocess.run(
        ["docker", "ps", "-a", "--filter", f"name={project}", "--format", "{{.Names}}"],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    return out.split()


def test_containers_meet_at_the_rank0_host_with_env_by_name(
    cli: TorchxCli, image: str, port: int
) -> None:
    program = (
        'echo "secret=$SECRET"; '
        'if [ "$TORCHX_REPLICA_ID" = 0 ]; then nc -l -p "$PORT"; else '
        # the message is in a file before nc starts: with a pipe, a listener whose stdin
        # is empty may close its side first and the sender then quits, 0, having sent nothing
        'echo "hello from 1" > hello; '
        'until nc "$TORCHX_RANK0_HOST" "$PORT" < hello; do sleep 0.2; done; '
        "sleep 2; exit 5; fi"
    )
    handle = cli.start(
        "-cfg", "host_network=True,shm_size=32m,container_workdir=/tmp",
        "utils.sh", "--num_replicas", "2", "-h", "cpu.small", "--image", image,
        "--env", f"SECRET={SECRET},PORT={port}",
        "sh", "-c", program,
    )  # fmt: skip
    cli.wait_output(handle, "hello from 1")
    # while the containers run, the secret is on no command line of this machine
    assert SECRET not in _cmdlines()
    status = cli.wait_state(handle, {"FAILED", "SUCCEEDED"}, timeout=60)
    reps = replicas(status)
    assert status["state"] == "FAILED"
    assert (reps["sh/0"]["exit_code"], reps["sh/1"]["exit_code"]) == (0, 5)
    out0 = cli("log", f"{handle}/sh/0").stdout
    assert f"secret={SECRET}" in out0 and "hello from 1" in out0
    assert _containers(app_id(handle)) == []  # --rm: each container went with its replica


def test_cancel_stops_the_containers(cli: TorchxCli, image: str) -> None:
    handle = cli.start(
        "utils.sh", "--num_replicas", "2", "-h", "cpu.small", "--image", image,
        "sh", "-c", 'echo started; exec sleep 300',
    )  # fmt: skip
    cli.wait_output(handle, "started")
    deadline = time.monotonic() + 30
    while len(_containers(app_id(handle))) < 2:
        assert time.monotonic() < deadline, "the containers did not start"
        time.sleep(0.2)
    cli("cancel", handle)
    status = cli.wait_state(handle, {"CANCELLED"}, timeout=30)
    assert {r["state"] for r in replicas(status).values()} == {"CANCELLED"}
    deadline = time.monotonic() + 30
    while _containers(app_id(handle)):
        assert time.monotonic() < deadline, _containers(app_id(handle))
        time.sleep(0.2)
