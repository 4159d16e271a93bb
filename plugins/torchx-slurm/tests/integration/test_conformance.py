"""The Scheduler contract's conformance kit against the slurm scheduler and the real cluster.

What Slurm (or this scheduler) lacks is declared on the scheduler class
(``missing_capabilities``, each with its reason); the kit then checks the documented
behaviour of lacking it instead.
"""

from __future__ import annotations

import pytest
from torchx_slurm.scheduler import create_scheduler

from torchx.schedulers.testing import SchedulerConformance


class TestSlurmConformance(SchedulerConformance):
    timeout = 180
    cancel_timeout = 60
    scheduler_factory = create_scheduler
    # every app of a test keeps its logs and exit codes in the test's own job directory
    job_dir_option = "job_dir"

    @pytest.fixture
    def unknown_app_id(self) -> str:
        return "987654321"  # a Slurm job id no job of the test cluster reaches
