"""The local scheduler passes the whole conformance kit (torchx.schedulers.testing)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from torchx.schedulers.local.scheduler import LocalScheduler, create_scheduler
from torchx.schedulers.testing import SchedulerConformance

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="the local scheduler is Linux-only")


class TestLocalConformance(SchedulerConformance):
    @pytest.fixture
    def scheduler(self, tmp_path: Path) -> LocalScheduler:
        return create_scheduler("kit", state_dir=str(tmp_path / "state"))

    @pytest.fixture
    def watched_paths(self, tmp_path: Path) -> list[Path]:
        import os

        return [tmp_path, Path(os.environ["TORCHX_HOME"])]
