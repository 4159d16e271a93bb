"""What Slurm answered, as TorchX states and a ``DescribeAppResponse``: no Slurm call here.

The backend (:mod:`torchx_slurm.backend`) gives the job's components as parsed
records (:mod:`torchx_slurm.parse`, one per replica of a heterogeneous job); this
module rolls them up (:func:`describe_response`, :func:`list_entries`) with what the
job left in its directory (:mod:`torchx_slurm.jobfiles`): each replica's exit code,
the restart count, the AppDef ``schedule`` kept, and Slurm's own errors.

Rules:

* the components' states roll up (a failed one fails the app; one still completing
  keeps it RUNNING); a replica's recorded exit code decides its own state;
* a pending job has not started its current run: exit codes on disk are of the run
  before (a requeue), not of this one;
* after a cancel, replicas stopped by it (exited non-zero) are CANCELLED;
* start and end times are only the ones that happened (none while pending; no end
  before the app has ended).
"""

from __future__ import annotations

import os
from collections.abc import Iterable

from torchx.schedulers import appstore
from torchx.schedulers.api import DescribeAppResponse, ListAppResponse, SchedulerError
from torchx.schedulers.states import rollup
from torchx.specs import AppState, ReplicaStatus, RoleStatus
from torchx_slurm.jobfiles import STATE_DIR, exit_files, is_own_file, read_int, split_name
from torchx_slurm.parse import JobRecord, app_state


def describe_response(app_id: str, records: list[JobRecord]) -> DescribeAppResponse:
    """The app of job ``app_id`` from its components' ``records`` and its job directory."""
    records = sorted(records, key=lambda r: r.offset)
    leader = records[0]
    # one component per replica: their states roll up (a failed one fails the app;
    # one still completing keeps it RUNNING)
    state = rollup(app_state(r.state) for r in records)
    job_dir = leader.work_dir
    state_dir = os.path.join(job_dir, STATE_DIR, app_id) if job_dir else ""
    restarts = read_int(os.path.join(state_dir, "restarts")) if state_dir else None
    if restarts is None:
        restarts = leader.restarts or 0
    # a pending job has not started its current run: exit codes on disk are of the
    # run before (a requeue), not of this one
    exits = (
        {}
        if state == AppState.PENDING
        else {(role, k): code for role, k, code in exit_files(state_dir)}
    )
    roles: dict[str, RoleStatus] = {}
    app_name = ""
    for rec in records:
        parsed = split_name(rec.name)
        if parsed is None:
            app_name = app_name or rec.name
            role, replica_id = rec.name or "job", rec.offset
        else:
            app_name = app_name or parsed[0]
            _, role, replica_id = parsed
        exit_code = exits.pop((role, replica_id), None)
        if exit_code is not None:
            rstate = AppState.SUCCEEDED if exit_code == 0 else AppState.FAILED
        else:
            rstate = app_state(rec.state)
            if len(records) == 1:
                exit_code = rec.exit_code
        roles.setdefault(role, RoleStatus(role)).replicas.append(
            ReplicaStatus(
                id=replica_id,
                state=rstate,
                role=role,
                hostname=rec.nodes,
                exit_code=exit_code,
            )
        )
    # The job-completion file (sacct -c) has a record for the leader only: the
    # other replicas are the ones whose exit code the script recorded.
    for (role, replica_id), exit_code in exits.items():
        roles.setdefault(role, RoleStatus(role)).replicas.append(
            ReplicaStatus(
                id=replica_id,
                state=AppState.SUCCEEDED if exit_code == 0 else AppState.FAILED,
                role=role,
                hostname="",
                exit_code=exit_code,
            )
        )
    for rs in roles.values():
        rs.replicas.sort(key=lambda r: r.id)
        if state == AppState.CANCELLED:
            # replicas stopped by the cancel exited non-zero: they were cancelled
            for rep in rs.replicas:
                if rep.state != AppState.SUCCEEDED:
                    rep.state = AppState.CANCELLED
    msg = _message(state, leader, job_dir, app_id, roles.values(), state_dir)
    # the AppDef submitted (kept by schedule), else only the name Slurm has
    app = appstore.load(state_dir) if state_dir else None
    return DescribeAppResponse(
        app_id=app_id,
        state=state,
        num_restarts=restarts,
        msg=msg,
        roles_statuses=list(roles.values()),
        roles=list(app.roles) if app else [],
        metadata=dict(app.metadata) if app else {},
        name=app.name if app else app_name,
        ui_url=f"file://{job_dir}" if job_dir else None,
        start_time=start_time(records, state),
        end_time=end_time(records, state),
    )


def list_entries(ended: Iterable[JobRecord], queued: Iterable[JobRecord]) -> list[ListAppResponse]:
    """One entry per job, from accounting's records (``ended``) and the queue's, newest first.

    Each job is its leader's record; where both know a job, the queue knows best what
    is still there.
    """
    found = leaders(ended)
    found.update(leaders(queued))
    apps = []
    for job_id, rec in found.items():
        parsed = split_name(rec.name)
        state = app_state(rec.state)
        apps.append(
            ListAppResponse(
                app_id=job_id,
                state=state,
                name=parsed[0] if parsed else rec.name,
                start_time=start_time([rec], state),
                end_time=end_time([rec], state),
            )
        )
    apps.sort(key=lambda a: sort_key(a.app_id), reverse=True)
    return apps


