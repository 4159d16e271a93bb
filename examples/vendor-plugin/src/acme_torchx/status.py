"""Acme Batch's answers as TorchX states and a ``DescribeAppResponse``: pure, no backend call.

Acme Batch has no job state: a job's state is the roll-up of its tasks' (one failed
task fails the job, even while others run), and a task that ended failing after the
job was cancelled was stopped by the cancel (CANCELLED).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from torchx.schedulers.contract.api import DescribeAppResponse
from torchx.schedulers.contract.states import rollup, settle_cancelled, to_app_state
from torchx.specs import AppState, ReplicaStatus, RoleStatus

if TYPE_CHECKING:
    from acme_torchx.batch import Task

#: Acme Batch's task states; one it adds later is UNKNOWN (never FAILED) until listed here.
TASK_STATES: Mapping[str, AppState] = {
    "RUNNING": AppState.RUNNING,
    "SUCCEEDED": AppState.SUCCEEDED,
    "FAILED": AppState.FAILED,
    "CANCELLED": AppState.CANCELLED,
}


def task_state(task: Task, cancelled: bool) -> AppState:
    """One task's state, CANCELLED if it ended failing after the job was cancelled."""
    return settle_cancelled(to_app_state(task.state, TASK_STATES), cancelled)


def job_state(tasks: Iterable[Task], cancelled: bool) -> AppState:
    """The job's state: its tasks' rolled up."""
    return rollup(task_state(t, cancelled) for t in tasks)


def describe_response(
    app_id: str, job: Mapping[str, Any], tasks: Iterable[Task], cancelled: bool
) -> DescribeAppResponse:
    """What ``describe`` answers for a job, its tasks, and whether it was cancelled."""
    roles: dict[str, RoleStatus] = {}
    failed = []
    for task in tasks:
        state = task_state(task, cancelled)
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
        state=rollup(r.state for role in roles.values() for r in role.replicas),
        msg="; ".join(failed),
        roles_statuses=list(roles.values()),
        name=str(job["name"]),
    )
