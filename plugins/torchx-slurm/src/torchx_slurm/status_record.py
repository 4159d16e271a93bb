"""A Slurm job's records to the app's plain status record: the one parser both paths use.

``SlurmScheduler.describe`` (through :func:`torchx_slurm.status.describe_response`)
and the quick handler (:mod:`torchx_slurm.quick`) read the same job: ``squeue``'s
records (for the scheduler also ``sacct``'s, once the job has left the queue) and what
the job script left in the job's directory. :func:`job_status` turns them into the
plain status record of ``torchx.specs.status`` (what ``torchx status`` prints); the
scheduler makes its ``DescribeAppResponse`` from that record, and the quick handler
answers with it as it is. So there is one reading of a job, not one per path.

It is pure (it reads the job's directory, never asks Slurm) and imports the standard
library and the plugin's light modules only (:mod:`torchx_slurm.parse`,
:mod:`torchx_slurm.jobfiles`), never attrs or the spec types: the quick handler
exists to answer without them. States are ``AppState`` *names* here.

What is left to :mod:`torchx_slurm.status`: rolling up components in different
states (the quick handler declines those), the message of a FAILED app (it reads
Slurm's errors from the job's output), and the AppDef kept with the job.
"""

from __future__ import annotations

import os

from torchx_slurm.jobfiles import ARRAY_MARK, STATE_DIR, exit_files, read_int, split_name
from torchx_slurm.parse import STATE_NAMES, JobRecord

TYPE_CHECKING = False  # not the typing module: its import costs the quick handler milliseconds
if TYPE_CHECKING:
    from torchx.specs.status import ReplicaRecord, StatusRecord

_NOT_STARTED = ("PENDING", "SUBMITTED", "UNSUBMITTED")
_ENDED = ("SUCCEEDED", "FAILED", "CANCELLED")


class JobStatus:
    """What the records of one job say: ``record``, and what only the scheduler uses.

    ``app_name`` is the name Slurm has for the app; ``state_dir`` the job's own
    directory (``""`` without a work dir); ``unseen`` the replicas whose exit code the
    job script recorded though no record shows them (the job-completion file, ``sacct
    -c``, has a record for the leader only): they are in ``record``, with no host.
    """

    __slots__ = ("app_name", "array_unmapped", "record", "state_dir", "unseen")

    def __init__(
        self,
        record: StatusRecord,
        app_name: str,
        state_dir: str,
        unseen: list[tuple[str, int]],
        array_unmapped: bool = False,
    ) -> None:
        self.record = record
        self.app_name = app_name
        self.state_dir = state_dir
        self.unseen = unseen
        #: a job array whose records do not say which task they are (``sacct -c``):
        #: its replicas are the exit codes its tasks recorded
        self.array_unmapped = array_unmapped


def state_name(slurm_state: str) -> str:
    """The ``AppState`` name of a normalized Slurm state (``UNKNOWN`` for one Slurm adds later)."""
    return STATE_NAMES.get(slurm_state, "UNKNOWN")


def job_status(app_id: str, records: list[JobRecord], state: str) -> JobStatus:
    """The status of job ``app_id`` from its ``records`` (one per component), in ``state``.

    ``state`` is the app's state name: the components' states rolled up (the
    scheduler's ``rollup``; the same state when they agree). ``msg`` is Slurm's reason
    for a PENDING or UNKNOWN app (why it waits; once cancelled it means nothing), else
    ``""``: the scheduler says more of a FAILED one.

    Rules: a replica's recorded exit code decides its own state; a pending job has not
    started its current run, so exit codes on disk are of the run before (a requeue),
    not of this one; after a cancel, replicas stopped by it (exited non-zero) are
    CANCELLED.
    """
    records = sorted(records, key=lambda r: (r.offset, r.array_task or 0))
    leader = records[0]
    job_dir = leader.work_dir
    state_dir = os.path.join(job_dir, STATE_DIR, app_id) if job_dir else ""
    restarts = read_int(os.path.join(state_dir, "restarts")) if state_dir else None
    if restarts is None:
        restarts = leader.restarts or 0
    exits = (
        {} if state == "PENDING" else {(role, k): code for role, k, code in exit_files(state_dir)}
    )
    roles: dict[str, list[ReplicaRecord]] = {}
    app_name = ""
    # a job array's task records without their index (the job-completion file): which
    # replica they are is unknown, the exit codes its tasks recorded say it all
    unmapped = (
        bool(state_dir)
        and all(r.array_task is None for r in records)
        and os.path.exists(os.path.join(state_dir, ARRAY_MARK))
    )
    for rec in records:
        parsed = split_name(rec.name)
        if unmapped:
            app_name = app_name or (parsed[0] if parsed else rec.name)
            continue
        if parsed is None:
            app_name = app_name or rec.name
            role, replica_id = rec.name or "job", rec.offset
        else:
            app_name = app_name or parsed[0]
            _, role, replica_id = parsed
        if rec.array_task is not None:  # a job array's task: its index is the replica's
            replica_id = rec.array_task
        exit_code = exits.pop((role, replica_id), None)
        if exit_code is not None:
            rstate = "SUCCEEDED" if exit_code == 0 else "FAILED"
            if rstate == "FAILED" and rec.array_task is not None and rec.state == "CANCELLED":
                rstate = "CANCELLED"  # this task alone was cancelled: its exit is the cancel's
        else:
            rstate = state_name(rec.state)
            if len(records) == 1 or rec.array_task is not None:
                exit_code = rec.exit_code
        roles.setdefault(role, []).append((replica_id, rstate, exit_code, rec.nodes))
    # The job-completion file (sacct -c) has a record for the leader only: the other
    # replicas are the ones whose exit code the script recorded.
    for (role, replica_id), exit_code in exits.items():
        rstate = "SUCCEEDED" if exit_code == 0 else "FAILED"
        roles.setdefault(role, []).append((replica_id, rstate, exit_code, ""))
    out = []
    for role, replicas in roles.items():
        replicas.sort(key=lambda r: r[0])
        if state == "CANCELLED":
            # replicas stopped by the cancel exited non-zero: they were cancelled
            replicas = [
                (k, s if s == "SUCCEEDED" else "CANCELLED", code, host)
                for k, s, code, host in replicas
            ]
        out.append((role, replicas))
    record: StatusRecord = {
        "state": state,
        "num_restarts": restarts,
        "msg": (leader.reason or "") if state in ("PENDING", "UNKNOWN") else "",
        "ui_url": f"file://{job_dir}" if job_dir else None,
        "start_time": start_time(records, state),
        "end_time": end_time(records, state),
        "roles": out,
    }
    return JobStatus(record, app_name, state_dir, list(exits), unmapped)


def start_time(records: list[JobRecord], state: str) -> float | None:
    """When the job's first component started; None while pending (Slurm's start time of
    a pending job is the time it expects, not one that happened)."""
    if state in _NOT_STARTED:
        return None
    times = [r.start_time for r in records if r.start_time is not None]
    return min(times) if times else None


def end_time(records: list[JobRecord], state: str) -> float | None:
    """When the job's last component ended; None until the app has ended (the end time of
    a running job is its time limit's, not one that happened)."""
    if state not in _ENDED:
        return None
    times = [r.end_time for r in records if r.end_time is not None]
    return max(times) if times else None
