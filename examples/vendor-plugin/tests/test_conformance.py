"""The acme scheduler against Acme Batch, checked by TorchX's conformance kit.

Run by ``nox -s tests-acme-torchx`` (this folder installed from its wheel beside
``torchx-runner[testing]``). What Acme Batch cannot do is declared on
``AcmeScheduler.missing_capabilities``; the kit checks what the scheduler does instead.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from acme_torchx.scheduler import AcmeScheduler, create_scheduler

from torchx.schedulers.contract.errors import SchedulerError
from torchx.schedulers.testing import SchedulerConformance
from torchx.specs import AppDef, Role


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


def test_a_refused_submit_is_one_scheduler_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Acme Batch's own error reaches users as the contract's (classify_error maps it)."""
    from acme_torchx import batch

    monkeypatch.setenv("ACME_BATCH_HOME", str(tmp_path / "batch"))
    scheduler = create_scheduler("test")
    (tmp_path / "batch" / "taken").mkdir(parents=True)  # a job of that id exists already
    info = scheduler.submit_dryrun(AppDef("taken", [Role("r", "img", "true")]), {})
    info.request["id"] = "taken"
    with pytest.raises(SchedulerError, match="Acme Batch refused: job taken exists") as e:
        scheduler.schedule(info)
    assert isinstance(e.value.__cause__, batch.BatchError)
    assert scheduler.classify_error(KeyError("not Acme's")) is None
