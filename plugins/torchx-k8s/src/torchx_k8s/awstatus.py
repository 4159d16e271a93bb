"""An AppWrapper's state, as its controller writes it, in TorchX terms (plain dicts in, no API).

:mod:`torchx_k8s.status` calls :func:`object_state` for the ``kubernetes_mcad``
flavours, then corrects it from the pods (:func:`from_pods`): an AppWrapper's
controller says little about its pods (MCAD never fails an app it does not monitor, and
both controllers report success or failure a grace period after the pods did).

``v1beta1`` (MCAD) ``status.state``:

========================= ============ ================================================
state                     app          note
========================= ============ ================================================
(none yet)                PENDING      the controller has not seen it
``Pending``               PENDING      queued, or requeued after a failure
``Running``               RUNNING      ``step`` ``creating``/``created``/``deleting``
``RunningHoldCompletion`` RUNNING      (MCAD 1)
``Completed``             SUCCEEDED
``Failed``                FAILED
``Deleted``               CANCELLED    (MCAD 1: deleted by someone)
========================= ============ ================================================

Restarts: ``status.restarts`` (MCAD 2) or ``status.numberOfRequeueings`` (MCAD 1).

``v1beta2`` (the AppWrapper controller) ``status.phase``: none yet, ``Suspended``
(waiting for Kueue's admission), ``Resuming`` (its objects being made) and
``Suspending`` (Kueue preempting it) -> PENDING; ``Running`` and ``Resetting`` (being
restarted) -> RUNNING; ``Succeeded`` -> SUCCEEDED; ``Failed`` -> FAILED;
``Terminating`` (being deleted) -> CANCELLED. Restarts: ``status.resettingCount``.

Either version: the annotation ``torchx.pytorch.org/cancelled`` (``cancel`` writes it)
makes the app CANCELLED whatever the controller says. ``torchx.pytorch.org/stopped``
(written when a failed replica had the app's others stopped: neither controller stops
them at once) names those replicas (``ROLE_INDEX/REPLICA``, comma-separated): they read
CANCELLED.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from torchx.schedulers.helpers import labels
from torchx.specs import AppState, ReplicaState
from torchx_k8s import names

#: The annotation ``cancel`` puts on an AppWrapper (its value: when).
CANCELLED = labels.CANCELLED
RETRY_LIMIT = "workload.codeflare.dev.appwrapper/retryLimit"
#: The v1beta2 controller's retries when the annotation is absent.
DEFAULT_RETRY_LIMIT = 3

V1BETA1_STATES: Mapping[str, AppState] = {
    "Pending": AppState.PENDING,
    "Running": AppState.RUNNING,
    "RunningHoldCompletion": AppState.RUNNING,
    "Completed": AppState.SUCCEEDED,
    "Failed": AppState.FAILED,
    "Deleted": AppState.CANCELLED,
}
V1BETA2_PHASES: Mapping[str, AppState] = {
    "Suspended": AppState.PENDING,
    "Resuming": AppState.PENDING,
    "Suspending": AppState.PENDING,
    "Running": AppState.RUNNING,
    "Resetting": AppState.RUNNING,
    "Succeeded": AppState.SUCCEEDED,
    "Failed": AppState.FAILED,
    "Terminating": AppState.CANCELLED,
}


#: The annotation naming the replicas stopped because another failed (see the docstring).
STOPPED = labels.PREFIX + "stopped"


def stopped_replicas(obj: Mapping[str, Any]) -> frozenset[tuple[int, int]]:
    """The (role index, replica) pairs the AppWrapper's ``STOPPED`` annotation names."""
    text = ((obj.get("metadata") or {}).get("annotations") or {}).get(STOPPED) or ""
    out = set()
    for part in str(text).split(","):
        index, sep, k = part.strip().partition("/")
        if sep and index.isdigit() and k.isdigit():
            out.add((int(index), int(k)))
    return frozenset(out)


def stopped_value(replicas: Sequence[tuple[int, int]]) -> str:
    """The ``STOPPED`` annotation naming ``replicas``."""
    return ",".join(f"{i}/{k}" for i, k in sorted(replicas))


