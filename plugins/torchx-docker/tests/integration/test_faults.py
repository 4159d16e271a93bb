"""Faults: an engine that is absent at submit or stops during a run, a container removed
by hand, and what the engine here refuses (GPUs, privileged): one clear line each, an
outage never reported as a failed app, nothing left behind."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import docker.errors
import pytest
from dockercmd import busybox

from torchx.cli.errors import EXIT_APP_FAILED
from torchx.schedulers.testing.cli import TorchxCli

LABEL = "torchx.pytorch.org/app-id"


def _sleeper(cli: TorchxCli, *cfg: str) -> str:
    return cli.start(
        *cfg, "utils.sh", "--image", busybox(), "--num_replicas", "2", "--memMB", "64", "sleep", "600",
    )  # fmt: skip


def test_no_engine_at_submit_is_one_line(cli: TorchxCli, tmp_path: Path) -> None:
    cli.env["DOCKER_HOST"] = f"unix://{tmp_path}/no-engine.sock"
    proc = cli("run", "-s", "docker", "utils.echo", "--image", busybox(), rc=1)
    [line] = proc.stderr.strip().splitlines()
    assert f"cannot reach the Docker engine at unix://{tmp_path}/no-engine.sock" in line


@pytest.mark.parametrize(
    "command", [("status", "docker://torchx/no-such-app-0"), ("list", "-s", "docker")]
)
def test_no_engine_at_all_is_one_line_at_once(cli: TorchxCli, command: tuple[str, ...]) -> None:
    """A socket that was never there is no engine, not an outage: one line, at once, no
    retries (they took 8 s and ended in "state unknown")."""
    address = "unix:///nonexistent/docker.sock"
    cli.env["DOCKER_HOST"] = address
    start = time.monotonic()
    proc = cli(*command, rc=EXIT_APP_FAILED)  # a backend error, not EXIT_UNKNOWN (outage)
    took = time.monotonic() - start
    [line] = proc.stderr.strip().splitlines()
    assert f"no Docker engine answers at {address}" in line, line
    assert "start dockerd" in line and "DOCKER_HOST" in line
    assert "Traceback" not in proc.stderr and "retrying" not in proc.stderr
    assert proc.stdout == ""
    assert took < 2, took


def test_a_missing_image_is_one_line_and_leaves_nothing(cli: TorchxCli, api: Any) -> None:
    proc = cli(
        "run", "-s", "docker", "utils.echo", "--image", "torchx-test/no-such-image:0",
        "--num_replicas", "2", rc=1,
    )  # fmt: skip
    [line] = proc.stderr.strip().splitlines()
    assert "image 'torchx-test/no-such-image:0' is not on the Docker engine" in line
    assert "pulling it failed" in line
    # engine_clean (conftest) checks that no container or network was left


def test_an_image_the_engine_lacks_is_pulled_from_its_registry(cli: TorchxCli, api: Any) -> None:
    registry = os.environ["TORCHX_DEV_DOCKER_REGISTRY"]
    repo = f"{registry}/torchx-test/pulled"
    api.tag(busybox(), repo, tag="1")
    try:
        for line in api.push(repo, tag="1", stream=True, decode=True):
            assert "error" not in line, line
        api.remove_image(f"{repo}:1")  # only the registry has it now
        _, proc = cli.run(
            "--wait", "--log", "utils.sh", "--image", f"{repo}:1", "--num_replicas", "2", "echo",
            "pulled",
        )  # fmt: skip
        assert proc.stdout.count("pulled") == 2, proc.stdout
        assert api.inspect_image(f"{repo}:1")["Id"] == api.inspect_image(busybox())["Id"]
    finally:
        cli.cleanup()  # before the image goes
        with contextlib.suppress(docker.errors.NotFound):
            api.remove_image(f"{repo}:1", force=True)


def test_gpus_without_a_driver_are_one_line(cli: TorchxCli) -> None:
    proc = cli("run", "-s", "docker", "utils.sh", "--image", busybox(), "--gpu", "1", "true", rc=1)
    [line] = proc.stderr.strip().splitlines()
    assert "asks for GPUs, but the Docker engine" in line and "has no GPU driver" in line


def test_privileged_refused_is_one_line(cli: TorchxCli, api: Any) -> None:
    info = api.info()
    proc = cli(
        "run", "-s", "docker", "-cfg", "privileged=True", "utils.sh", "--image", busybox(), "true",
        rc=None,
    )  # fmt: skip
    if proc.returncode == 0:  # an engine that allows it (not this machine's, see notes)
        assert info.get("SecurityOptions") is not None
        return
    [line] = proc.stderr.strip().splitlines()
    assert "refused a privileged container" in line


def test_a_container_removed_by_hand_fails_its_replica(cli: TorchxCli, api: Any) -> None:
    handle = _sleeper(cli, "-cfg", "stop_grace=1")
    app_id = handle.rsplit("/", 1)[1]
    api.remove_container(f"{app_id}-sh-1", force=True)
    proc = cli("status", handle)
    assert "FAILED" in proc.stdout
    assert "replica sh/1 is gone: its container was removed from the engine" in proc.stdout


def _dockerd_pid() -> int:
    state = os.environ.get("TORCHX_DEV_DOCKER_DIR", "/var/tmp/torchx-dev-docker")
    return int(Path(state, "run", "dockerd.pid").read_text().split()[0])


def _dockerd_pid_or_none() -> int | None:
    """The PID of a dockerd that runs now (another one than before if restarted), or None."""
    try:
        pid = _dockerd_pid()
    except (OSError, ValueError, IndexError):
        return None
    return pid if Path(f"/proc/{pid}").exists() else None


@pytest.fixture
def restore_engine() -> Any:
    yield
    script = Path(os.environ["TORCHX_REPO_ROOT"]) / "dev" / "docker"
    subprocess.run([str(script), "up"], check=True, stdout=subprocess.DEVNULL, timeout=300)


def test_the_engine_stopping_during_a_run_is_an_outage_not_a_failure(
    cli: TorchxCli, restore_engine: None
) -> None:
    handle = _sleeper(cli, "-cfg", "stop_grace=1")
    assert "RUNNING" in cli("status", handle).stdout
    pid = _dockerd_pid()
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + 60
    while Path(f"/proc/{pid}").exists():  # dockerd stops its containers, then exits
        assert time.monotonic() < deadline
        time.sleep(0.1)
    start = time.monotonic()
    proc = cli("status", handle, rc=None, timeout=60)
    took = time.monotonic() - start
    assert "FAILED" not in proc.stdout  # an outage is never a failed app
    assert "cannot reach the Docker engine" in proc.stderr, proc.stderr
    assert took < 30, took
    if _dockerd_pid_or_none() in (None, pid):  # nobody brought the engine back meanwhile
        assert proc.returncode != 0, proc.stdout
        assert "RUNNING" not in proc.stdout and "SUCCEEDED" not in proc.stdout
