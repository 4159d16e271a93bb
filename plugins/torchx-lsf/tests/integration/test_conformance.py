"""The Scheduler contract's conformance kit against the lsf scheduler and the LSF stand-in.

What LSF (or this scheduler) lacks is declared on the scheduler class
(``missing_capabilities``, each with its reason); the kit then checks the documented
behaviour of lacking it instead.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from torchx_lsf.scheduler import create_scheduler

from torchx.schedulers.testing import SchedulerConformance


class TestLsfConformance(SchedulerConformance):
    timeout = 120
    cancel_timeout = 60

    @pytest.fixture
    def scheduler(self):  # type: ignore[no-untyped-def]
        return create_scheduler("kit")

    @pytest.fixture
    def cfg(self, tmp_path: Path) -> dict[str, str]:
        # the job directory (the apps' private directories) of every app of the test
        return {"jobdir": str(tmp_path / "jobs")}

    @pytest.fixture
    def watched_paths(self, tmp_path: Path) -> list[Path]:
        return [tmp_path]

    @pytest.fixture
    def unknown_app_id(self) -> str:
        return "kit-unknown-0123456789"
