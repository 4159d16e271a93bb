"""Apps that cannot start, and cancelling one that waits.

Each replica needs a node of its own: an app of more replicas than the partition has
nodes (the dev cluster has 4) would stay PENDING forever, so it is refused at dryrun,
from what ``sinfo`` says, unless the user insists (``-cfg allow_pending=True``).
"""

from __future__ import annotations

from torchx.schedulers.testing.cli import TorchxCli

FIVE = ["utils.echo", "--msg", "hi", "--num_replicas", "5"]


def test_more_replicas_than_nodes_is_refused_at_dryrun_and_run(cli: TorchxCli) -> None:
    for how in (["--dryrun"], []):
        proc = cli("run", "-s", "slurm", *how, *FIVE, rc=2)
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1, proc.stderr
        assert (
            "has 5 replicas, each on a node of its own, but the default partition has 4"
            in (lines[0])
        )
        assert "-cfg allow_pending=True" in lines[0]
    assert cli("run", "-s", "slurm", "--dryrun", *FIVE[:-1], "4").returncode == 0
    dry = cli("run", "-s", "slurm", "--dryrun", "-cfg", "allow_pending=True", *FIVE)
    assert dry.stdout.count("#SBATCH hetjob") == 4


def test_cancelling_a_pending_app_prints_no_pending_reason(cli: TorchxCli) -> None:
    handle = cli.start("-cfg", "allow_pending=True", *FIVE)
    waiting = cli.wait_state(handle, {"PENDING"})
    assert waiting["state"] == "PENDING"
    proc = cli("cancel", handle)
    assert proc.stdout.strip() == f"cancelled {handle}", proc.stdout
    status = cli.wait_state(handle, {"CANCELLED"}, timeout=30)
    assert status["msg"] == "", status
    text = cli("status", handle).stdout
    assert "Resources" not in text, text
