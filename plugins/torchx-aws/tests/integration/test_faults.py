"""Faults: an endpoint that is down, throttling answers, credentials AWS refuses.

Through the ``torchx`` command (one line, a non-zero exit, no traceback) and the
scheduler. Throttling and refused credentials are answered, as AWS documents them, by a
proxy in front of the emulator (``awsenv.FaultProxy``): the emulator itself never
throttles and accepts any credentials.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest
from awsenv import FaultProxy, busybox
from torchx_aws.batch.scheduler import create_scheduler

from torchx.specs import AppDef, AppState, Resource, Role

TORCHX = [sys.executable, "-m", "torchx.cli.main"]


def _app() -> AppDef:
    return AppDef(
        "f",
        [
            Role(
                "m",
                busybox(),
                entrypoint="echo",
                args=["ok"],
                resource=Resource(cpu=1, gpu=0, memMB=64),
            )
        ],
    )


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _torchx(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*TORCHX, *args], capture_output=True, text=True, timeout=120, env={**os.environ, **env}
    )


def test_an_endpoint_that_is_down_is_one_line_within_seconds(queue: str) -> None:
    down = f"http://127.0.0.1:{_closed_port()}"
    started = time.monotonic()
    proc = _torchx(
        "run",
        "-s",
        "aws_batch",
        "-cfg",
        f"queue={queue}",
        "utils.echo",
        "--image",
        busybox(),
        AWS_ENDPOINT_URL=down,
    )
    took = time.monotonic() - started
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    errors = [x for x in proc.stderr.splitlines() if "cannot reach the AWS endpoint" in x]
    assert errors and down in errors[-1], proc.stderr
    assert took < 30, took


def test_missing_region_and_credentials_are_one_line(queue: str) -> None:
    env = {
        "AWS_CONFIG_FILE": "/dev/null",
        "AWS_SHARED_CREDENTIALS_FILE": "/dev/null",
        "AWS_EC2_METADATA_DISABLED": "true",
    }
    proc = subprocess.run(
        [
            *TORCHX,
            "run",
            "-s",
            "aws_batch",
            "-cfg",
            f"queue={queue}",
            "utils.echo",
            "--image",
            busybox(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env={
            k: v
            for k, v in {**os.environ, **env}.items()
            if k not in ("AWS_DEFAULT_REGION", "AWS_REGION")
        },
    )
    assert (
        proc.returncode == 1 and "no AWS region" in proc.stderr and "Traceback" not in proc.stderr
    )
    keyless = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("AWS_ACCESS") and not k.startswith("AWS_SECRET")
    }
    proc = subprocess.run(
        [
            *TORCHX,
            "run",
            "-s",
            "aws_batch",
            "-cfg",
            f"queue={queue}",
            "utils.echo",
            "--image",
            busybox(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env={**keyless, **env},
    )
    assert proc.returncode == 1 and "no AWS credentials" in proc.stderr, proc.stderr


@pytest.fixture
def proxy(endpoint: str) -> Iterator[FaultProxy]:
    p = FaultProxy(endpoint)
    yield p
    p.close()


def test_throttling_is_retried_and_the_app_runs(
    proxy: FaultProxy, queue: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWS_ENDPOINT_URL", proxy.url)
    sched = create_scheduler("faults")
    proxy.throttle = 2  # the registration is throttled twice
    app_id = sched.submit(_app(), {"queue": queue})
    assert proxy.throttle == 0
    proxy.throttle = 3  # and the status polls three times
    deadline = time.monotonic() + 120
    while True:
        desc = sched.describe(app_id)
        assert desc is not None
        if desc.state.is_terminal() or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert desc.state == AppState.SUCCEEDED, desc
    assert proxy.throttle == 0


def test_bad_credentials_are_one_line(proxy: FaultProxy, queue: str) -> None:
    proc = _torchx(
        "run",
        "-s",
        "aws_batch",
        "-cfg",
        f"queue={queue}",
        "utils.echo",
        "--image",
        busybox(),
        AWS_ENDPOINT_URL=proxy.url,
        AWS_ACCESS_KEY_ID="AKIDBADBADBAD",
    )
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    [line] = [x for x in proc.stderr.splitlines() if "did not accept the credentials" in x]
    assert "UnrecognizedClientException" in line


def test_credentials_that_expire_during_run_wait_leave_the_state_unknown(
    proxy: FaultProxy, queue: str
) -> None:
    """Exit 4 (state unknown) in one line, never 1 (the app failed): the app runs on."""
    cmd = ["run", "--wait", "-s", "aws_batch", "-cfg", f"queue={queue}", "utils.sh"]
    run = subprocess.Popen(
        [*TORCHX, *cmd, "--image", busybox(), "sleep", "5"],  # utils.sh: a command, word by word
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "AWS_ENDPOINT_URL": proxy.url},
    )
    try:
        assert run.stdout is not None
        handle = run.stdout.readline().strip()  # printed once submitted
        proxy.expired = True
        _, err = run.communicate(timeout=60)
    finally:
        proxy.expired = False
        if run.poll() is None:
            run.kill()
    assert run.returncode == 4, err
    assert "Traceback" not in err
    [line] = [x for x in err.splitlines() if "did not accept the credentials" in x]
    assert "ExpiredTokenException" in line and f"the state of {handle} is unknown" in line
    # the job was not touched: it runs to its end
    sched = create_scheduler("faults")
    app_id = handle.rsplit("/", 1)[1]
    deadline = time.monotonic() + 120
    while not (desc := sched.describe(app_id)) or not desc.state.is_terminal():
        assert time.monotonic() < deadline, desc
        time.sleep(0.5)  # a poll interval: Batch has no event to wait on
    assert desc.state == AppState.SUCCEEDED, desc


def test_a_job_aws_lists_late_is_submitted_then_followed(
    proxy: FaultProxy, queue: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # AWS's reads are eventually consistent: the proxy hides each new job for 8 s
    proxy.hide_new = 8.0
    monkeypatch.setenv("AWS_ENDPOINT_URL", proxy.url)
    cmd = ["-s", "aws_batch", "-cfg", f"queue={queue}", "utils.echo", "--image", busybox()]
    run = _torchx("run", *cmd)
    assert run.returncode == 0, run.stderr
    handle = run.stdout.strip().splitlines()[-1]
    app_id = handle.rsplit("/", 1)[1]
    sched = create_scheduler("faults")
    assert app_id not in {a.app_id for a in sched.list({"queue": queue})}  # hidden indeed
    # `torchx status` from another process: SUBMITTED, not "no such app"
    status = _torchx("status", handle)
    assert status.returncode == 0 and "SUBMITTED" in status.stdout, status.stdout + status.stderr
    # followed to its end; then list shows it, as AWS does once the job is visible
    deadline = time.monotonic() + 120
    while not (desc := sched.describe(app_id)) or not desc.state.is_terminal():
        assert time.monotonic() < deadline, desc
        time.sleep(0.5)  # a poll interval: Batch has no event to wait on
    assert desc.state == AppState.SUCCEEDED, desc
    assert app_id in {a.app_id for a in sched.list({"queue": queue})}
    # `torchx run --wait` does not give up on a job AWS does not list yet
    waited = _torchx("run", "--wait", *cmd)
    assert waited.returncode == 0 and "SUCCEEDED" in waited.stdout + waited.stderr, (
        waited.stdout + waited.stderr
    )
