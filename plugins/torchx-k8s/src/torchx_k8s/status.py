"""An app's status from its object and its pods, as the API returns them (plain dicts).

``describe`` reads two things, whatever the number of replicas: the custom object
(its ``status``, written by the Volcano or JobSet controller) and one list of the
app's pods by label selector. :func:`app_status` turns them into the contract's
answer; nothing here talks to the API, so every rule is tested with recorded answers.

The app's state comes from the object:

* Volcano's ``status.state.phase``: ``Pending`` -> PENDING; ``Running``,
  ``Restarting``, ``Completing``, ``Terminating``, ``Aborting`` -> RUNNING;
  ``Completed`` -> SUCCEEDED; ``Failed``, ``Terminated`` -> FAILED; ``Aborted`` ->
  CANCELLED (``cancel`` asks for it). Restarts: ``status.retryCount``, at most
  ``maxRetry - 1`` (Volcano counts the restart it refuses when failing the job).
* JobSet's ``status.terminalState`` / conditions ``Completed`` and ``Failed``;
  ``spec.suspend`` (``cancel`` sets it) -> CANCELLED; else RUNNING once a replicated
  job is ready or done (``replicatedJobsStatus``) or a pod runs, PENDING before. Restarts: ``status.restarts``.
* An AppWrapper's ``status.state`` (v1beta1) or ``status.phase`` (v1beta2), then
  corrected from its pods: :mod:`torchx_k8s.awstatus`.
* No status yet (no controller has seen the object): PENDING, saying so.

Each replica's state comes from its newest pod (pod phase; a container's exit code and
restarts), and the reason a pod cannot start goes into ``msg``: the scheduler's
``Unschedulable`` message, an image that cannot be pulled, a container that cannot be
created (a missing Secret of ``secret_env``).

A pod whose node stopped reporting (its kubelet stopped, the node lost) keeps the last
phase its kubelet wrote: ``Running`` says nothing any more. The node lifecycle controller
then marks the pod not ``Ready`` while ``ContainersReady`` stays as the kubelet left it
(a kubelet writes both together), so such a replica is UNKNOWN, and so is an app not yet
ended that has one (not a stale RUNNING, and not FAILED: its containers may still run),
until the node reports again.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from torchx.specs import AppState, ReplicaState, ReplicaStatus, RoleStatus
from torchx_k8s import awstatus, labels, names

VOLCANO_PHASES: Mapping[str, AppState] = {
    "Pending": AppState.PENDING,
    "Aborting": AppState.RUNNING,
    "Aborted": AppState.CANCELLED,
    "Running": AppState.RUNNING,
    "Restarting": AppState.RUNNING,
    "Completing": AppState.RUNNING,
    "Completed": AppState.SUCCEEDED,
    "Terminating": AppState.RUNNING,
    "Terminated": AppState.FAILED,
    "Failed": AppState.FAILED,
}

POD_PHASES: Mapping[str, ReplicaState] = {
    "Pending": ReplicaState.PENDING,
    "Running": ReplicaState.RUNNING,
    "Succeeded": ReplicaState.SUCCEEDED,
    "Failed": ReplicaState.FAILED,
    "Unknown": ReplicaState.UNKNOWN,
}

#: Waiting reasons of a container that will not start by itself.
STUCK_REASONS = (
    "ErrImagePull",
    "ImagePullBackOff",
    "InvalidImageName",
    "ErrImageNeverPull",
    "CreateContainerConfigError",
    "CreateContainerError",
    "CrashLoopBackOff",
)


@dataclass
class Replica:
    """What the newest pod of one replica says."""

    role_index: int
    replica: int
    pod: str
    state: ReplicaState
    hostname: str = ""
    exit_code: int | None = None
    restarts: int = 0
    #: why the pod cannot start, or how its container ended (None: nothing to say)
    problem: str | None = None
    created: str = ""


@dataclass
class AppView:
    state: AppState
    num_restarts: int
    msg: str
    replicas: list[Replica] = field(default_factory=list)
    start_time: float | None = None
    end_time: float | None = None


def _time(text: str | None) -> float | None:
    if not text:
        return None
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


#: The ``reason`` ``cancel`` writes into a Volcano Job's aborted state.
CANCEL_REASON = "TorchXCancelled"


def object_state(flavour: str, obj: Mapping[str, Any]) -> tuple[AppState, int, str]:
    """(state, restarts, message) of the app from its object alone."""
    if flavour in names.APPWRAPPER_FLAVOURS:
        return awstatus.object_state(flavour, obj)
    status = obj.get("status") or {}
    if flavour == names.JOBSET:
        restarts = int(status.get("restarts") or 0)
        conditions = {
            c.get("type"): c for c in status.get("conditions") or [] if c.get("status") == "True"
        }
        terminal = status.get("terminalState") or ""
        if terminal == "Completed" or "Completed" in conditions:
            return AppState.SUCCEEDED, restarts, ""
        if terminal == "Failed" or "Failed" in conditions:
            cond = conditions.get("Failed") or {}
            return AppState.FAILED, restarts, str(cond.get("message") or "")
        if (obj.get("spec") or {}).get("suspend"):
            return AppState.CANCELLED, restarts, "cancelled"  # suspended (spec.suspend)
        if not status:
            return AppState.PENDING, 0, "no status yet: the JobSet controller has not seen it"
        jobs = status.get("replicatedJobsStatus") or []
        if any(int(j.get("ready") or 0) + int(j.get("succeeded") or 0) > 0 for j in jobs):
            return AppState.RUNNING, restarts, ""  # some replica's pod runs (or has run)
        return AppState.PENDING, restarts, ""
    state = status.get("state") or {}
    phase = state.get("phase")
    restarts = int(status.get("retryCount") or 0)
    # Volcano counts the restart it then refuses (retryCount reaching maxRetry fails the
    # job): the restarts made are at most maxRetry - 1
    max_retry = int((obj.get("spec") or {}).get("maxRetry") or 0)
    if max_retry > 0:
        restarts = min(restarts, max_retry - 1)
    if not phase:
        return AppState.PENDING, restarts, "no status yet: the Volcano controller has not seen it"
    if state.get("reason") == CANCEL_REASON:  # torchx's own cancel: nothing more to say
        return VOLCANO_PHASES.get(phase, AppState.UNKNOWN), restarts, "cancelled"
    message = " ".join(str(x) for x in (state.get("reason"), state.get("message")) if x)
    return VOLCANO_PHASES.get(phase, AppState.UNKNOWN), restarts, message


def _container_status(pod: Mapping[str, Any]) -> Mapping[str, Any]:
    statuses = (pod.get("status") or {}).get("containerStatuses") or []
    first = (((pod.get("spec") or {}).get("containers")) or [{}])[0].get("name")
    for s in statuses:
        if s.get("name") == first:
            return dict(s)
    return dict(statuses[0]) if statuses else {}


def _node_lost(pod: Mapping[str, Any]) -> bool:
    """The pod runs on a node that stopped reporting: the node lifecycle controller made it
    not ``Ready`` (``False`` on 1.20, ``Unknown`` elsewhere) while its containers were
    ready, which no kubelet writes for a pod without readiness gates."""
    status = pod.get("status") or {}
    if status.get("phase") != "Running" or (pod.get("spec") or {}).get("readinessGates"):
        return False
    conds = {c.get("type"): c.get("status") for c in status.get("conditions") or []}
    return conds.get("Ready") == "Unknown" or (
        conds.get("Ready") == "False" and conds.get("ContainersReady") == "True"
    )


def replica_of(pod: Mapping[str, Any]) -> Replica | None:
    """The replica a pod stands for (None: not one of an app's replicas)."""
    meta = pod.get("metadata") or {}
    lab = meta.get("labels") or {}
    try:
        role_index = int(lab.get(labels.ROLE_INDEX, ""))
        replica = int(lab.get(labels.REPLICA_ID, ""))
    except ValueError:
        return None
    status = pod.get("status") or {}
    phase = status.get("phase") or "Pending"
    cs = _container_status(pod)
    spec = pod.get("spec") or {}
    hostname = spec.get("hostname") or ""
    if hostname and spec.get("subdomain"):
        hostname = f"{hostname}.{spec['subdomain']}"
    out = Replica(
        role_index=role_index,
        replica=replica,
        pod=str(meta.get("name") or ""),
        state=POD_PHASES.get(phase, ReplicaState.UNKNOWN),
        hostname=hostname,
        restarts=int(cs.get("restartCount") or 0),
        created=str(meta.get("creationTimestamp") or ""),
    )
    if meta.get("deletionTimestamp") and out.state in (ReplicaState.PENDING, ReplicaState.RUNNING):
        out.state = ReplicaState.CANCELLED if phase == "Pending" else out.state
    if _node_lost(pod):
        out.state = ReplicaState.UNKNOWN
        node = spec.get("nodeName") or "its node"
        out.problem = f"node {node} not ready: its last known phase is Running, state unknown"
        return out
    state = cs.get("state") or {}
    terminated = state.get("terminated") or (cs.get("lastState") or {}).get("terminated")
    if terminated and out.state in (ReplicaState.SUCCEEDED, ReplicaState.FAILED):
        out.exit_code = int(terminated.get("exitCode", 0))
        reason = terminated.get("reason") or ""
        if out.state == ReplicaState.FAILED:
            out.problem = f"exited with {out.exit_code}" + (f" ({reason})" if reason else "")
    elif out.state == ReplicaState.FAILED and status.get("reason"):
        out.problem = f"{status.get('reason')}: {status.get('message') or ''}".strip(": ")
    waiting = state.get("waiting") or {}
    if waiting.get("reason") in STUCK_REASONS:
        message = str(waiting.get("message") or "")
        image = str(cs.get("image") or "")
        if "Image" in waiting["reason"] and image and image not in message:
            # the kubelet's first ErrImagePull gives only the registry's answer
            message = f"image {image}: {message}".strip(": ")
        out.problem = f"{waiting['reason']}: {message}".strip(": ")
    elif phase == "Pending":
        for cond in status.get("conditions") or []:
            if cond.get("type") == "PodScheduled" and cond.get("status") == "False":
                reason = cond.get("reason") or "not scheduled"
                out.problem = f"{reason}: {cond.get('message') or ''}".strip(": ")
    return out


def newest_replicas(pods: Sequence[Mapping[str, Any]]) -> dict[tuple[int, int], Replica]:
    """Per (role index, replica), the replica of its newest pod (a restart makes a new one)."""
    found: dict[tuple[int, int], Replica] = {}
    for pod in pods:
        r = replica_of(pod)
        if r is None:
            continue
        key = (r.role_index, r.replica)
        if key not in found or r.created >= found[key].created:
            found[key] = r
    return found


def app_status(
    flavour: str,
    obj: Mapping[str, Any],
    pods: Sequence[Mapping[str, Any]],
    roles: Sequence[tuple[str, int]],
) -> tuple[AppView, list[RoleStatus]]:
    """The app's view and its roles' statuses.

    ``roles``: (name, replicas) of each role, in order (from the AppDef the object
    carries, or from the pods of an app made elsewhere). A replica with no pod yet is
    PENDING (the controller makes pods after the object); once the app has ended it
    takes the app's state.
    """
    state, restarts, msg = object_state(flavour, obj)
    found = newest_replicas(pods)
    if flavour in names.APPWRAPPER_FLAVOURS:
        expected = [(i, k) for i, (_, count) in enumerate(roles) for k in range(count)]
        state = awstatus.from_pods(
            flavour,
            obj,
            state,
            restarts,
            [found[key].state for key in expected if key in found],
            len(expected),
        )
    if state == AppState.PENDING and any(r.state == ReplicaState.RUNNING for r in found.values()):
        state = AppState.RUNNING
    if not state.is_terminal() and any(r.state == ReplicaState.UNKNOWN for r in found.values()):
        state = AppState.UNKNOWN  # a replica's node stopped reporting (see the module doc)
    # the replicas stopped because another failed (AppWrappers: awstatus.STOPPED)
    stopped = (
        awstatus.stopped_replicas(obj) if flavour in names.APPWRAPPER_FLAVOURS else frozenset()
    )
    problems: list[str] = []
    statuses: list[RoleStatus] = []
    for index, (role, count) in enumerate(roles):
        replicas: list[ReplicaStatus] = []
        for k in range(count):
            r = found.get((index, k))
            if r is None:
                rstate = state if state.is_terminal() else ReplicaState.PENDING
                if (index, k) in stopped:
                    rstate = ReplicaState.CANCELLED
                replicas.append(ReplicaStatus(id=k, state=rstate, role=role, hostname=""))
                continue
            if r.problem and r.state != ReplicaState.SUCCEEDED and (index, k) not in stopped:
                problems.append(f"{role}/{k} ({r.pod}): {r.problem}")
            rstate = r.state
            if state == AppState.CANCELLED and not rstate.is_terminal():
                rstate = ReplicaState.CANCELLED
            if (index, k) in stopped:
                rstate = ReplicaState.CANCELLED  # however it ended once stopped
            replicas.append(
                ReplicaStatus(
                    id=k,
                    state=rstate,
                    role=role,
                    hostname=r.hostname,
                    exit_code=r.exit_code,
                )
            )
        statuses.append(RoleStatus(role=role, replicas=replicas))
    if problems:
        shown = "; ".join(problems[:3])
        more = f"; and {len(problems) - 3} more" if len(problems) > 3 else ""
        msg = f"{msg}; {shown}{more}" if msg else f"{shown}{more}"
    if stopped and state == AppState.FAILED:
        msg = (
            f"{msg}; its other replicas were stopped" if msg else "its other replicas were stopped"
        )
    meta = obj.get("metadata") or {}
    start = _time(meta.get("creationTimestamp"))
    end = None
    if state.is_terminal():
        ends = [_time(_finished(p)) for p in pods]
        known = [e for e in ends if e is not None]
        end = max(known) if known else None
    view = AppView(state=state, num_restarts=restarts, msg=msg, start_time=start, end_time=end)
    view.replicas = list(found.values())
    return view, statuses


def podgroup_problem(podgroup: Mapping[str, Any] | None) -> str:
    """Why Volcano's scheduler does not place a job: its PodGroup's ``Unschedulable``
    condition (``""``: none, or no PodGroup).

    >>> podgroup_problem({"metadata": {"name": "a"}, "status": {"conditions": [{"type":
    ...     "Unschedulable", "status": "True", "reason": "NotEnoughResources", "message":
    ...     "1/0 tasks in gang unschedulable: pod group is not ready, 1 minAvailable"}]}})
    'PodGroup a: Unschedulable (NotEnoughResources): 1/0 tasks in gang unschedulable: pod group is not ready, 1 minAvailable'
    """
    if not podgroup:
        return ""
    for cond in (podgroup.get("status") or {}).get("conditions") or []:
        if cond.get("type") == "Unschedulable" and cond.get("status") == "True":
            name = (podgroup.get("metadata") or {}).get("name")
            why = f" ({cond['reason']})" if cond.get("reason") else ""
            return f"PodGroup {name}: Unschedulable{why}: {cond.get('message') or ''}".strip(": ")
    return ""


def _finished(pod: Mapping[str, Any]) -> str | None:
    cs = _container_status(pod)
    terminated = (cs.get("state") or {}).get("terminated") or {}
    value = terminated.get("finishedAt")
    return str(value) if value else None


def roles_from_pods(pods: Sequence[Mapping[str, Any]]) -> list[tuple[str, int]]:
    """(role name, replicas) from the pods' labels, for an app whose object has no AppDef."""
    seen: dict[int, tuple[str, int]] = {}
    for pod in pods:
        lab = (pod.get("metadata") or {}).get("labels") or {}
        try:
            index = int(lab.get(labels.ROLE_INDEX, ""))
            k = int(lab.get(labels.REPLICA_ID, ""))
        except ValueError:
            continue
        name, count = seen.get(index, (str(lab.get(labels.ROLE_NAME, "")), 0))
        seen[index] = (name, max(count, k + 1))
    return [seen[i] for i in sorted(seen)]
