"""A sweep on the real Slurm cluster: six trials, two at once (the kit's check, through the
``torchx`` command; the trials' times are Slurm's, from squeue and sacct)."""

from __future__ import annotations

from torchx.schedulers.testing.cli import TorchxCli
from torchx.schedulers.testing.sweeps import check_six_trials_two_at_once


def test_six_trials_two_at_once(cli: TorchxCli) -> None:
    # the image of a Slurm role is the directory it runs in: the job directory
    check_six_trials_two_at_once(cli, image=str(cli.work))
