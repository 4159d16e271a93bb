"""The Scheduler contract's conformance kit against the slurm scheduler and the real cluster.

What Slurm (or this scheduler) lacks is declared on the scheduler class
(``missing_capabilities``, each with its reason); the kit then checks the documented
behaviour of lacking it instead.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from torchx_slurm.scheduler import create_scheduler

from torchx.schedulers.testing import Kit, SchedulerConformance


class TestSlurmConformance(SchedulerConformance):
    timeout = 180
    cancel_timeout = 60

    @pytest.fixture
    def scheduler(self):  # type: ignore[no-untyped-def]
        return create_scheduler("kit")

    @pytest.fixture
    def cfg(self, tmp_path: Path) -> dict[str, str]:
        # the job directory (logs, exit codes) of every app of the test
        return {"job_dir": str(tmp_path / "jobs")}

    @pytest.fixture
    def watched_paths(self, tmp_path: Path) -> list[Path]:
        return [tmp_path]

    @pytest.fixture
    def unknown_app_id(self) -> str:
        return "987654321"

    def test_two_roles_of_n_replicas_with_macros(self, kit: Kit) -> None:
        """Two roles of one replica each here: each replica is a heterogeneous group with a
        node of its own, and the cluster has 3 nodes (2 roles of 2 would wait for a 4th
        forever). Apps of 2 replicas on 2 nodes are checked by the other tests."""
        self.replicas = 1  # this test's instance only
        super().test_two_roles_of_n_replicas_with_macros(kit)
