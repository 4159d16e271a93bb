"""A cluster without accounting (no slurmdbd): a finished job's state comes from the
job-completion file once it has left squeue.

The test restarts the cluster without slurmdbd (``TORCHX_DEV_SLURM_ACCOUNTING=none
dev/slurm up``, a configuration change: a full restart of a few seconds) and restores the
default cluster afterwards, whatever happened.
"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

from slurmcmd import slurm

from torchx.schedulers.testing.cli import TorchxCli, replicas
from torchx.schedulers.testing.cli import app_id as job_id

REPO = Path(os.environ.get("TORCHX_REPO_ROOT") or Path(__file__).resolve().parents[4])


def _up(accounting: str) -> None:
    env = {**os.environ, "TORCHX_DEV_SLURM_ACCOUNTING": accounting}
    subprocess.run(
        [str(REPO / "dev" / "slurm"), "up"],
        env=env,
        check=True,
        timeout=180,
        stdout=subprocess.DEVNULL,
    )


def test_finished_job_status_without_accounting(cli: TorchxCli) -> None:
    _up("none")
    try:
        # sacct of the database is gone: this is the case the completion file covers
        plain = subprocess.run(["sacct", "-X", "-n"], capture_output=True, text=True, timeout=30)
        assert plain.returncode != 0 and "accounting storage is disabled" in plain.stderr.lower()
        handle = cli.start("utils.sh", "sh", "-c", "echo partial; exit 4")
        assert cli.wait_state(handle, {"SUCCEEDED", "FAILED", "CANCELLED"})["state"] == "FAILED"
        jid = job_id(handle)
        deadline = time.monotonic() + 150
        while slurm("squeue", "-h", "-t", "all", "-o", "%A").split().count(jid):
            assert time.monotonic() < deadline, f"job {jid} still in squeue"
            time.sleep(1)
        status = cli.status(handle)
        assert status["state"] == "FAILED", status
        assert [r["exit_code"] for r in replicas(status).values()] == [4], status
        assert "partial" in cli("log", handle).stdout
    finally:
        _up("slurmdbd")
    # the default cluster is back, with its accounting
    again = subprocess.run(["sacct", "-X", "-n"], capture_output=True, text=True, timeout=30)
    assert again.returncode == 0, again.stderr
