"""Failures of the job directory the user must see: a full disk, a deleted directory.

A small tmpfs mounted as the job directory (``-cfg job_dir=``) is the full disk: the
replica's output fills it, and its exit code then cannot be written. Such a replica is
not SUCCEEDED, and status says why; the next job on that disk fails before it runs
anything, and ``log`` says its log files are missing rather than print nothing.

The dev cluster's slurmds run in a mount namespace of their own (``dev/slurm``), so the
tmpfs is mounted there, and the ``torchx`` commands of that test run there too (as a
login node sees the cluster's shared filesystem).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from slurmcmd import slurm

from torchx.schedulers.testing.cli import TORCHX, TorchxCli, replicas
from torchx.schedulers.testing.cli import app_id as job_id

FINAL = {"SUCCEEDED", "FAILED", "CANCELLED"}
# prints 20,001 lines (about 200 kB) and ignores write errors, as many programs do
CHATTY = "for i in $(seq 20001); do echo line $i; done 2>/dev/null; exit 0"


def _nodes_namespace() -> list[str]:
    """``nsenter`` into the mount namespace of the cluster's slurmds (node n1's)."""
    pidfile = Path(os.environ["TORCHX_DEV_SLURM_DIR"]) / "run" / "slurmd-n1.pid"
    return ["nsenter", "-t", pidfile.read_text().split()[0], "-m", "--"]


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 64 kB tmpfs where the nodes see it, unmounted (lazily) at the end."""
    d = tmp_path / "small"
    d.mkdir()
    ns = _nodes_namespace()
    subprocess.run([*ns, "mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(d)], check=True)
    try:
        yield d
    finally:
        subprocess.run([*ns, "umount", "-l", str(d)], check=False)


def _there(cli: TorchxCli, *args: str, rc: int) -> subprocess.CompletedProcess[str]:
    """``torchx ARGS`` in the nodes' mount namespace (where the small disk is)."""
    proc = subprocess.run(
        [*_nodes_namespace(), TORCHX, *args],
        cwd=cli.work,
        env=cli.env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert proc.returncode == rc, (args, proc.returncode, proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc


def _status(cli: TorchxCli, handle: str) -> dict[str, Any]:
    out = json.loads(_there(cli, "status", "--json", handle, rc=0).stdout)
    return dict(out["data"]["status"])


def test_a_full_disk_is_never_success_and_status_says_why(cli: TorchxCli, small_disk: Path) -> None:
    job_dir = f"job_dir={small_disk}"
    run = ["run", "-s", "slurm", "-cfg", job_dir, "--wait", "utils.sh", "sh", "-c"]
    proc = _there(cli, *run, CHATTY, rc=1)
    handle = proc.stdout.strip().splitlines()[-1]
    cli.started.append(handle)
    status = _status(cli, handle)
    assert status["state"] == "FAILED", status
    [rep] = replicas(status).values()
    assert rep["state"] == "FAILED" and rep["exit_code"] is None, status
    assert "no exit code recorded for sh/0" in status["msg"], status
    log = _there(cli, "log", handle, rc=0).stdout
    assert "line 1\n" in log and "line 20001" not in log  # cut short: the reason for all this

    # the next job on that disk: it fails before running anything, and says so
    proc = _there(cli, *run, "echo hello", rc=1)
    handle = proc.stdout.strip().splitlines()[-1]
    cli.started.append(handle)
    status = _status(cli, handle)
    assert status["state"] == "FAILED", status
    assert "no exit code recorded for sh/0" in status["msg"], status
    log = _there(cli, "log", handle, rc=1)
    said = log.stdout + log.stderr
    assert "no log of replica sh/0" in said and "missing" in said, said
    assert "hello" not in said


def test_log_of_a_job_whose_directory_was_deleted_says_what_slurm_said(
    cli: TorchxCli, tmp_path: Path
) -> None:
    """The job directory is removed while the job waits (held): its replica cannot start."""
    job_dir = tmp_path / "gone"
    handle = cli.start("-cfg", f"job_dir={job_dir},sbatch_args=--hold", "utils.sh", "echo", "hi")
    shutil.rmtree(job_dir)
    slurm("scontrol", "release", job_id(handle))
    status = cli.wait_state(handle, FINAL)
    assert status["state"] == "FAILED", status
    log = cli("log", handle, rc=1)
    said = log.stdout + log.stderr
    assert "no log of replica sh/0" in said and "missing" in said, said
