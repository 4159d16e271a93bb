"""AWS Batch's answers in TorchX's terms: job states, one replica per node, the console link.

A job's status comes from one ``DescribeJobs`` call that names the job and, for a
multi-node job, each of its node jobs (``<job id>#<node index>``, as Batch names
them): :func:`describe_response` turns that answer into a
:class:`~torchx.schedulers.api.DescribeAppResponse`.

>>> state_of({"status": "RUNNABLE"})
<AppState.PENDING: 2>
>>> state_of({"status": "FAILED", "statusReason": CANCEL_REASON})
<AppState.CANCELLED: 6>
>>> console_url("us-east-1", "2dc8-43")
'https://us-east-1.console.aws.amazon.com/batch/home?region=us-east-1#jobs/detail/2dc8-43'

Where a node job is not in the answer (Batch makes them once the job starts; an
emulator may never), the node takes the job's own state, and its exit code is the
job's only for a single-node job.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from torchx.schedulers.api import DescribeAppResponse, ListAppResponse
from torchx.specs import AppState, ReplicaStatus, RoleStatus
from torchx_aws.batch.request import TAGS, appdef_of, roles_of

__all__ = [
    "CANCEL_REASON",
    "STATES",
    "console_url",
    "describe_response",
    "list_response",
    "state_of",
]

#: The reason ``cancel`` gives ``TerminateJob``: a FAILED job with it was CANCELLED.
CANCEL_REASON = "cancelled by torchx"

#: Batch's job states -> TorchX's.
STATES: Mapping[str, AppState] = {
    "SUBMITTED": AppState.SUBMITTED,
    "PENDING": AppState.PENDING,
    "RUNNABLE": AppState.PENDING,
    "STARTING": AppState.PENDING,
    "RUNNING": AppState.RUNNING,
    "SUCCEEDED": AppState.SUCCEEDED,
    "FAILED": AppState.FAILED,
}


def state_of(job: Mapping[str, Any]) -> AppState:
    """The TorchX state of a Batch job (or node job) record."""
    state = STATES.get(str(job.get("status")), AppState.UNKNOWN)
    if state == AppState.FAILED and str(job.get("statusReason") or "").startswith(CANCEL_REASON):
        return AppState.CANCELLED
    return state


def console_url(region: str, job_id: str) -> str:
    """The job's page in the AWS console."""
    return (
        f"https://{region}.console.aws.amazon.com/batch/home?region={region}#jobs/detail/{job_id}"
    )


def _seconds(millis: Any) -> float | None:
    return None if millis in (None, 0) else float(millis) / 1000.0


def _exit_code(job: Mapping[str, Any]) -> int | None:
    code = (job.get("container") or {}).get("exitCode")
    return None if code is None else int(code)


def _address(node: Mapping[str, Any] | None) -> str:
    """The node's private address, where Batch gave one (its ``networkInterfaces``)."""
    for nic in ((node or {}).get("container") or {}).get("networkInterfaces") or []:
        if nic.get("privateIpv4Address"):
            return str(nic["privateIpv4Address"])
    return ""


def _layout(job: Mapping[str, Any]) -> list[tuple[str, int, int]]:
    """(role, first node, replicas) of the job: its node ranges, or its one container."""
    props = job.get("nodeProperties")
    if props:
        return roles_of(props)
    env = {
        e.get("name"): e.get("value") for e in (job.get("container") or {}).get("environment", [])
    }
    return [(str(env.get("TORCHX_ROLE_NAME") or job.get("jobName") or "main"), 0, 1)]


def describe_response(
    app_id: str,
    region: str,
    job: Mapping[str, Any],
    nodes: Sequence[Mapping[str, Any]] = (),
) -> DescribeAppResponse:
    """The status of ``job`` (a ``DescribeJobs`` record) and of its ``nodes`` records."""
    state = state_of(job)
    by_index: dict[int, Mapping[str, Any]] = {}
    for rec in nodes:
        index = (rec.get("nodeDetails") or {}).get("nodeIndex")
        if index is None:
            _, _, suffix = str(rec.get("jobId", "")).rpartition("#")
            index = int(suffix) if suffix.isdigit() else None
        if index is not None:
            by_index[int(index)] = rec
    layout = _layout(job)
    single = sum(n for _, _, n in layout) == 1
    roles: list[RoleStatus] = []
    failed: list[str] = []
    for role, first, count in layout:
        replicas = []
        for k in range(count):
            node = by_index.get(first + k)
            if node is not None:
                r_state, code = state_of(node), _exit_code(node)
                reason = str(node.get("statusReason") or "")
            else:
                r_state = state
                code = _exit_code(job) if single else None
                reason = str(job.get("statusReason") or "") if single else ""
            if r_state == AppState.FAILED:
                said = f" with exit code {code}" if code is not None else ""
                failed.append(
                    f"role {role} replica {k} (node {first + k}) failed{said}"
                    + (f": {reason}" if reason else "")
                )
            replicas.append(
                ReplicaStatus(
                    id=k,
                    state=r_state,
                    role=role,
                    hostname=_address(node),
                    exit_code=code,
                )
            )
        roles.append(RoleStatus(role, replicas))
    attempts = job.get("attempts") or []
    msg = "; ".join(failed) or str(job.get("statusReason") or "")
    tags = job.get("tags") or {}
    app = appdef_of(job)
    return DescribeAppResponse(
        app_id=app_id,
        state=state,
        num_restarts=max(0, len(attempts) - 1),
        msg=msg,
        ui_url=console_url(region, str(job.get("jobId"))),
        roles_statuses=roles,
        roles=list(app.roles) if app is not None else [],
        metadata=dict(app.metadata) if app is not None else {},
        name=app.name
        if app is not None
        else str(tags.get(TAGS["app_name"]) or job.get("jobName") or ""),
        start_time=_seconds(job.get("startedAt")) or _seconds(job.get("createdAt")),
        end_time=_seconds(job.get("stoppedAt")) if state.is_terminal() else None,
    )


def list_response(app_id: str, job: Mapping[str, Any]) -> ListAppResponse:
    """One app of ``list`` from a ``DescribeJobs`` record."""
    state = state_of(job)
    tags = job.get("tags") or {}
    return ListAppResponse(
        app_id=app_id,
        state=state,
        name=str(tags.get(TAGS["app_name"]) or job.get("jobName") or ""),
        start_time=_seconds(job.get("startedAt")) or _seconds(job.get("createdAt")),
        end_time=_seconds(job.get("stoppedAt")) if state.is_terminal() else None,
    )
