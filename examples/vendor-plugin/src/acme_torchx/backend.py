"""Acme Batch's client, the one way the scheduler reaches it: every backend call is here.

The vendor's SDK (here :mod:`acme_torchx.batch`) is imported on the first call, never
to dry-run, so ``torchx run --dryrun -s acme`` and ``torchx runopts acme`` work
without it. :meth:`AcmeBackend.classify_error` turns the SDK's errors into the
contract's; :meth:`AcmeBackend.close` lets go of what the client holds. Tests give
the scheduler another backend (``create_scheduler(session, backend=...)``).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from torchx.schedulers.contract.errors import SchedulerError

if TYPE_CHECKING:
    from types import ModuleType

    from acme_torchx.batch import Task


class AcmeBackend:
    """Acme Batch's calls, through its SDK imported on first use (cached here)."""

    def __init__(self) -> None:
        self._sdk: ModuleType | None = None

    def _batch(self) -> ModuleType:
        if self._sdk is None:
            from acme_torchx import batch  # the "SDK": needed to submit, not to dry-run

            self._sdk = batch
        return self._sdk

    def close(self) -> None:
        """Lets go of the client (Acme Batch's holds no connection)."""
        self._sdk = None

    def classify_error(self, e: BaseException) -> SchedulerError | None:
        """The one place Acme Batch's errors become the contract's; None: not Acme's."""
        if isinstance(e, self._batch().BatchError):
            return SchedulerError(f"Acme Batch refused: {e}")
        return None

    def submit(self, request: dict[str, Any]) -> str:
        return str(self._batch().submit(request))  # it removes what it made on failure

    def job(self, job_id: str) -> dict[str, Any] | None:
        found: dict[str, Any] | None = self._batch().job(job_id)
        return found

    def tasks(self, job_id: str) -> list[Task] | None:
        found: list[Task] | None = self._batch().tasks(job_id)
        return found

    def was_cancelled(self, job_id: str) -> bool:
        return bool(self._batch().was_cancelled(job_id))

    def jobs(self, queue: str | None) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = self._batch().jobs(queue)
        return found

    def cancel(self, job_id: str) -> None:
        self._batch().cancel(job_id)

    def delete(self, job_id: str) -> None:
        self._batch().delete(job_id)

    def output_path(self, job_id: str, role: str, replica: int) -> Path:
        path: Path = self._batch().output_path(job_id, role, replica)
        return path
