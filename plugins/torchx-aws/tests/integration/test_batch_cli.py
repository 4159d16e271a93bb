"""aws_batch through the ``torchx`` command: what a cancelled job's replicas say, a
handle that does not match its job (another queue, another node count) refused, an
ended job's definition deregistered, and long lines read back as CloudWatch keeps them."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from awsenv import busybox
from torchx_aws.batch.request import parse_app_id

from torchx.schedulers.testing.cli import TorchxCli, replicas


@pytest.fixture
def cli(tmp_path: Path) -> Iterator[TorchxCli]:
    c = TorchxCli(tmp_path, scheduler="aws_batch", timeout=120)
    yield c
    c.cleanup()


def _sleeper(cli: TorchxCli, queue: str, n: int = 2) -> str:
    return cli.start(
        "-cfg", f"queue={queue}", "utils.sh", "--image", busybox(), "--num_replicas", str(n),
        "--memMB", "64", "sh", "-c", "echo up; sleep 300",
    )  # fmt: skip


@pytest.mark.parametrize("n", [1, 2])
def test_a_cancelled_jobs_replicas_are_cancelled(cli: TorchxCli, queue: str, n: int) -> None:
    handle = _sleeper(cli, queue, n)
    cli.wait_output(f"{handle}/sh/{n - 1}", "up")
    assert cli("cancel", handle).stdout == f"cancelled {handle}\n"
    seen = []
    while not seen or seen[-1]["state"] not in ("SUCCEEDED", "FAILED", "CANCELLED"):
        seen.append(cli.status(handle))  # every answer on the way, none FAILED
    assert [s["state"] for s in seen if s["state"] != "RUNNING"] == ["CANCELLED"], seen
    status = seen[-1]
    assert {k: r["state"] for k, r in replicas(status).items()} == {
        f"sh/{k}": "CANCELLED" for k in range(n)
    }, status
    assert "FAILED" not in cli("status", handle).stdout


def test_a_handle_that_does_not_match_its_job_is_refused(
    cli: TorchxCli, queue: str, starved_queue: str, batch: Any
) -> None:
    handle = _sleeper(cli, queue)
    cli.wait_output(f"{handle}/sh/0", "up")
    q, job_id, region, nodes = parse_app_id(handle.rsplit("/", 1)[1])
    session = handle.split("://", 1)[1].split("/", 1)[0]
    other_queue = f"aws_batch://{session}/{starved_queue}:{job_id}:{region}:{nodes}"
    other_nodes = f"aws_batch://{session}/{q}:{job_id}:{region}:{nodes + 1}"
    for wrong, what in ((other_queue, f"queue {queue}"), (other_nodes, f"{nodes} nodes")):
        for command in ("status", "cancel", "log"):
            proc = cli(command, wrong, rc=None)
            assert proc.returncode != 0, (command, proc.stdout)
            [line] = proc.stderr.strip().splitlines()
            assert f"job {job_id}" in line and what in line, line
    # nothing was cancelled through the wrong handles
    assert cli.status(handle)["state"] == "RUNNING"


def test_an_ended_jobs_definition_is_deregistered(cli: TorchxCli, queue: str, batch: Any) -> None:
    """One job definition is registered per run: once its job has ended it is
    deregistered (10 runs left 10 ACTIVE definitions until ``delete``)."""
    handles = [
        cli.run(
            "-cfg", f"queue={queue}", "--wait", "utils.sh", "--image", busybox(),
            "--memMB", "64", "echo", "hi",
        )[0]
        for _ in range(3)
    ]  # fmt: skip
    for handle in handles:
        assert cli.status(handle)["state"] == "SUCCEEDED"  # its record stays readable
        job_id = parse_app_id(handle.rsplit("/", 1)[1])[1]
        [job] = batch.describe_jobs(jobs=[job_id])["jobs"]
        found = batch.describe_job_definitions(jobDefinitions=[job["jobDefinition"]])
        assert [d["status"] for d in found["jobDefinitions"]] == ["INACTIVE"], found
        assert "hi" in cli("log", handle).stdout


def test_long_lines_come_back_as_cloudwatch_keeps_them(cli: TorchxCli, queue: str) -> None:
    """A line over the engine's 16 KiB pieces comes back whole (no timestamps inside); one
    over CloudWatch's event size (256 KiB less its 26 bytes per event: 262,118 bytes) is
    the events the awslogs driver splits it into, each read back as a line."""
    script = (
        "head -c 20000 /dev/zero | tr '\\0' x; echo; "
        "head -c 262145 /dev/zero | tr '\\0' y; echo; echo done"
    )
    handle, _ = cli.run(
        "--wait", "-cfg", f"queue={queue}", "utils.sh", "--image", busybox(), "--memMB", "64",
        "sh", "-c", script,
    )  # fmt: skip
    out = cli("log", f"{handle}/sh/0").stdout
    assert [len(run) for run in re.findall("x+", out)] == [20000]
    assert [len(run) for run in re.findall("y+", out)] == [262118, 27]
    assert re.search(r"\d{4}-\d\d-\d\dT\d\d:\d\d", out) is None, "a timestamp inside a line"
    lines = out.splitlines()
    assert len(lines) == 4 and lines[-1].endswith("done"), [x[:40] for x in lines]
