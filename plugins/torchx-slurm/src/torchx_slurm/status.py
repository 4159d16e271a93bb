"""What Slurm answered, as TorchX states and a ``DescribeAppResponse``: no Slurm call here.

The backend (:mod:`torchx_slurm.backend`) gives the job's components as parsed
records (:mod:`torchx_slurm.parse`, one per replica of a heterogeneous job); this
module rolls them up (:func:`describe_response`, :func:`list_entries`) with what the
job left in its directory (:mod:`torchx_slurm.jobfiles`): each replica's exit code,
the restart count, the AppDef ``schedule`` kept, and Slurm's own errors. The plain
status record comes from :mod:`torchx_slurm.status_record` (standard library only,
the quick handler's parser too); this module makes the attrs types from it.

Rules:

* the components' states roll up (a failed one fails the app; one still completing
  keeps it RUNNING); a job array's tasks are independent (:func:`array_state`); a
  replica's recorded exit code decides its own state;
* a pending job has not started its current run: exit codes on disk are of the run
  before (a requeue), not of this one;
* after a cancel, replicas stopped by it (exited non-zero) are CANCELLED;
* start and end times are only the ones that happened (none while pending; no end
  before the app has ended).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import TYPE_CHECKING

from torchx.schedulers.contract.api import DescribeAppResponse, ListAppResponse
from torchx.schedulers.contract.errors import SchedulerError
from torchx.schedulers.contract.states import role_statuses, rollup
from torchx.schedulers.helpers import appstore
from torchx.specs import AppState
from torchx_slurm.jobfiles import STATE_DIR, is_own_file, split_name
from torchx_slurm.parse import JobRecord, app_state
from torchx_slurm.status_record import end_time, job_status, start_time

if TYPE_CHECKING:
    from torchx.specs.status import StatusRecord


def describe_response(app_id: str, records: list[JobRecord]) -> DescribeAppResponse:
    """The app of job ``app_id`` from its components' ``records`` and its job directory.

    The status record is :func:`torchx_slurm.status_record.job_status`'s (the one the
    quick handler answers with); this adds the roll-up of components in different
    states, the message of a FAILED app and the AppDef kept with the job.
    """
    leader = min(records, key=lambda r: r.offset)
    if any(r.array_task is not None for r in records):
        state = array_state([app_state(r.state) for r in records])
    else:
        # one component per replica: their states roll up (a failed one fails the app;
        # one still completing keeps it RUNNING)
        state = rollup(app_state(r.state) for r in records)
    job = job_status(app_id, records, state.name)
    record = job.record
    if job.array_unmapped:  # an ended array seen through sacct -c: its tasks' exit codes
        names = [s for _, replicas in record["roles"] for _, s, _, _ in replicas]
        state = array_state([AppState[n] for n in names] + [state])
        record["state"] = state.name
    roles = role_statuses(record)
    msg = record["msg"]
    if state == AppState.FAILED:
        msg = _failure(leader, record, app_id, job.state_dir)
    # the AppDef submitted (kept by schedule), else only the name Slurm has
    app, run_options = appstore.load_with_options(job.state_dir) if job.state_dir else (None, {})
    return DescribeAppResponse(
        app_id=app_id,
        state=state,
        num_restarts=record["num_restarts"],
        msg=msg,
        roles_statuses=roles,
        roles=list(app.roles) if app else [],
        metadata=dict(app.metadata) if app else {},
        name=app.name if app else job.app_name,
        run_options=run_options,
        ui_url=record["ui_url"],
        start_time=record["start_time"],
        end_time=record["end_time"],
    )


def array_state(tasks: list[AppState]) -> AppState:
    """The state of a job array from its tasks': each task is an independent replica, so
    the app runs until every task has ended (PENDING while none has started), then is
    FAILED if one failed, CANCELLED if one was cancelled, else SUCCEEDED.

    >>> array_state([AppState.SUCCEEDED, AppState.FAILED, AppState.PENDING]).name
    'RUNNING'
    >>> array_state([AppState.SUCCEEDED, AppState.CANCELLED]).name
    'CANCELLED'
    """
    if not tasks:
        return AppState.UNKNOWN
    if not all(t.is_terminal() for t in tasks):
        waiting = (AppState.PENDING, AppState.SUBMITTED, AppState.UNSUBMITTED)
        return AppState.PENDING if all(t in waiting for t in tasks) else AppState.RUNNING
    for state in (AppState.FAILED, AppState.CANCELLED):
        if state in tasks:
            return state
    return AppState.SUCCEEDED


def list_entries(ended: Iterable[JobRecord], queued: Iterable[JobRecord]) -> list[ListAppResponse]:
    """One entry per job, from accounting's records (``ended``) and the queue's, newest first.

    Each job is its leader's record (a job array: its tasks' states as
    :func:`array_state` rolls them up); where both know a job, the queue knows best
    what is still there.
    """
    ended, queued = list(ended), list(queued)
    found = leaders(ended)
    found.update(leaders(queued))
    # a job array's tasks, each as the queue (else accounting) last saw it
    tasks: dict[str, dict[int, JobRecord]] = {}
    for rec in (*ended, *queued):
        if rec.array_task is not None:
            tasks.setdefault(rec.job_id, {})[rec.array_task] = rec
    apps = []
    for job_id, rec in found.items():
        parsed = split_name(rec.name)
        records = list(tasks[job_id].values()) if job_id in tasks else [rec]
        if job_id in tasks:
            state = array_state([app_state(r.state) for r in records])
        else:
            state = app_state(rec.state)
        apps.append(
            ListAppResponse(
                app_id=job_id,
                state=state,
                name=parsed[0] if parsed else rec.name,
                start_time=start_time(records, state.name),
                end_time=end_time(records, state.name),
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


def _failure(leader: JobRecord, record: StatusRecord, app_id: str, state_dir: str) -> str:
    """Why the app FAILED: Slurm's reason, the exit code, what was not recorded, and
    Slurm's own errors from the job's output (``slurm-<id>.out``)."""
    msg = leader.reason or ""
    parts = [msg] if msg else []
    if leader.exit_code:
        parts = [
            f"{msg} (exit code {leader.exit_code})" if msg else f"exit code {leader.exit_code}"
        ]
    unrecorded = [
        f"{role}/{k}"
        for role, replicas in record["roles"]
        for k, _, code, _ in replicas
        if code is None
    ]
    if unrecorded and state_dir:
        parts.append(
            f"no exit code recorded for {', '.join(unrecorded)} in {state_dir} (the job "
            "directory full, not writable or deleted?)"
        )
    parts.extend(slurm_errors(leader.work_dir, app_id))
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
