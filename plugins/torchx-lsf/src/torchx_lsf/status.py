"""What LSF answered, as TorchX states and a ``DescribeAppResponse``: no LSF call here.

The backend (:mod:`torchx_lsf.backend`) gives the app's jobs as parsed records
(:mod:`torchx_lsf.parse`, one per replica); this module rolls them up with what the
app keeps in its private directory (:mod:`torchx_lsf.jobdir`): the cancel mark, exit
codes a failed replica recorded before LSF ended its job, and the AppDef.

Rules: the replicas' states roll up (one failed fails the app); a cancelled app is
RUNNING while its jobs stop and CANCELLED once they have (a replica that ended other
than by exiting 0 then reads CANCELLED); start and end times are the first start and,
once the app has ended, the last finish.
"""

from __future__ import annotations

import os
from collections.abc import Iterable

import attrs

from torchx.schedulers.contract.api import DescribeAppResponse, ListAppResponse
from torchx.schedulers.contract.states import rollup, settle_cancelled
from torchx.schedulers.helpers import appstore
from torchx.schedulers.helpers.ids import is_valid_app_id
from torchx.specs import AppState, ReplicaStatus, RoleStatus
from torchx_lsf.parse import JobRecord, replica_exit_code


def app_state(records: list[JobRecord], cancelled: bool) -> AppState:
    """The app's state from its jobs; CANCELLED once every job of a cancelled app ended."""
    states = [r.app_state for r in records]
    state = rollup(states)
    if cancelled and not all(s.is_terminal() for s in states):
        return AppState.RUNNING  # still stopping
    return settle_cancelled(state, cancelled)


def describe_response(
    app_id: str, records: list[JobRecord], app_dir: str, cancelled: bool
) -> DescribeAppResponse:
    """The app ``app_id`` from its jobs, its private directory and its cancel mark."""
    records = [_with_recorded_exit(rec, app_dir) for rec in records]
    state = app_state(records, cancelled)
    roles: dict[str, RoleStatus] = {}
    failed = []
    for rec in sorted(records, key=lambda r: r.replica or ("", 0)):
        role, rid = rec.replica or ("", 0)
        rstate = rec.app_state
        if state == AppState.CANCELLED and rstate != AppState.SUCCEEDED:
            rstate = AppState.CANCELLED
        exit_code = replica_exit_code(rec)
        if rstate == AppState.FAILED:
            failed.append(f"{role}/{rid} (LSF job {rec.job_id}, exit code {exit_code})")
        roles.setdefault(role, RoleStatus(role)).replicas.append(
            ReplicaStatus(
                id=rid, state=rstate, role=role, hostname=rec.exec_host, exit_code=exit_code
            )
        )
    msg = ""
    if state == AppState.FAILED and failed:
        msg = f"failed: {', '.join(failed)}"
        if app_dir:
            msg += f"; logs in {app_dir}"
    elif state == AppState.PENDING:
        msg = "waiting for LSF to dispatch the jobs (bjobs -p says why)"
    app = appstore.load(app_dir) if app_dir else None
    start, end = times(records, state)
    return DescribeAppResponse(
        app_id=app_id,
        state=state,
        num_restarts=0,
        msg=msg,
        roles_statuses=list(roles.values()),
        roles=list(app.roles) if app else [],
        metadata=dict(app.metadata) if app else {},
        name=app.name if app else "",
        ui_url=f"file://{app_dir}" if app_dir else None,
        start_time=start,
        end_time=end,
    )


def apps_of(records: Iterable[JobRecord]) -> dict[str, list[JobRecord]]:
    """The user's jobs by app: one app per project whose jobs are named as its replicas."""
    apps: dict[str, list[JobRecord]] = {}
    for rec in records:
        if rec.replica is not None and is_valid_app_id(rec.project):
            apps.setdefault(rec.project, []).append(rec)
    return apps


def list_entry(
    app_id: str, records: list[JobRecord], cancelled: bool, name: str = ""
) -> ListAppResponse:
    """What ``list`` says of the app ``app_id`` with jobs ``records``; ``name`` is the
    name of the AppDef it keeps (the app id does not carry it: it is made lower case)."""
    state = app_state(records, cancelled)
    start, end = times(records, state)
    return ListAppResponse(app_id=app_id, state=state, name=name, start_time=start, end_time=end)


def newest_first(found: list[ListAppResponse], apps: dict[str, list[JobRecord]]) -> None:
    """Sorts ``found`` newest first: LSF's job ids grow."""
    found.sort(key=lambda a: -min(int(r.job_id.split("[")[0]) for r in apps[a.app_id]))


def times(records: list[JobRecord], state: AppState) -> tuple[float | None, float | None]:
    """When the app's first replica started, and (once it ended) its last one finished."""
    starts = [r.start_time for r in records if r.start_time is not None]
    ends = [r.finish_time for r in records if r.finish_time is not None]
    start = min(starts) if starts else None
    end = max(ends) if ends and state.is_terminal() else None
    return start, end


def _with_recorded_exit(rec: JobRecord, app_dir: str) -> JobRecord:
    """``rec``, EXIT with the code its script recorded if it failed while LSF still runs it.

    A failed replica's script records its exit code before it ends the app's other
    replicas: until its own job ends, that file says how it ended.
    """
    if rec.state != "RUN" or not app_dir or rec.replica is None:
        return rec
    role, k = rec.replica
    try:
        with open(os.path.join(app_dir, f"{role}-{k}.exit"), encoding="utf-8") as f:
            text = f.read(32).strip()
    except OSError:
        return rec
    if not text.lstrip("-").isdigit() or int(text) == 0:
        return rec
    return attrs.evolve(rec, state="EXIT", exit_code=int(text))
