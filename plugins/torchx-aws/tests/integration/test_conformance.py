"""The Scheduler contract's conformance kit against aws_batch, with jobs running in containers.

The emulator (moto, started by dev/aws and made to run Batch jobs as AWS documents
them: node jobs, the main node deciding, retry attempts) runs every node as a
container on the Docker engine and sends each node's output to CloudWatch Logs as it
comes. Only what Batch itself lacks (the scheduler's ``missing_capabilities``) is
declared: nothing for the emulator.
"""

from __future__ import annotations

from typing import Any

import pytest
from awsenv import busybox
from torchx_aws.batch.scheduler import AwsBatchScheduler, create_scheduler

from torchx.schedulers.testing import AppBuilder, SchedulerConformance
from torchx.specs import Resource


class TestAwsBatchConformance(SchedulerConformance):
    timeout = 120
    cancel_timeout = 60

    @pytest.fixture
    def scheduler(self, queue: str) -> AwsBatchScheduler:
        return create_scheduler("kit")

    @pytest.fixture
    def cfg(self, queue: str) -> dict[str, Any]:
        return {"queue": queue}

    @pytest.fixture
    def unknown_app_id(self, queue: str) -> str:
        return f"{queue}:00000000-0000-0000-0000-000000000000:us-east-1:1"

    @pytest.fixture
    def app_builder(self) -> AppBuilder:
        return AppBuilder(image=busybox(), shell="sh", resource=Resource(cpu=1, gpu=0, memMB=128))
