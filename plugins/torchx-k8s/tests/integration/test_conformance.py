"""The Scheduler contract's conformance kit against the kubernetes scheduler, both flavours.

A real cluster of one node (kube-apiserver, kubelet, kube-scheduler, the controller
manager and Volcano v1.5.1) with the project's stand-in for JobSet's controller (see
dev/README.md). The one capability declared missing is the scheduler's own
(``separate_streams``: the pod log API returns stdout and stderr together). Volcano
v1.5.1 keeps the pods of the last attempt when a job fails on its last retry (it fails
the job instead of restarting it), so their exit codes are read as JobSet's are:
``last_attempt_status`` is not declared missing.
"""

from __future__ import annotations

from typing import Any

import pytest
from k8scmd import image
from torchx_k8s.scheduler import KubernetesScheduler, create_scheduler

from torchx.schedulers.testing import AppBuilder, SchedulerConformance
from torchx.specs import Resource


class _Kit(SchedulerConformance):
    timeout = 180
    cancel_timeout = 60
    flavour = "volcano"

    @pytest.fixture
    def scheduler(self) -> KubernetesScheduler:
        return create_scheduler("kit")

    @pytest.fixture
    def cfg(self) -> dict[str, Any]:
        return {"flavour": self.flavour}

    @pytest.fixture
    def unknown_app_id(self) -> str:
        suffix = ":jobset" if self.flavour == "jobset" else ""
        return f"default:kit-unknown-1a2b3c4d5e{suffix}"

    @pytest.fixture
    def app_builder(self) -> AppBuilder:
        return AppBuilder(image=image(), shell="sh", resource=Resource(cpu=1, gpu=0, memMB=128))


class TestVolcanoConformance(_Kit):
    flavour = "volcano"


class TestJobSetConformance(_Kit):
    flavour = "jobset"
