"""The Scheduler contract's conformance kit against the docker scheduler and a real engine.

The engine here lacks nothing the kit checks (every capability is there, so nothing is
declared missing); GPUs and privileged containers, which it refuses, are not capabilities
of the contract: ``test_faults.py`` checks the one line each gives.
"""

from __future__ import annotations

from typing import Any

import pytest
from dockercmd import busybox
from torchx_docker.scheduler import DockerScheduler, create_scheduler

from torchx.schedulers.testing import AppBuilder, SchedulerConformance
from torchx.specs import Resource


class TestDockerConformance(SchedulerConformance):
    timeout = 120
    cancel_timeout = 30

    @pytest.fixture
    def scheduler(self) -> DockerScheduler:
        return create_scheduler("kit")

    @pytest.fixture
    def cfg(self) -> dict[str, Any]:
        return {"stop_grace": 5}

    @pytest.fixture
    def app_builder(self) -> AppBuilder:
        return AppBuilder(image=busybox(), shell="sh", resource=Resource(cpu=1, gpu=0, memMB=128))
