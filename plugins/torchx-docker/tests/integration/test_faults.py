"""Faults: an engine that is absent at submit (or at all) or stops during a run, one that
restarts under `log -t`, a container removed by hand, and what the engine here refuses
(GPUs, privileged): one clear line each, an outage never reported as a failed app, a
followed log that rides out a restart with every line once, nothing left behind."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import docker.errors
import pytest
from dockercmd import busybox

from torchx.schedulers.testing.cli import TorchxCli

LABEL = "torchx.pytorch.org/app-id"
#: `torchx`'s exit status for a backend error (torchx.cli.errors.EXIT_APP_FAILED; not
#: imported: torchx-cli is not a dependency of this package), not 4: "state unknown"
EXIT_APP_FAILED = 1


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
    # dockerd removed its socket as it stopped, and this new process never saw it: no
    # engine, said at once, with the hint that a restarting dockerd has no socket for a
    # moment (a follower that had reached it rides that out: the log test below)
    assert "no Docker engine answers at" in proc.stderr, proc.stderr
    assert "restarting" in proc.stderr and "Traceback" not in proc.stderr
    assert took < 30, took
    if _dockerd_pid_or_none() in (None, pid):  # nobody brought the engine back meanwhile
        assert proc.returncode == EXIT_APP_FAILED, (proc.stdout, proc.stderr)
        assert took < 5, took  # not retried
        assert "RUNNING" not in proc.stdout and "SUCCEEDED" not in proc.stdout


def _state() -> Path:
    return Path(os.environ.get("TORCHX_DEV_DOCKER_DIR", "/var/tmp/torchx-dev-docker"))


def _until(what: str, check: Any, seconds: float = 60) -> None:
    """Polls ``check()`` until it is true, failing after ``seconds`` with ``what``."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            if check():
                return
        except Exception:
            pass  # the engine not answering yet
        assert time.monotonic() < deadline, f"gave up waiting: {what}"
        time.sleep(0.1)


@pytest.fixture
def live_restore(api: Any) -> Any:
    """dev/docker's dockerd with live-restore for the test (its containers run on while the
    engine restarts, their output kept), as a production engine restarted under a job is;
    the configuration dev/docker wrote is put back (reloaded, or `up` if the engine is down)."""
    config = _state() / "etc" / "daemon.json"
    written = config.read_text()
    config.write_text('{"live-restore": true}\n')
    os.kill(_dockerd_pid(), signal.SIGHUP)  # live-restore is reloaded without a restart
    _until("live-restore on", lambda: api.info()["LiveRestoreEnabled"] is True)
    try:
        yield
    finally:
        pid = _dockerd_pid_or_none()
        if pid is None:
            config.write_text(written)
            script = Path(os.environ["TORCHX_REPO_ROOT"]) / "dev" / "docker"
            subprocess.run([str(script), "up"], check=True, stdout=subprocess.DEVNULL, timeout=300)
        else:  # a reload leaves a setting the file no longer names as it was: say it
            config.write_text('{"live-restore": false}\n')
            os.kill(pid, signal.SIGHUP)
            _until("live-restore off", lambda: api.info()["LiveRestoreEnabled"] is False)
            config.write_text(written)  # what the engine runs with again, as dev/docker wrote it
        assert api.info()["LiveRestoreEnabled"] is False


def _restart_dockerd(api: Any) -> None:
    """Stops dockerd (SIGTERM: it removes its socket) and starts it again as dev/docker does."""
    pid = _dockerd_pid()
    os.kill(pid, signal.SIGTERM)
    _until("dockerd stopped", lambda: not Path(f"/proc/{pid}").exists())
    args = (_state() / "etc" / "dockerd.args").read_text().split("\n")
    with (_state() / "log" / "dockerd.log").open("a") as log:
        # setsid -f: started in a session of its own and not this process's child (a child
        # that exits stays in /proc as a zombie, and the next restart would wait for it)
        subprocess.run(
            ["setsid", "-f", "dockerd", *filter(None, args)],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            check=True,
            timeout=30,
        )
    _until("dockerd answering", lambda: _dockerd_pid_or_none() not in (None, pid) and api.ping())


