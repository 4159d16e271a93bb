"""The Scheduler contract's conformance kit against the kubernetes scheduler, both flavours.

A real kube-apiserver with the project's stand-in for the rest of a cluster (Volcano's
and JobSet's controllers, a scheduler, a node running pods as containers: see
dev/k8s-standin/README.md). The one capability declared missing is the scheduler's own
(``separate_streams``: the pod log API returns stdout and stderr together), and for the
Volcano flavour ``last_attempt_status`` too: Volcano deletes every pod of a job it
restarts, the failed attempt's too, before it marks the job Failed after the last
failure, so no exit code of that attempt is left to report (JobSet keeps them).
"""

from __future__ import annotations

from typing import Any

import pytest
from k8scmd import image
from torchx_k8s.scheduler import KubernetesScheduler, create_scheduler

from torchx.schedulers.testing import AppBuilder, Capability, SchedulerConformance
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
    missing = {
        **KubernetesScheduler.missing_capabilities,
        Capability.LAST_ATTEMPT_STATUS: "Volcano deletes every pod of a job it restarts "
        "(RestartJob), the failed attempt's too, before it marks the job Failed on the last "
        "failure: that attempt's exit codes are gone from the API",
    }


class TestJobSetConformance(_Kit):
    flavour = "jobset"
