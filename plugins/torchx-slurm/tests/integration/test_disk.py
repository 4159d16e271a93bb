"""Failures of the job directory the user must see: a full disk, a deleted directory.

A small tmpfs mounted as the job directory (``-cfg job_dir=``) is the full disk: the
replica's output fills it, and its exit code then cannot be written. Such a replica is
not SUCCEEDED, and status says why; the next job on that disk fails before it runs
anything, and ``log`` says its log files are missing rather than print nothing.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from slurmcmd import slurm
from torchxcmd import Cli, job_id, replicas

FINAL = {"SUCCEEDED", "FAILED", "CANCELLED"}
# prints 20,001 lines (about 200 kB) and ignores write errors, as many programs do
CHATTY = "for i in $(seq 20001); do echo line $i; done 2>/dev/null; exit 0"


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 64 kB tmpfs, unmounted (lazily: a node may still hold a file) at the end."""
    d = tmp_path / "small"
    d.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(d)], check=True)
    try:
        yield d
    finally:
        subprocess.run(["umount", "-l", str(d)], check=False)


def test_a_full_disk_is_never_success_and_status_says_why(cli: Cli, small_disk: Path) -> None:
    job_dir = f"job_dir={small_disk}"
    proc = cli(
        "run",
        "-s",
        "slurm",
        "-cfg",
        job_dir,
        "--wait",
        "utils.sh",
        "sh",
        "-c",
        CHATTY,
        rc=1,
        timeout=180,
    )
    handle = proc.stdout.strip().splitlines()[-1]
    status = cli.status(handle)
    assert status["state"] == "FAILED", status
    [rep] = replicas(status).values()
    assert rep["state"] == "FAILED" and rep["exit_code"] is None, status
    assert "no exit code recorded for sh/0" in status["msg"], status
    out = (small_disk / f"slurm-{job_id(handle)}-sh-0.out").read_text()
    assert "line 20001" not in out  # the log was cut short: the reason for all this

    # the next job on that disk: it fails before running anything, and says so
    handle = cli.start("-cfg", job_dir, "utils.sh", "sh", "-c", "echo hello")
    status = cli.wait_state(handle, FINAL)
    assert status["state"] == "FAILED", status
    assert "no exit code recorded for sh/0" in status["msg"], status
    log = cli("log", handle, rc=1)
    assert "no log of replica sh/0" in log.stderr and "missing" in log.stderr, log.stderr
    assert log.stdout == ""


def test_log_of_a_job_whose_directory_was_deleted_says_what_slurm_said(
    cli: Cli, tmp_path: Path
) -> None:
    """The job directory is removed while the job waits (held): its replica cannot start."""
    job_dir = tmp_path / "gone"
    handle = cli.start("-cfg", f"job_dir={job_dir},sbatch_args=--hold", "utils.sh", "echo", "hi")
    job_dir.rmdir()
    slurm("scontrol", "release", job_id(handle))
    status = cli.wait_state(handle, FINAL)
    assert status["state"] == "FAILED", status
    log = cli("log", handle, rc=1)
    assert "no log of replica echo/0" in log.stderr and "missing" in log.stderr, log.stderr
