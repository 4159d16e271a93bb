"""The ``acme`` scheduler: TorchX apps on Acme Batch. Imported only when a job uses it.

Dry-running needs only this module. Submitting and following an app talk to Acme
Batch through :mod:`acme_torchx.batch`, imported inside the methods that need it
(where a real plugin imports its cloud SDK), so ``torchx run --dryrun -s acme``
and ``torchx runopts acme`` work without it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from datetime import datetime
from typing import Any, ClassVar

from torchx.schedulers.api import (
    DescribeAppResponse,
    ListAppResponse,
    Scheduler,
    SchedulerError,
    Stream,
    filter_regex,
)
from torchx.schedulers.capabilities import Capability
from torchx.schedulers.follow import follow_file
from torchx.schedulers.ids import make_app_id
from torchx.schedulers.states import rollup, settle_cancelled, to_app_state
from torchx.specs import (
    AppDef,
    AppDryRunInfo,
    AppState,
    CfgVal,
    ReplicaStatus,
    RoleStatus,
    SpecError,
    macros,
    runopts,
)

#: Acme Batch's task states; one it adds later is UNKNOWN (never FAILED) until listed here.
TASK_STATES: Mapping[str, AppState] = {
    "RUNNING": AppState.RUNNING,
    "SUCCEEDED": AppState.SUCCEEDED,
    "FAILED": AppState.FAILED,
    "CANCELLED": AppState.CANCELLED,
}


class AcmeScheduler(Scheduler[Mapping[str, CfgVal]]):
    # What Acme Batch cannot do: TorchX's conformance kit (tests/) checks what the
    # scheduler does instead, and `torchx plugins` / docs/plugins.md show it to users.
    missing_capabilities: ClassVar[Mapping[Capability, str]] = {
        Capability.SEPARATE_STREAMS: "Acme Batch keeps one combined log per task",
        Capability.LOG_TIME_WINDOW: "Acme Batch logs carry no times",
        Capability.RETRIES: "Acme Batch never restarts a task",
        Capability.DESCRIBE_APPDEF: "Acme Batch keeps each task's command, not the AppDef",
    }

    def __init__(self, session_name: str, **kwargs: object) -> None:
        super().__init__("acme", session_name)

    def _run_opts(self) -> runopts:
        opts = runopts()
        opts.add("queue", type_=str, default="default", help="the Acme Batch queue to submit to")
        return opts

    def _submit_dryrun(
        self, app: AppDef, cfg: Mapping[str, CfgVal]
    ) -> AppDryRunInfo[dict[str, Any]]:
        job_id = make_app_id(app.name)  # unique, and safe as the job's directory name
        tasks = []
        for role in app.roles:
            for replica in range(role.num_replicas):
                values = macros.Values(
                    img_root="",
                    app_id=job_id,
                    replica_id=str(replica),
                    rank0_env="ACME_RANK0_HOST",
                )
                task = values.apply(role)
                tasks.append(
                    {
                        "role": role.name,
                        "replica": replica,
                        "argv": [task.entrypoint, *task.args],
                        "env": {"ACME_RANK0_HOST": "localhost", **task.env},
                        "instance": role.resource.capabilities.get("acme/instance", "any"),
                    }
                )
        request = {"id": job_id, "name": app.name, "queue": cfg["queue"], "tasks": tasks}
        return AppDryRunInfo(request, lambda r: json.dumps(r, indent=2))

    def classify_error(self, e: BaseException) -> SchedulerError | None:
        # The one place Acme Batch's errors become the contract's: the Runner applies it
        # to what escapes describe, list, cancel, delete and log_iter, schedule below.
        from acme_torchx import batch

        if isinstance(e, batch.BatchError):
            return SchedulerError(f"Acme Batch refused: {e}")
        return None

    def schedule(self, dryrun_info: AppDryRunInfo[dict[str, Any]]) -> str:
        from acme_torchx import batch  # the "SDK": needed to submit, not to dry-run

        try:
            return batch.submit(dryrun_info.request)  # it removes what it made on failure
        except Exception as e:
            mapped = self.classify_error(e)
            if mapped is None:
                raise
            raise mapped from e

    def describe(self, app_id: str) -> DescribeAppResponse | None:
        from acme_torchx import batch

        job, tasks = batch.job(app_id), batch.tasks(app_id)
        if job is None or tasks is None:
            return None
        # a task that ended failing after the job was cancelled was stopped by the cancel
        cancelled = batch.was_cancelled(app_id)
        roles: dict[str, RoleStatus] = {}
        failed = []
        for task in tasks:
            state = settle_cancelled(to_app_state(task.state, TASK_STATES), cancelled)
            if state == AppState.FAILED:
                how = "was killed" if task.exit_code is None else f"exited with {task.exit_code}"
                failed.append(f"task {task.role}/{task.replica} {how}")
            replica = ReplicaStatus(
                id=task.replica,
                state=state,
                role=task.role,
                hostname="localhost",
                exit_code=task.exit_code,
            )
            roles.setdefault(task.role, RoleStatus(task.role)).replicas.append(replica)
        return DescribeAppResponse(
            app_id=app_id,
            # Acme Batch has no job state: the tasks' states roll up (one failed: FAILED)
            state=rollup(r.state for role in roles.values() for r in role.replicas),
            msg="; ".join(failed),
            roles_statuses=list(roles.values()),
            name=str(job["name"]),
        )

    def list(self, cfg: Mapping[str, CfgVal] | None = None) -> list[ListAppResponse]:
        from acme_torchx import batch

        # the queue given to `torchx list -s acme -cfg queue=q` (or in [acme] of
        # .torchxconfig); none given: every queue (no default is filled in for a list)
        queue = cfg.get("queue") if cfg else None
        apps = []
        for job in batch.jobs(None if queue is None else str(queue)):
            cancelled = batch.was_cancelled(job["id"])
            tasks = batch.tasks(job["id"]) or []
            state = rollup(
                settle_cancelled(to_app_state(t.state, TASK_STATES), cancelled) for t in tasks
            )
            apps.append(ListAppResponse(app_id=job["id"], state=state, name=job["name"]))
        return apps

    def _cancel_existing(self, app_id: str) -> None:
        from acme_torchx import batch

        batch.cancel(app_id)

    def _delete_existing(self, app_id: str) -> None:
        from acme_torchx import batch

        batch.delete(app_id)

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
        from acme_torchx import batch

        # A task writes its output to a plain file and its exit status after it: once
        # the job has ended, its output is complete, and follow_file loses no line.
        path = str(batch.output_path(app_id, role, k))
        return follow_file(
            path, should_tail=tail, is_done=lambda: self._ended(app_id), poll_interval=0.2
        )

    def _ended(self, app_id: str) -> bool:
        desc = self.describe(app_id)
        return desc is None or desc.state.is_terminal()


def create_scheduler(session_name: str, **kwargs: object) -> AcmeScheduler:
    return AcmeScheduler(session_name, **kwargs)