def leaders(records: Iterable[JobRecord]) -> dict[str, JobRecord]:
    """One record per job: each heterogeneous job's leader (its component 0)."""
    found: dict[str, JobRecord] = {}
    for rec in records:
        have = found.get(rec.job_id)
        if have is None or rec.offset < have.offset:
            found[rec.job_id] = rec
    return found


def own_records(app_id: str, records: list[JobRecord], session: str) -> list[JobRecord]:
    """The records of job ``app_id``; raises if it is a component of another job.

    Asked for a later component of a heterogeneous job (``1235`` of ``1234+1``),
    squeue and sacct answer with that component under its leader's id: it is not an
    app of its own, and saying so beats "no such app".
    """
    own = [r for r in records if r.job_id == app_id]
    if not own and len(records) == 1 and records[0].offset:
        rec = records[0]
        raise component_error(app_id, rec.job_id, rec.offset, rec, session)
    return own


def component_error(
    app_id: str, leader: str, offset: int, rec: JobRecord, session: str
) -> SchedulerError:
    """The error for job ``app_id``, component ``offset`` of heterogeneous job ``leader``."""
    parsed = split_name(rec.name)
    what = f" (replica {parsed[1]}/{parsed[2]} of its app)" if parsed else ""
    return SchedulerError(
        f"Slurm job {app_id} is component {offset} of heterogeneous job {leader}{what}, "
        f"not an app of its own: use its app, slurm://{session}/{leader}"
    )


def _message(
    state: AppState,
    leader: JobRecord,
    job_dir: str,
    app_id: str,
    roles: Iterable[RoleStatus],
    state_dir: str,
) -> str:
    """Why the app is in ``state``: Slurm's reason, the exit code, what was not recorded,
    and Slurm's own errors from the job's output (``slurm-<id>.out``).

    A pending job's reason ("Resources", "Priority") says why it waits; once the job
    was cancelled it means nothing, and is not shown.
    """
    if state not in (AppState.PENDING, AppState.FAILED, AppState.UNKNOWN):
        return ""
    msg = leader.reason or ""
    if state != AppState.FAILED:
        return msg
    parts = [msg] if msg else []
    if leader.exit_code:
        parts = [
            f"{msg} (exit code {leader.exit_code})" if msg else f"exit code {leader.exit_code}"
        ]
    unrecorded = [
        f"{rs.role}/{rep.id}" for rs in roles for rep in rs.replicas if rep.exit_code is None
    ]
    if unrecorded and state_dir:
        parts.append(
            f"no exit code recorded for {', '.join(unrecorded)} in {state_dir} (the job "
            "directory full, not writable or deleted?)"
        )
    parts.extend(slurm_errors(job_dir, app_id))
    return "; ".join(parts)


def slurm_errors(job_dir: str, app_id: str, limit: int = 5) -> list[str]:
    """Slurm's (and the job script's) error lines in the job's ``.torchx-slurm/slurm-<id>.out``.

    That file holds what the batch script and its ``srun`` said, e.g. ``srun: error:
    Could not open stdout file ...`` when a replica could not start: the reason a
    replica has no log or no exit code. The last ``limit`` such lines.
    """
    if not job_dir:
        return []
    # the job's own directory (the old layout: the job directory), never a file another
    # user put there under that name
    paths = [os.path.join(job_dir, STATE_DIR, f"slurm-{app_id}.out")]
    paths.append(os.path.join(job_dir, f"slurm-{app_id}.out"))
    path = next((p for p in paths if is_own_file(p)), "")
    if not path:
        return []
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read(1 << 20)
    except OSError:
        return []
    found = [
        line.strip()
        for line in text.splitlines()
        if "error" in line.lower() or line.startswith("torchx:")
    ]
    return found[-limit:]


def sort_key(app_id: str) -> tuple[int, str]:
    """Orders job ids by number (an array job's ``12_3`` by its job's)."""
    head = app_id.split("_", 1)[0]
    return (int(head) if head.isdigit() else -1, app_id)


def start_time(records: Iterable[JobRecord], state: AppState) -> float | None:
    """When the job's first component started; None while pending (Slurm's start time of
    a pending job is the time it expects, not one that happened)."""
    if state in (AppState.PENDING, AppState.SUBMITTED, AppState.UNSUBMITTED):
        return None
    times = [r.start_time for r in records if r.start_time is not None]
    return min(times) if times else None


def end_time(records: Iterable[JobRecord], state: AppState) -> float | None:
    """When the job's last component ended; None until the app has ended (the end time of
    a running job is its time limit's, not one that happened)."""
    if not state.is_terminal():
        return None
    times = [r.end_time for r in records if r.end_time is not None]
    return max(times) if times else None
