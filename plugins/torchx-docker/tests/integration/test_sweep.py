"""A sweep on dev/docker's engine: six trials, two at once (the kit's check, through the
``torchx`` command; the trials' times are the containers' own)."""

from __future__ import annotations

from dockercmd import busybox

from torchx.schedulers.testing.cli import TorchxCli
from torchx.schedulers.testing.sweeps import check_six_trials_two_at_once


def test_six_trials_two_at_once(cli: TorchxCli) -> None:
    check_six_trials_two_at_once(cli, image=busybox())
