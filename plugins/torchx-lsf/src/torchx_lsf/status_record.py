"""An app's LSF jobs to its plain status record: the one reading both paths use.

``LsfScheduler.describe`` (through :func:`torchx_lsf.status.describe_response`) and the
quick handler (:mod:`torchx_lsf.quick`) read the same thing: ``bjobs``' records of the
app's jobs (:mod:`torchx_lsf.parse`) and what its replicas left in the app's directory.
:func:`app_record` turns them into the plain status record of ``torchx.specs.status``
(what ``torchx status`` prints); the scheduler makes its ``DescribeAppResponse`` from
that record, and the quick handler answers with it as it is. So there is one reading
of an app, not one per path.

It is pure (it reads the app's directory, never asks LSF) and imports the standard
library and :mod:`torchx_lsf.parse` only, never attrs or the spec types. States are
``AppState`` *names* here. Rolling the replicas' states up into the app's state is
the scheduler's (``torchx.schedulers.contract.states``); the quick handler answers only
when they agree, and declines otherwise.
"""

from __future__ import annotations

import os

import torchx_lsf.parse  # its JobRecord by full name: the docs know another (torchx_slurm's)
from torchx_lsf.appdir import restarts
from torchx_lsf.parse import JobRecord, replica_exit_code

TYPE_CHECKING = False  # not the typing module: its import costs the quick handler milliseconds
if TYPE_CHECKING:
    from torchx.specs.status import ReplicaRecord, StatusRecord

_ENDED = ("SUCCEEDED", "FAILED", "CANCELLED")
#: The message of an app whose jobs wait for LSF.
PENDING_MSG = "waiting for LSF to dispatch the jobs (bjobs -p says why)"


def with_recorded_exit(rec: JobRecord, app_dir: str) -> JobRecord:
    """``rec``, EXIT with the code its script recorded if it failed.

    A failed replica's script records its program's exit code (``ROLE-K.exit``) before
    it ends the app's other replicas: until its own job ends, that file says how it
    ended; once it has, the file holds the program's own code where the job's is not
    (an app with retries whose program exits with the requeue value: the job exits 1).
    """
    if rec.state not in ("RUN", "EXIT") or not app_dir or rec.replica is None:
        return rec
    role, k = rec.replica
    try:
        with open(os.path.join(app_dir, f"{role}-{k}.exit"), encoding="utf-8") as f:
            text = f.read(32).strip()
    except OSError:
        return rec
    if not text.lstrip("-").isdigit() or int(text) == 0:
        return rec
    return rec.evolve(state="EXIT", exit_code=int(text))


def app_record(
    app_id: str, records: list[torchx_lsf.parse.JobRecord], app_dir: str, state: str
) -> StatusRecord:
    """The status record of app ``app_id`` in ``state`` (its jobs' states rolled up),
    from its jobs ``records`` (recorded exits applied: :func:`with_recorded_exit`) and
    its directory ``app_dir`` (``""`` when not found).

    Rules: a replica's state is its job's; once the app is CANCELLED, a replica that did
    not succeed was cancelled; the restarts are those the app's directory counts. The message names the failed replicas of a FAILED app
    (with their LSF job and exit code, and where the logs are) and says why a PENDING one
    waits.
    """
    roles: dict[str, list[ReplicaRecord]] = {}
    failed = []
    for rec in sorted(records, key=lambda r: r.replica or ("", 0)):
        role, rid = rec.replica or ("", 0)
        rstate = rec.state_name
        if state == "CANCELLED" and rstate != "SUCCEEDED":
            rstate = "CANCELLED"
        exit_code = replica_exit_code(rec)
        if rstate == "FAILED":
            failed.append(f"{role}/{rid} (LSF job {rec.job_id}, exit code {exit_code})")
        roles.setdefault(role, []).append((rid, rstate, exit_code, rec.exec_host))
    msg = ""
    if state == "FAILED" and failed:
        msg = f"failed: {', '.join(failed)}"
        if app_dir:
            msg += f"; logs in {app_dir}"
    elif state == "PENDING":
        msg = PENDING_MSG
    start, end = times(records, state)
    return {
        "state": state,
        "num_restarts": restarts(app_dir),
        "msg": msg,
        "ui_url": f"file://{app_dir}" if app_dir else None,
        "start_time": start,
        "end_time": end,
        "roles": list(roles.items()),
    }


def times(records: list[JobRecord], state: str) -> tuple[float | None, float | None]:
    """When the app's first replica started, and (once it ended) its last one finished."""
    starts = [r.start_time for r in records if r.start_time is not None]
    ends = [r.finish_time for r in records if r.finish_time is not None]
    start = min(starts) if starts else None
    end = max(ends) if ends and state in _ENDED else None
    return start, end
