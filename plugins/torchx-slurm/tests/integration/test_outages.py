"""Outages of what Slurm's commands need on the submit host never read as "no such app".

munged stopped, slurmdbd restarting, a ``SLURM_CONF`` that does not parse: each makes
squeue or sacct fail. Only Slurm's "Invalid job id" may mean the app does not exist;
anything else is an error with Slurm's message (transient where it passes, so the CLI
retries it and, if it lasts, exits 4: the state is unknown, not failed).

Each test that stops a daemon starts it again in a ``finally`` (``dev/slurm up`` starts
only what is not running), whatever happened.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from pathlib import Path

from slurmcmd import slurm

from torchx.schedulers.testing.cli import TorchxCli
from torchx.schedulers.testing.cli import app_id as job_id

REPO = Path(os.environ.get("TORCHX_REPO_ROOT") or Path(__file__).resolve().parents[4])
GONE = "does not exist"
FINAL = {"SUCCEEDED", "FAILED", "CANCELLED"}


def _up() -> None:
    subprocess.run(
        [str(REPO / "dev" / "slurm"), "up"], check=True, timeout=180, stdout=subprocess.DEVNULL
    )


def _stop(pidfile: Path) -> None:
    """SIGTERM the daemon of ``pidfile`` and wait until it is gone (or a zombie)."""
    pid = int(pidfile.read_text().split()[0])
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + 30
    while Path(f"/proc/{pid}").exists():
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            break
        if state in ("Z", "X"):
            break
        assert time.monotonic() < deadline, f"{pidfile.name}: pid {pid} did not stop"
        time.sleep(0.05)


def _munged_pidfile() -> Path:
    return Path("/run/munge/munged.pid")


def _dbd_pidfile() -> Path:
    return Path(os.environ["TORCHX_DEV_SLURM_DIR"]) / "run" / "slurmdbd.pid"


def test_status_with_munged_stopped_is_munges_error_not_no_such_app(cli: TorchxCli) -> None:
    handle = cli.start("utils.sh", "sh", "-c", "echo started; sleep 600")
    cli.wait_state(handle, {"RUNNING"})
    cli.wait_output(handle, "started")  # srun needs munge to start the step
    _stop(_munged_pidfile())
    try:
        proc = cli("status", handle, rc=4, timeout=120)
    finally:
        _up()
    assert GONE not in proc.stderr, proc.stderr
    last = proc.stderr.strip().splitlines()[-1]
    assert "Munge encode failed" in last and "state is unknown, not failed" in last, last
    assert cli.status(handle)["state"] == "RUNNING"


def test_wait_rides_out_munged_stopped_for_a_few_seconds(cli: TorchxCli) -> None:
    """munged stops for 5 s while ``run --wait`` follows a running job: its status polls
    fail meanwhile (transient: retried), and it reports the job's SUCCEEDED. (The job
    ends after munged is back: on this one-machine cluster the nodes need it too.)"""
    result: dict[str, subprocess.CompletedProcess[str]] = {}
    marker = cli.work / "started"

    def wait() -> None:
        result["proc"] = cli(
            "run",
            "-s",
            "slurm",
            "--wait",
            "utils.sh",
            "sh",
            "-c",
            f"touch {marker}; sleep 12; echo done",
            rc=None,
            timeout=300,
        )

    waiter = threading.Thread(target=wait)
    waiter.start()
    deadline = time.monotonic() + 120
    while not marker.exists():
        assert time.monotonic() < deadline and waiter.is_alive(), result
        time.sleep(0.1)
    _stop(_munged_pidfile())
    try:
        time.sleep(5)  # the outage itself, while the job runs
    finally:
        _up()
    waiter.join(timeout=300)
    proc = result["proc"]
    assert proc.returncode == 0, proc.stderr
    assert "deleted" not in proc.stderr and GONE not in proc.stderr, proc.stderr
    assert "SUCCEEDED" in proc.stderr, proc.stderr


def test_a_job_that_ends_while_slurmdbd_is_down_never_reads_as_gone(cli: TorchxCli) -> None:
    """The job runs and ends while slurmdbd is down; slurmdbd comes back; the job then
    leaves the queue (MinJobAge) around when accounting receives it. No status call in
    all that time may say it does not exist."""
    _stop(_dbd_pidfile())
    try:
        handle = cli.start("utils.sh", "sh", "-c", "echo quick")
        assert cli.wait_state(handle, FINAL)["state"] == "SUCCEEDED"
    finally:
        _up()
    jid = job_id(handle)
    answers: list[tuple[int, str]] = []
    left = None
    deadline = time.monotonic() + 150
    while left is None or time.monotonic() < left + 15:
        proc = cli("status", "--json", handle, rc=None, timeout=120)
        answers.append((proc.returncode, proc.stderr))
        assert GONE not in proc.stderr and proc.returncode in (0, 4), answers[-1]
        if left is None and jid not in slurm("squeue", "-h", "-t", "all", "-o", "%A").split():
            left = time.monotonic()
        assert time.monotonic() < deadline, f"job {jid} still in squeue: {answers[-3:]}"
        time.sleep(0.3)
    assert cli.status(handle)["state"] == "SUCCEEDED"


def test_a_slurm_conf_that_does_not_parse_is_its_parse_error(
    cli: TorchxCli, tmp_path: Path
) -> None:
    bad = tmp_path / "slurm.conf"
    bad.write_text("this is not\n=== a slurm.conf\n")
    env = {"SLURM_CONF": str(bad)}
    for args in (["status", "slurm://torchx/1"], ["list", "-s", "slurm"]):
        proc = cli(*args, rc=1, env=env)
        assert GONE not in proc.stderr, proc.stderr
        assert f"Parse error in file {bad} line 1" in proc.stderr, proc.stderr
