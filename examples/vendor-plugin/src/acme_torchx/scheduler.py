"""The ``acme`` scheduler: TorchX apps on Acme Batch. Imported only when a job uses it.

This module says only which call does what; each job has its own module, named as in
every TorchX plugin: :mod:`~acme_torchx.options` (the run options),
:mod:`~acme_torchx.request` (the AppDef as Acme Batch's request, pure),
:mod:`~acme_torchx.status` (Acme Batch's answers as states, pure) and
:mod:`~acme_torchx.backend` (every call to Acme Batch, its client imported on first
use, so ``torchx run --dryrun -s acme`` and ``torchx runopts acme`` work without it).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from datetime import datetime
from typing import Any, ClassVar

from acme_torchx.backend import AcmeBackend
from acme_torchx.options import AcmeOpts
from acme_torchx.request import build_request
from acme_torchx.status import describe_response, job_state
from torchx.schedulers.contract.api import (
    DescribeAppResponse,
    ListAppResponse,
    Scheduler,
    Stream,
    filter_regex,
)
from torchx.schedulers.contract.capabilities import Capability
from torchx.schedulers.contract.errors import SchedulerError
from torchx.schedulers.helpers.follow import follow_file
from torchx.schedulers.helpers.ids import make_app_id
from torchx.specs import AppDef, AppDryRunInfo, CfgVal, SpecError


class AcmeScheduler(Scheduler[Mapping[str, CfgVal]]):
    """Apps on Acme Batch.

    Args:
        session_name: the session the handles carry (``acme://SESSION/JOB_ID``)
        backend: the backend to call (tests); default: Acme Batch's, made here
    """

    # run_opts(), -cfg, .torchxconfig and the docs read this class; _submit_dryrun gets
    # an instance of it (the options resolved and checked once)
    opts_class = AcmeOpts
    # What Acme Batch cannot do: TorchX's conformance kit (tests/) checks what the
    # scheduler does instead, and `torchx plugins` / docs/plugins.md show it to users.
    missing_capabilities: ClassVar[Mapping[Capability, str]] = {
        Capability.SEPARATE_STREAMS: "Acme Batch keeps one combined log per task",
        Capability.LOG_TIME_WINDOW: "Acme Batch logs carry no times",
        Capability.RETRIES: "Acme Batch never restarts a task",
        Capability.DESCRIBE_APPDEF: "Acme Batch keeps each task's command, not the AppDef",
    }

    def __init__(self, session_name: str, backend: AcmeBackend | None = None) -> None:
        super().__init__("acme", session_name)
        self._backend = backend or AcmeBackend()

    def _submit_dryrun(
        self, app: AppDef, cfg: Mapping[str, CfgVal]
    ) -> AppDryRunInfo[dict[str, Any]]:
        job_id = make_app_id(app.name)  # unique, and safe as the job's directory name
        request = build_request(app, job_id, AcmeOpts.of(cfg))
        return AppDryRunInfo(request, lambda r: json.dumps(r, indent=2))

    def classify_error(self, e: BaseException) -> SchedulerError | None:
        # The Runner applies it to what escapes describe, list, cancel, delete and
        # log_iter; schedule below applies it itself.
        return self._backend.classify_error(e)

    def close(self) -> None:
        self._backend.close()

    def schedule(self, dryrun_info: AppDryRunInfo[dict[str, Any]]) -> str:
        try:
            return self._backend.submit(dryrun_info.request)
        except Exception as e:
            mapped = self.classify_error(e)
            if mapped is None:
                raise
            raise mapped from e

    def describe(self, app_id: str) -> DescribeAppResponse | None:
        job, tasks = self._backend.job(app_id), self._backend.tasks(app_id)
        if job is None or tasks is None:
            return None
        return describe_response(app_id, job, tasks, self._backend.was_cancelled(app_id))

    def list(self, cfg: Mapping[str, CfgVal] | None = None) -> list[ListAppResponse]:
        # the queue given to `torchx list -s acme -cfg queue=q` (or in [acme] of
        # .torchxconfig); none given: every queue (no default is filled in for a list)
        queue = AcmeOpts.given(cfg).get("queue")
        apps = []
        for job in self._backend.jobs(queue):
            cancelled = self._backend.was_cancelled(job["id"])
            state = job_state(self._backend.tasks(job["id"]) or [], cancelled)
            apps.append(ListAppResponse(app_id=job["id"], state=state, name=job["name"]))
        return apps

    def _cancel_existing(self, app_id: str) -> None:
        self._backend.cancel(app_id)

    def _delete_existing(self, app_id: str) -> None:
        self._backend.delete(app_id)

    def log_iter(
        self,
        app_id: str,
        role_name: str,
        k: int = 0,
        regex: str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        should_tail: bool = False,
        streams: Stream | None = None,
    ) -> Iterable[str]:
        if streams not in (None, Stream.COMBINED):
            raise SpecError("acme keeps one combined log per replica: use streams=combined")
        lines = self._read(app_id, role_name, k, should_tail)
        return filter_regex(regex, lines) if regex else lines

    def _read(self, app_id: str, role: str, k: int, tail: bool) -> Iterator[str]:
        # A task writes its output to a plain file and its exit status after it: once
        # the job has ended, its output is complete, and follow_file loses no line.
        path = str(self._backend.output_path(app_id, role, k))
        return follow_file(
            path, should_tail=tail, is_done=lambda: self._ended(app_id), poll_interval=0.2
        )

    def _ended(self, app_id: str) -> bool:
        desc = self.describe(app_id)
        return desc is None or desc.state.is_terminal()


def create_scheduler(session_name: str, **kwargs: Any) -> AcmeScheduler:
    """The factory the plugin registers; ``backend=`` replaces Acme Batch's (tests)."""
    return AcmeScheduler(session_name, backend=kwargs.get("backend"))
