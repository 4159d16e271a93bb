"""What LSF answered, as TorchX states and a ``DescribeAppResponse``: no LSF call here.

The backend (:mod:`torchx_lsf.backend`) gives the app's jobs as parsed records
(:mod:`torchx_lsf.parse`, one per replica); this module rolls their states up with the
cancel mark the app keeps in its private directory (:mod:`torchx_lsf.jobdir`), and makes
the contract's answers from the plain status record :mod:`torchx_lsf.status_record`
reads (the quick handler's reading too) and the AppDef the app keeps.

Rules: the replicas' states roll up (one failed fails the app); a cancelled app is
RUNNING while its jobs stop and CANCELLED once they have (a replica that ended other
than by exiting 0 then reads CANCELLED); start and end times are the first start and,
once the app has ended, the last finish.
"""

from __future__ import annotations

from collections.abc import Iterable

from torchx.schedulers.contract.api import DescribeAppResponse, ListAppResponse
from torchx.schedulers.contract.states import role_statuses, rollup, settle_cancelled
from torchx.schedulers.helpers import appstore
from torchx.schedulers.helpers.ids import is_valid_app_id
from torchx.specs import AppState
from torchx_lsf.parse import JobRecord
from torchx_lsf.status_record import app_record, with_recorded_exit
from torchx_lsf.status_record import times as _times


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
    """The app ``app_id`` from its jobs, its private directory and its cancel mark: the
    status record :func:`torchx_lsf.status_record.app_record` reads (the quick handler's
    too), with the AppDef the app keeps."""
    records = [with_recorded_exit(rec, app_dir) for rec in records]
    state = app_state(records, cancelled)
    record = app_record(app_id, records, app_dir, state.name)
    app, run_options = appstore.load_with_options(app_dir) if app_dir else (None, {})
    return DescribeAppResponse(
        run_options=run_options,
        app_id=app_id,
        state=state,
        num_restarts=record["num_restarts"],
        msg=record["msg"],
        roles_statuses=role_statuses(record),
        roles=list(app.roles) if app else [],
        metadata=dict(app.metadata) if app else {},
        name=app.name if app else "",
        ui_url=record["ui_url"],
        start_time=record["start_time"],
        end_time=record["end_time"],
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
    return _times(records, state.name)
