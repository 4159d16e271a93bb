"""AWS Batch's answers in TorchX's terms: job states, one replica per node, the console link.

A job's status comes from one ``DescribeJobs`` call that names the job and, for a
multi-node job, each of its node jobs (``<job id>#<node index>``, as Batch names
them): :func:`describe_response` turns that answer into a
:class:`~torchx.schedulers.contract.api.DescribeAppResponse`.

>>> state_of({"status": "RUNNABLE"})
<AppState.PENDING: 2>
>>> state_of({"status": "FAILED", "statusReason": CANCEL_REASON})
<AppState.CANCELLED: 6>
>>> console_url("us-east-1", "2dc8-43")
'https://us-east-1.console.aws.amazon.com/batch/home?region=us-east-1#jobs/detail/2dc8-43'

Batch's status of a multi-node job is its main node's (a child node that fails
changes nothing by itself); TorchX's is FAILED as soon as any replica failed with no
attempt left (see :func:`describe_response`). Where a node job is not in the answer
(Batch makes them once the job starts), the node takes the job's own state, and its
exit code is the job's only for a single-node job.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from torchx.schedulers.contract.api import DescribeAppResponse, ListAppResponse
from torchx.specs import AppState, ReplicaStatus, RoleStatus
from torchx_aws.batch.request import TAGS, appdef_and_options_of, roles_of

__all__ = [
    "CANCEL_REASON",
    "FAILED_NODE_GRACE",
    "STATES",
    "console_url",
    "describe_response",
    "list_response",
    "retries_left",
    "state_of",
]

#: The reason ``cancel`` gives ``TerminateJob``: a FAILED job with it was CANCELLED.
CANCEL_REASON = "cancelled by torchx"

#: Seconds a replica may have failed, on the job's last attempt, while Batch still runs
#: the job, before the app is FAILED all the same. The node wrapper ends the job within
#: seconds of a child's failure, and Batch's records of every node are then final (a
#: replica whose command had ended keeps its own state and exit code); a job whose
#: main node goes on (an image without ``nc`` or ``python3``) is FAILED after this.
FAILED_NODE_GRACE = 30.0

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


def _ended_attempts(job: Mapping[str, Any]) -> int:
    """How many of the job's attempts have ended (``attempts[]`` with ``stoppedAt``)."""
    return sum(1 for a in job.get("attempts") or [] if a.get("stoppedAt"))


def retries_left(job: Mapping[str, Any]) -> bool:
    """Whether Batch makes another attempt if the running one fails: the attempts ended
    plus the running one are fewer than ``retryStrategy.attempts``."""
    total = int((job.get("retryStrategy") or {}).get("attempts") or 1)
    return _ended_attempts(job) + 1 < total


def restarts(job: Mapping[str, Any], state: AppState) -> int:
    """The job's restarts so far: every attempt but the first of a job that has ended;
    while it runs, each ended attempt (the running one may be listed already)."""
    if state.is_terminal():
        return max(0, len(job.get("attempts") or []) - 1)
    return _ended_attempts(job)


def _replica_state(state: AppState, job: Mapping[str, Any], node: Mapping[str, Any]) -> AppState:
    """A node job's state as a replica's, in the light of its job's (see the module)."""
    r_state = state_of(node)
    if state.is_terminal():
        # a node stopped by the cancel of its job was cancelled, not failed
        if state == AppState.CANCELLED and r_state == AppState.FAILED:
            return AppState.CANCELLED
        return r_state
    if job.get("status") != "RUNNING":
        return state  # not started, or between attempts: a record of the last attempt
    if r_state == AppState.FAILED and retries_left(job):
        return AppState.PENDING  # the node wrapper ends the attempt; Batch retries it
    return r_state


def describe_response(
    app_id: str,
    region: str,
    job: Mapping[str, Any],
    nodes: Sequence[Mapping[str, Any]] = (),
    now: float | None = None,
) -> DescribeAppResponse:
    """The status of ``job`` (a ``DescribeJobs`` record) and of its ``nodes`` records.

    Batch's own status of a multi-node job is its main node's; a replica that failed
    fails the app all the same (the partial-failure rule of
    :func:`torchx.schedulers.contract.states.rollup`), whatever the main node did: so a job
    SUCCEEDED with a FAILED node job is a FAILED app, and a RUNNING job whose node
    failed on its last attempt is FAILED once the job has ended (the node wrapper ends
    it within seconds) or :data:`FAILED_NODE_GRACE` seconds after that failure (``now``:
    the time, for tests), whichever comes first. ``msg`` names the failed replicas, the
    first to fail first.
    """
    import time

    now = time.time() if now is None else now
    state = batch_state = state_of(job)
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
    failed: list[tuple[float, str]] = []
    for role, first, count in layout:
        replicas = []
        for k in range(count):
            node = by_index.get(first + k)
            if node is not None:
                r_state, code = _replica_state(state, job, node), _exit_code(node)
                reason = str(node.get("statusReason") or "")
                when = node.get("stoppedAt") or 0
            else:
                r_state = state
                code = _exit_code(job) if single else None
                reason = str(job.get("statusReason") or "") if single else ""
                when = job.get("stoppedAt") or 0
            if r_state == AppState.FAILED:
                said = f" with exit code {code}" if code is not None else ""
                text = f"role {role} replica {k} (node {first + k}) failed{said}"
                # a failure of unknown time (no stoppedAt) counts as long past
                failed.append((float(when or 0), text + (f": {reason}" if reason else "")))
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
    first_failure = min((when for when, _ in failed), default=float("inf"))
    if failed and (
        state == AppState.SUCCEEDED
        or (state == AppState.RUNNING and now - first_failure / 1000 > FAILED_NODE_GRACE)
    ):
        state = AppState.FAILED
    msg = "; ".join(text for _, text in sorted(failed, key=lambda f: f[0]))
    msg = msg or str(job.get("statusReason") or "")
    tags = job.get("tags") or {}
    app, run_options = appdef_and_options_of(job)
    return DescribeAppResponse(
        app_id=app_id,
        state=state,
        num_restarts=restarts(job, batch_state),
        msg=msg,
        ui_url=console_url(region, str(job.get("jobId"))),
        roles_statuses=roles,
        roles=list(app.roles) if app is not None else [],
        metadata=dict(app.metadata) if app is not None else {},
        run_options=run_options,
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
