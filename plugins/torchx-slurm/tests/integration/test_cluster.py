"""The cluster itself, through Slurm's own commands: what every other test relies on."""

from __future__ import annotations

import re
import sys
from pathlib import Path

from slurmcmd import sacct_state, slurm

from torchx.schedulers.testing import rendezvous

MET = re.compile(r"rank (\d)/2 met \[0, 1\] on (n\d) via (n\d)")


def test_four_idle_nodes() -> None:
    nodes = dict(line.split() for line in slurm("sinfo", "-h", "-N", "-o", "%N %t").splitlines())
    assert nodes == {"n1": "idle", "n2": "idle", "n3": "idle", "n4": "idle"}


def test_two_node_batch_job_rendezvous_by_node_name(tmp_path: Path) -> None:
    """sbatch across 2 nodes; the replicas meet over TCP by node name, accounting records it."""
    script = tmp_path / "job.sh"
    script.write_text(
        "#!/bin/bash\n"
        'export RANK0_HOST=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n1)\n'
        "export RDZV_PORT=$((20000 + SLURM_JOB_ID % 10000))\n"
        f"srun --output={tmp_path}/out-%t.txt {sys.executable} {rendezvous.__file__} "
        "--rank-var SLURM_NODEID --world-var SLURM_NNODES --node-var SLURMD_NODENAME\n"
    )
    job_id = slurm(
        "sbatch", "--parsable", "--wait", "-N2", "--ntasks-per-node=1",
        f"--output={tmp_path}/batch.txt", str(script), timeout=120,
    ).strip()  # fmt: skip
    assert job_id.isdigit(), job_id
    met = [MET.fullmatch((tmp_path / f"out-{t}.txt").read_text().strip()) for t in (0, 1)]
    assert all(met), met
    # both saw both ranks, on two different nodes; rank 1 reached rank 0 through its name
    (rank0, node0, via0), (rank1, node1, via1) = (m.groups() for m in met if m)
    assert (rank0, rank1) == ("0", "1")
    assert node0 != node1 and via1 == node0 == via0
    assert sacct_state(job_id) == ("COMPLETED", "0:0")


def test_failing_job_is_failed_with_its_exit_code(tmp_path: Path) -> None:
    job_id = slurm(
        "sbatch", "--parsable", f"--output={tmp_path}/o.txt", "--wrap", "exit 3"
    ).strip()  # fmt: skip
    assert sacct_state(job_id, timeout=60) == ("FAILED", "3:0")