def is_cancelled(obj: Mapping[str, Any]) -> bool:
    """Did ``cancel`` mark the AppWrapper?"""
    return CANCELLED in ((obj.get("metadata") or {}).get("annotations") or {})


def _int(value: Any, default: int = 0) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return default


def retry_limit(flavour: str, obj: Mapping[str, Any]) -> int | None:
    """How many restarts the controller makes of this AppWrapper (None: no limit)."""
    if flavour == names.APPWRAPPER_V1BETA2:
        annotations = (obj.get("metadata") or {}).get("annotations") or {}
        return _int(annotations.get(RETRY_LIMIT), DEFAULT_RETRY_LIMIT)
    scheduling = (obj.get("spec") or {}).get("schedulingSpec") or {}
    if _int(scheduling.get("minAvailable")) < 0:
        return 0  # not monitored: never requeued
    limit = _int((scheduling.get("requeuing") or {}).get("maxNumRequeuings"))
    return limit if limit > 0 else None  # MCAD: 0 means no limit


def _message(flavour: str, status: Mapping[str, Any]) -> str:
    parts: list[str] = []
    if flavour == names.APPWRAPPER_V1BETA2:
        for cond in status.get("conditions") or []:
            if cond.get("type") == "Unhealthy" and cond.get("status") == "True":
                parts.append(
                    " ".join(str(x) for x in (cond.get("reason"), cond.get("message")) if x)
                )
        return "; ".join(p for p in parts if p)
    if status.get("message"):
        parts.append(str(status["message"]))
    conditions = [c for c in status.get("conditions") or [] if c.get("reason") or c.get("message")]
    if conditions:
        last = conditions[-1]
        parts.append(" ".join(str(x) for x in (last.get("reason"), last.get("message")) if x))
    transitions = [t for t in status.get("transitions") or [] if t.get("reason")]
    if transitions and not parts:
        parts.append(str(transitions[-1]["reason"]))
    return "; ".join(" ".join(p.split()) for p in parts if p)


def object_state(flavour: str, obj: Mapping[str, Any]) -> tuple[AppState, int, str]:
    """(state, restarts, message) of the app from its AppWrapper alone."""
    status = obj.get("status") or {}
    if flavour == names.APPWRAPPER_V1BETA2:
        restarts = _int(status.get("resettingCount", status.get("retries")))
        phase = status.get("phase") or ""
        table = V1BETA2_PHASES
    else:
        restarts = _int(status.get("restarts", status.get("numberOfRequeueings")))
        phase = status.get("state") or ""
        table = V1BETA1_STATES
    if is_cancelled(obj):
        state = table.get(phase)
        if state in (AppState.SUCCEEDED, AppState.FAILED):
            return state, restarts, ""  # ended before the cancel took hold
        return AppState.CANCELLED, restarts, "cancelled"
    if not phase:
        return (
            AppState.PENDING,
            restarts,
            "no status yet: the AppWrapper controller has not seen it",
        )
    message = _message(flavour, status)
    if flavour != names.APPWRAPPER_V1BETA2 and status.get("step") == "deleting":
        message = message or "the controller is removing the app's objects"
    return table.get(phase, AppState.UNKNOWN), restarts, message


def from_pods(
    flavour: str,
    obj: Mapping[str, Any],
    state: AppState,
    restarts: int,
    replica_states: Sequence[ReplicaState],
    expected: int,
) -> AppState:
    """The app's state corrected by its replicas' (newest pods') states.

    ``expected``: the app's number of replicas. Every replica SUCCEEDED -> SUCCEEDED; a
    FAILED replica with no restart left -> FAILED (a restart still to come keeps it
    RUNNING); a running replica makes a PENDING app RUNNING.
    """
    if state.is_terminal():
        return state
    if (
        expected
        and len(replica_states) == expected
        and all(s == ReplicaState.SUCCEEDED for s in replica_states)
    ):
        return AppState.SUCCEEDED
    if any(s == ReplicaState.FAILED for s in replica_states):
        limit = retry_limit(flavour, obj)
        if limit is not None and restarts >= limit:
            return AppState.FAILED
    if state == AppState.PENDING and any(s == ReplicaState.RUNNING for s in replica_states):
        return AppState.RUNNING
    return state
