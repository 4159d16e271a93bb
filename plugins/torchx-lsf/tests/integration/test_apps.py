"""Apps through the ``torchx`` command (and the Runner), each step from a new process.

Replicas meet over TCP through the rank-0 host the scripts find with ``bjobs`` (the
stand-in's two hosts take them seconds apart); a failing replica fails the app with its
exit code and ends the others, on either host; cancel reaches CANCELLED
and stops the replicas; logs, status and list answer from later processes; delete removes
the app and its directory (LSF still shows the jobs).
"""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

from torchx.schedulers.testing import rendezvous
from torchx.schedulers.testing.cli import TorchxCli, app_id, replicas


def _bjobs(project: str) -> list[list[str]]:
    out = subprocess.run(
        ["bjobs", "-noheader", "-a", "-P", project, "-o", "jobid stat exit_code job_name delimiter='|'"],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    return [line.split("|") for line in out.splitlines()]


def test_three_replicas_meet_over_tcp_at_the_rank0_host(cli: TorchxCli, port: int) -> None:
    handle = cli.start(
        "-cfg", f"jobdir={cli.work}",
        "utils.sh", "--num_replicas", "3", "-h", "cpu.small", "--image", str(cli.work),
        "sh", "-c",
        f'RANK=$TORCHX_REPLICA_ID WORLD=3 RANK0_HOST=${{TORCHX_RANK0_HOST}} RDZV_PORT={port} '
        f"exec python3 {rendezvous.__file__} --node-var LSB_HOSTS",
    )  # fmt: skip
    status = cli.wait_state(handle, {"SUCCEEDED", "FAILED"})
    assert status["state"] == "SUCCEEDED", status
    for k in range(3):
        out = cli("log", f"{handle}/sh/{k}").stdout
        assert f"rank {k}/3 met [0, 1, 2]" in out, out
    # every replica is an LSF job of the app's project, named after its replica
    jobs = _bjobs(app_id(handle))
    assert sorted(j[3] for j in jobs) == [f"{app_id(handle)}-sh-{k}" for k in range(3)]
    assert {j[1] for j in jobs} == {"DONE"}
    # the stand-in's two hosts take a job a second each: the replicas ran on both, rank 0's
    # host found through bjobs by the others
    hosts = {r["hostname"] for r in replicas(status).values()}
    assert len(hosts) == 2, status


def test_a_failing_replica_fails_the_app_and_ends_the_others(cli: TorchxCli) -> None:
    handle = cli.start(
        "utils.sh", "--num_replicas", "3", "-h", "cpu.small", "--image", str(cli.work),
        "sh", "-c", 'if [ "$TORCHX_REPLICA_ID" = 1 ]; then echo boom >&2; exit 7; fi; sleep 120',
    )  # fmt: skip
    status = cli.wait_state(handle, {"FAILED"}, timeout=60)
    reps = replicas(status)
    assert reps["sh/1"]["exit_code"] == 7 and reps["sh/1"]["state"] == "FAILED"
    # some replica ran on the other host than the failed one's (which replicas: the order
    # the stand-in's two hosts took them in), and it is ended too
    assert {r["hostname"] for r in reps.values()} - {reps["sh/1"]["hostname"]}, reps
    # the others are ended, not left sleeping
    deadline = time.monotonic() + 30
    while {j[1] for j in _bjobs(app_id(handle))} - {"EXIT", "DONE"}:
        assert time.monotonic() < deadline, _bjobs(app_id(handle))
        time.sleep(0.3)
    assert "boom" in cli("log", f"{handle}/sh/1", "--streams", "stderr").stdout
    described = json.loads(cli("status", "--json", handle).stdout)
    assert "exit code 7" in described["data"]["status"]["msg"]


def test_cancel_stops_the_replicas_and_list_shows_it(cli: TorchxCli) -> None:
    handle = cli.start(
        "utils.sh", "--num_replicas", "2", "-h", "cpu.small", "--image", str(cli.work),
        "sh", "-c", 'i=0; while :; do echo "tick $i"; i=$((i+1)); sleep 0.2; done',
    )  # fmt: skip
    cli.wait_output(handle, "tick 3")
    cli("cancel", handle)
    status = cli.wait_state(handle, {"CANCELLED"}, timeout=30)
    assert {r["state"] for r in replicas(status).values()} == {"CANCELLED"}
    log = Path(cli.work, ".torchx-lsf", app_id(handle), "sh-0.out")
    size = log.stat().st_size
    time.sleep(1)
    assert log.stat().st_size == size  # the replica no longer writes
    listed = cli("list", "-s", "lsf").stdout
    line = next(x for x in listed.splitlines() if app_id(handle) in x)
    assert "CANCELLED" in line


def test_logs_and_status_from_another_directory(cli: TorchxCli, tmp_path: Path) -> None:
    handle = cli.start(
        "utils.echo", "--msg", "hello; rm -rf ~ $HOME", "--image", str(cli.work),
    )  # fmt: skip
    cli.wait_state(handle, {"SUCCEEDED"}, timeout=60)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    assert cli("log", handle, cwd=elsewhere).stdout.endswith("hello; rm -rf ~ $HOME\n")
    status = cli.status(handle, cwd=elsewhere)
    assert status["state"] == "SUCCEEDED"
    # LSF's times are to the minute: the app started and ended within this test
    assert status["start_time"] is not None and status["end_time"] is not None
    assert abs(time.time() - status["end_time"]) < 180
    described = json.loads(cli("describe", "--json", handle, cwd=elsewhere).stdout)
    assert described["kind"] == "AppDef" and described["spec"]["roles"][0]["args"] == [
        "hello; rm -rf ~ $HOME"
    ]


def _listed(cli: TorchxCli) -> dict[str, dict[str, object]]:
    """``torchx list -s lsf --json``: each app by its app id."""
    out = json.loads(cli("list", "-s", "lsf", "--json").stdout)
    return {app_id(str(row["handle"])): row for row in out["data"]}


def test_list_shows_the_app_name(cli: TorchxCli) -> None:
    handle = cli.start("utils.echo", "--msg", "hi", "--image", str(cli.work))
    cli.wait_state(handle, {"SUCCEEDED"}, timeout=60)
    row = _listed(cli)[app_id(handle)]
    assert (row["name"], row["state"]) == ("echo", "SUCCEEDED")
    line = next(x for x in cli("list", "-s", "lsf").stdout.splitlines() if app_id(handle) in x)
    assert " echo " in f" {line} "


def test_delete_of_a_failed_app_removes_it_and_its_directory(cli: TorchxCli) -> None:
    handle = cli.start(
        "utils.sh", "--num_replicas", "2", "--image", str(cli.work),
        "sh", "-c", 'if [ "$TORCHX_REPLICA_ID" = 1 ]; then exit 3; fi; echo ok',
    )  # fmt: skip
    cli.wait_state(handle, {"FAILED"}, timeout=60)
    app_dir = Path(cli.work, ".torchx-lsf", app_id(handle))
    assert sorted(p.name for p in app_dir.glob("*.env")) == ["sh-0.env", "sh-1.env"]
    assert cli("delete", handle).stdout.strip() == f"deleted {handle}"
    assert not app_dir.exists()  # its private env files with it
    gone = cli("status", handle, rc=None)
    assert gone.returncode != 0 and "does not exist (or was deleted)" in gone.stderr, gone
    assert app_id(handle) not in _listed(cli)
    assert {j[1] for j in _bjobs(app_id(handle))} == {"DONE", "EXIT"}  # LSF keeps its jobs


def test_delete_of_a_running_app_stops_it_then_removes_its_directory(cli: TorchxCli) -> None:
    handle = cli.start("utils.sh", "--image", str(cli.work), "sh", "-c", "echo up; sleep 120")
    cli.wait_output(handle, "up")
    assert cli("delete", "--force", handle).stdout.strip() == f"deleted {handle}"
    assert {j[1] for j in _bjobs(app_id(handle))} == {"EXIT"}  # ended before the removal
    assert not Path(cli.work, ".torchx-lsf", app_id(handle)).exists()
    assert cli("status", handle, rc=None).returncode != 0
