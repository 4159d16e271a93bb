"""The Scheduler contract's conformance kit against the slurm scheduler and the real cluster.

What Slurm (or this scheduler) lacks is declared on the scheduler class
(``missing_capabilities``, each with its reason); the kit then checks the documented
behaviour of lacking it instead.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from torchx_slurm.scheduler import create_scheduler

from torchx.schedulers.testing import SchedulerConformance


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
