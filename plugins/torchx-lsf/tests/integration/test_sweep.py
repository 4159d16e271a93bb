"""A sweep on dev/lsf (the project's LSF stand-in): six trials, two at once (the kit's
check, through the ``torchx`` command; the trials' times are the stand-in's bjobs)."""

from __future__ import annotations

from torchx.schedulers.testing.cli import TorchxCli
from torchx.schedulers.testing.sweeps import check_six_trials_two_at_once


def test_six_trials_two_at_once(cli: TorchxCli) -> None:
    check_six_trials_two_at_once(cli, image=str(cli.work))