def test_a_followed_log_rides_out_an_engine_restart_every_line_once(
    cli: TorchxCli, api: Any, live_restore: None
) -> None:
    """Issue 35: `torchx log -t` while dockerd restarts (its socket gone for a moment):
    a warning on stderr, then the log goes on where it was, every line exactly once,
    and the command ends with the app (exit 0)."""
    count = 100  # a numbered line every 0.2 s: 20 s
    script = f'i=1; while [ $i -le {count} ]; do echo "line $i"; i=$((i+1)); sleep 0.2; done'
    handle = cli.start("utils.sh", "--image", busybox(), "sh", "-c", script)
    follower = subprocess.Popen(
        [cli.command, "log", "-t", handle],
        cwd=cli.work,
        env=cli.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert follower.stdout is not None and follower.stderr is not None
        seen = []
        while not (seen and seen[-1].endswith(" line 10")):  # the follow is under way
            line = follower.stdout.readline()
            assert line, f"the log ended early: {seen}, {follower.stderr.read()}"
            seen.append(line.rstrip("\n"))
        _restart_dockerd(api)
        assert api.info()["LiveRestoreEnabled"] is True
        seen.append(follower.stdout.readline().rstrip("\n"))
        assert not seen[-1].endswith(f" line {count}"), seen  # the app ran on through the restart
        # read on through the same buffered pipe (communicate() reads the descriptor and
        # would skip lines already buffered with the last one read); a watchdog bounds it
        watchdog = threading.Timer(120, follower.kill)
        watchdog.start()
        out, err = follower.stdout.read(), follower.stderr.read()
        watchdog.cancel()
        follower.wait(timeout=10)
    finally:
        if follower.poll() is None:
            follower.kill()
            follower.wait()
    assert follower.returncode == 0, err
    assert "Traceback" not in err and "error" not in out, (out, err)
    assert "following it again once the engine answers" in err, err  # the warning
    printed = [line for line in [*seen, *out.splitlines()] if line.startswith("sh/0 line ")]
    numbers = [int(line.split()[-1]) for line in printed]
    app_id = handle.rsplit("/", 1)[1]
    engine = api.logs(f"{app_id}-sh-0", timestamps=True).decode()  # what the engine kept
    # none lost, none twice, in order
    assert numbers == list(range(1, count + 1)), (numbers, engine, err)
    assert "SUCCEEDED" in cli("status", handle).stdout


def test_run_wait_rides_out_an_engine_restart(cli: TorchxCli, api: Any, live_restore: None) -> None:
    """dockerd removes its socket while it restarts: `run --wait`, which reached the
    engine before, takes that for an outage (retried), never for "no engine"; it ends
    with the app."""
    waiting = subprocess.Popen(
        [cli.command, "run", "-s", "docker", "--wait", "utils.sh", "--image", busybox(),
         "sh", "-c", "sleep 8; echo done"],
        cwd=cli.work, env=cli.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert waiting.stdout is not None and waiting.stderr is not None
        handle = waiting.stdout.readline().strip()  # printed once submitted
        assert handle.startswith("docker://"), (handle, waiting.stderr.read())
        cli.started.append(handle)  # deleted at the end
        _restart_dockerd(api)
        app_id = handle.rsplit("/", 1)[1]
        assert api.inspect_container(f"{app_id}-sh-0")["State"]["Running"]  # still waiting
        watchdog = threading.Timer(120, waiting.kill)
        watchdog.start()
        out, err = waiting.stdout.read(), waiting.stderr.read()
        watchdog.cancel()
        waiting.wait(timeout=10)
    finally:
        if waiting.poll() is None:
            waiting.kill()
            waiting.wait()
    assert waiting.returncode == 0, (out, err)  # run --wait: 0 only for a SUCCEEDED app
    assert "no Docker engine answers" not in err and "Traceback" not in err, err
    assert cli.status(handle)["state"] == "SUCCEEDED"
