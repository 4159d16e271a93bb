"""The acme scheduler against Acme Batch, checked by TorchX's conformance kit.

Run by ``nox -s tests-acme-torchx`` (this folder installed from its wheel beside
``torchx-runner[testing]``). What Acme Batch cannot do is declared on
``AcmeScheduler.missing_capabilities``; the kit checks what the scheduler does instead.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from acme_torchx.scheduler import AcmeScheduler, create_scheduler

from torchx.schedulers.testing import SchedulerConformance


class TestAcmeConformance(SchedulerConformance):
    @pytest.fixture
    def scheduler(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AcmeScheduler:
        monkeypatch.setenv("ACME_BATCH_HOME", str(tmp_path / "batch"))
        return create_scheduler("kit")

    @pytest.fixture
    def cfg(self) -> dict[str, str]:
        return {"queue": "kit"}

    @pytest.fixture
    def watched_paths(self, tmp_path: Path) -> list[Path]:
        return [tmp_path]
