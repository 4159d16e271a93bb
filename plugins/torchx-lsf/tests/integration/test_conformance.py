"""The Scheduler contract's conformance kit against the lsf scheduler and the LSF stand-in.

What LSF (or this scheduler) lacks is declared on the scheduler class
(``missing_capabilities``, each with its reason); the kit then checks the documented
behaviour of lacking it instead.
"""

from __future__ import annotations

from torchx_lsf.scheduler import create_scheduler

from torchx.schedulers.testing import SchedulerConformance


class TestLsfConformance(SchedulerConformance):
    timeout = 120
    cancel_timeout = 60
    scheduler_factory = create_scheduler
    # every app of a test keeps its private directory in the test's own job directory
    job_dir_option = "jobdir"
