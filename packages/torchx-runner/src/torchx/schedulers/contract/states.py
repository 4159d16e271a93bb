"""From a backend's job and task states to the :class:`~torchx.specs.AppState` of the contract.

Every scheduler answers ``describe`` with an ``AppState`` for the app and one per
replica. These helpers hold the rules, so that no plugin writes its own:

* :func:`to_app_state` maps a backend's state through the plugin's table. A state the
  table does not know (one the backend added after the plugin was written) is
  ``UNKNOWN``, never ``FAILED``: a job is never reported failed because its plugin is
  older than its backend.

  >>> from torchx.specs import AppState
  >>> BATCH = {"RUNNABLE": AppState.PENDING, "RUNNING": AppState.RUNNING}
  >>> to_app_state("RUNNING", BATCH), to_app_state("HIBERNATING", BATCH)
  (<AppState.RUNNING: 3>, <AppState.UNKNOWN: 7>)

* :func:`rollup` gives the app's state from its replicas' states, for backends that do
  not report one for the whole app (a set of pods, of containers). The rules, first
  match wins:

  1. any replica FAILED: the app is FAILED. A partial failure is a failure: an app of
     several replicas where one fails has failed, even while the others still run
     (the scheduler stops them, as a distributed job cannot go on without one of its
     ranks). A backend that restarts replicas (``Role.max_retries``) reports a replica
     it will restart as PENDING or RUNNING, not FAILED;
  2. any CANCELLED: CANCELLED;
  3. any RUNNING: RUNNING;
  4. any UNKNOWN: UNKNOWN (nothing is known to fail, nothing known to run: never guessed);
  5. all SUCCEEDED: SUCCEEDED;
  6. some SUCCEEDED, the others not started: RUNNING (the app has started, not ended);
  7. else the least advanced of PENDING, SUBMITTED, UNSUBMITTED. No replica: UNKNOWN.

  >>> rollup([AppState.SUCCEEDED, AppState.FAILED, AppState.RUNNING])
  <AppState.FAILED: 5>
  >>> rollup([AppState.SUCCEEDED, AppState.SUCCEEDED])
  <AppState.SUCCEEDED: 4>

* :func:`settle_cancelled` is for backends that report a cancelled job as failed (AWS
  Batch ends a terminated job as ``FAILED``). The scheduler must report CANCELLED for an
  app that was cancelled, from any process: it records the cancel *on the backend*
  when it cancels (AWS Batch: the ``reason`` given to ``TerminateJob``, which
  ``DescribeJobs`` returns as ``statusReason``; a tag or a label elsewhere) and, in
  ``describe``, derives from that record whether the app was cancelled.
  :data:`CANCEL_REASON` is a reason to record that is recognisable later.

  >>> settle_cancelled(AppState.FAILED, cancelled=True)
  <AppState.CANCELLED: 6>
  >>> settle_cancelled(AppState.SUCCEEDED, cancelled=True)  # it ended before the cancel
  <AppState.SUCCEEDED: 4>

* :func:`replicas_in_app_state` is the documented fallback of a backend without
  per-replica status (``Capability.REPLICA_STATUS``, e.g. SageMaker, which reports one
  state per training job): every replica of each role is reported in the app's state,
  with no exit code.

* :func:`role_statuses` makes the roles of a ``describe`` answer from a plain status
  record (``torchx.specs.status.StatusRecord``, what a scheduler's pure status
  parser gives its quick handler too), so that the record is turned into attrs types
  in one place.

  >>> record = {"roles": [("trainer", [(0, "FAILED", 1, "node-0")])]}
  >>> role_statuses(record, replica_error=lambda role, k: f"{role}/{k} ran out of memory")
  [RoleStatus(role='trainer', replicas=[ReplicaStatus(id=0, state=<AppState.FAILED: 5>, role='trainer', hostname='node-0', structured_error_msg='trainer/0 ran out of memory', exit_code=1)])]
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING

from torchx.specs.api import NONE, AppState, ReplicaStatus, RoleStatus

if TYPE_CHECKING:
    from torchx.specs.status import StatusRecord

__all__ = [
    "CANCEL_REASON",
    "replicas_in_app_state",
    "role_statuses",
    "rollup",
    "settle_cancelled",
    "to_app_state",
]

#: A cancel's reason a scheduler records on the backend (see :func:`settle_cancelled`).
CANCEL_REASON = "cancelled by torchx"

#: The rules of :func:`rollup` 1-4: the first state present wins.
_DOMINANT = (AppState.FAILED, AppState.CANCELLED, AppState.RUNNING, AppState.UNKNOWN)
_NOT_STARTED = (AppState.PENDING, AppState.SUBMITTED, AppState.UNSUBMITTED)


def to_app_state(native: str, table: Mapping[str, AppState]) -> AppState:
    """The AppState ``table`` gives the backend's state ``native``; UNKNOWN if it has none."""
    return table.get(native, AppState.UNKNOWN)


def rollup(states: Iterable[AppState]) -> AppState:
    """The app's state from its replicas' states, by the rules of the module docstring."""
    present = set(states)
    if not present:
        return AppState.UNKNOWN
    for state in _DOMINANT:
        if state in present:
            return state
    if present == {AppState.SUCCEEDED}:
        return AppState.SUCCEEDED
    if AppState.SUCCEEDED in present:
        return AppState.RUNNING
    for state in _NOT_STARTED:
        if state in present:
            return state
    return AppState.UNKNOWN  # not reached: every AppState is handled above


def settle_cancelled(state: AppState, cancelled: bool) -> AppState:
    """CANCELLED for an app the backend ended as FAILED after it was ``cancelled``.

    Any other state is kept: an app that succeeded, or is still stopping, before the
    cancel took effect is reported as it is.
    """
    if cancelled and state == AppState.FAILED:
        return AppState.CANCELLED
    return state


def replicas_in_app_state(roles: Mapping[str, int], state: AppState) -> list[RoleStatus]:
    """Role statuses for a backend without per-replica status: each replica in ``state``.

    ``roles`` maps each role's name to its number of replicas (from the submitted
    AppDef); hosts are unknown (``""``) and exit codes None.
    """
    return [
        RoleStatus(
            role,
            [ReplicaStatus(id=k, state=state, role=role, hostname="") for k in range(n)],
        )
        for role, n in roles.items()
    ]


def role_statuses(
    record: StatusRecord, replica_error: Callable[[str, int], str] | None = None
) -> list[RoleStatus]:
    """Each role's status, with its replicas', from a plain status record's ``roles``.

    The record's states are ``AppState`` names (one it does not name is ``UNKNOWN``, as
    :func:`to_app_state` has it). ``replica_error(role, replica_id)`` gives a FAILED
    replica's ``structured_error_msg``; without it, or for any other replica, there is
    none (``NONE``).
    """
    return [
        RoleStatus(
            role,
            [
                ReplicaStatus(
                    id=k,
                    state=to_app_state(name, AppState.__members__),
                    role=role,
                    hostname=host,
                    exit_code=code,
                    structured_error_msg=(
                        replica_error(role, k)
                        if replica_error is not None and name == "FAILED"
                        else NONE
                    ),
                )
                for k, name, code, host in replicas
            ],
        )
        for role, replicas in record["roles"]
    ]
