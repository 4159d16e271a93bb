"""A sweep on AWS Batch (the emulator, its jobs as containers): six trials, two at once (the
kit's check, through the ``torchx`` command; the trials' times are Batch's)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from awsenv import busybox

from torchx.schedulers.testing.cli import TorchxCli
from torchx.schedulers.testing.sweeps import check_six_trials_two_at_once


@pytest.fixture
def cli(tmp_path: Path) -> Iterator[TorchxCli]:
    c = TorchxCli(tmp_path, scheduler="aws_batch", timeout=120)
    yield c
    c.cleanup()


def test_six_trials_two_at_once(cli: TorchxCli, queue: str) -> None:
    check_six_trials_two_at_once(cli, image=busybox(), cfg=f"queue={queue}")
