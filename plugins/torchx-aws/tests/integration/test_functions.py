"""torchx.functions on AWS Batch (the emulator, its jobs as containers of dev/docker's
python image): the call in the job's environment, the result in its CloudWatch log
(the kit's checks, :mod:`torchx.schedulers.testing.functions`)."""

from __future__ import annotations

import os
from typing import Any

import pytest

from torchx.schedulers.testing.functions import LogChannelChecks


class TestBatchFunctions(LogChannelChecks):
    scheduler = "aws_batch"
    node_var = "HOSTNAME"  # the container's
    image = os.environ.get("TORCHX_DEV_DOCKER_PYTHON_IMAGE", "torchx-dev/python:2")
    # the emulator writes a job's log to CloudWatch once its container has ended
    live_logs = False

    @pytest.fixture(autouse=True)
    def _in_queue(self, queue: str) -> None:
        self.queue = queue

    def options(self) -> dict[str, Any]:
        return {**super().options(), "cfg": {"queue": self.queue}}
