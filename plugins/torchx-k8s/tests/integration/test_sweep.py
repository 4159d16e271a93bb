"""A sweep on the real node (Volcano Jobs): six trials, two at once (the kit's check,
through the ``torchx`` command; the trials' times are the pods' own)."""

from __future__ import annotations

from k8scmd import image

from torchx.schedulers.testing.cli import TorchxCli
from torchx.schedulers.testing.sweeps import check_six_trials_two_at_once


def test_six_trials_two_at_once(cli: TorchxCli) -> None:
    check_six_trials_two_at_once(cli, image=image())
