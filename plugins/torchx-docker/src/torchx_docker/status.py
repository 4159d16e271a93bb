"""The engine's answers turned into an app's status: pure functions, no I/O.

The scheduler asks the engine for every container of an app in one call (the list
answer carries each container's labels, state and, in its status text, the exit
code); :func:`seen_from_list` reads one entry of that answer and :func:`app_status`
rolls them up. Only what the list cannot say needs a container's full record (an
inspect): whether a container killed with 137 was killed for memory (``OOMKilled``),
the engine's error of a dead container, how often the engine restarted a container of the ``REPLICA`` retry policy,
and the environment a failed replica ran with (``Config.Env``: what run options such as
``env`` and ``copy_env`` added, whose secrets ``torchx status`` masks in the failure's
message, which quotes the replica's stderr: ``DescribeAppResponse.env``).

Rules:

* a replica's state is its container's: ``created`` is PENDING, ``running``,
  ``restarting`` (the engine restarting it under the REPLICA policy) and ``paused``
  are RUNNING, ``exited`` is SUCCEEDED with 0 and FAILED otherwise, ``dead`` FAILED;
* after ``cancel`` (the ``cancelled`` marker), a replica that had not ended when it was
  cancelled is CANCELLED once it has, whatever its exit code (a program that exits 0
  on SIGTERM was cancelled all the same); one that had ended keeps its state;
* a replica that fails (with no restart left) fails the app, and the app's other
  replicas are stopped (:func:`siblings_to_stop`, done by ``describe``: the
  ``stopped`` marker, then a stop); those read CANCELLED, the app FAILED;
* a failed replica of the ``ROLE`` or ``APPLICATION`` policy with restarts left is
  PENDING (its restart is due: the next ``describe`` makes it), in ``list`` as in
  ``status``;
* while a restart of the ROLE or APPLICATION policy is under way (a ``restart``
  marker not yet renamed ``done``), the replicas it restarts are PENDING, not FAILED;
* one FAILED replica fails the app (:func:`torchx.schedulers.contract.states.rollup`), and the
  message names it, with ``out of memory`` when the engine says so;
* ``structured_error_msg`` is filled only where the engine knows why beyond the exit
  code (out of memory, dead, gone): a plain exit is left to the Runner, which makes the
  error from the end of the replica's stderr (the exception that ended it).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from torchx.schedulers.contract.api import DescribeAppResponse, ListAppResponse
from torchx.schedulers.contract.states import rollup
from torchx.specs import NONE, AppDef, AppState, ReplicaStatus, RetryPolicy, RoleStatus
from torchx_docker import labels

_EXITED = re.compile(r"Exited \((-?\d+)\)")
#: Version of the structured error messages (``structured_error_msg``, JSON).
ERROR_FORMAT = 1

_STATES = {
    "created": AppState.PENDING,
    "running": AppState.RUNNING,
    "restarting": AppState.RUNNING,
    "paused": AppState.RUNNING,
    "removing": AppState.UNKNOWN,
    "dead": AppState.FAILED,
}


@dataclass
class Seen:
    """One container of an app as the engine showed it."""

    id: str
    name: str
    image: str
    labels: dict[str, str]
    state: str
    exit_code: int | None = None
    #: filled in from an inspect where needed
    oom_killed: bool = False
    restart_count: int = 0
    error: str = ""
    #: when the engine created it (the list answer's ``Created``), seconds since the epoch
    created: float | None = None
    #: when it last exited (an inspect's ``State.FinishedAt``), where inspected
    finished: float | None = None
    #: the network it was made on (the list answer's ``HostConfig.NetworkMode``)
    network: str = ""
    #: the environment it runs with (an inspect's ``Config.Env``), where inspected
    env: dict[str, str] = field(default_factory=dict)

    @property
    def kind(self) -> str:
        return self.labels.get(labels.KIND, labels.KIND_REPLICA)

    @property
    def role(self) -> str:
        return self.labels.get(labels.ROLE, "")

    @property
    def replica(self) -> int:
        try:
            return int(self.labels.get(labels.REPLICA, "0"))
        except ValueError:
            return 0

    @property
    def retry_policy(self) -> str:
        return self.labels.get(labels.RETRY_POLICY, RetryPolicy.APPLICATION.value)

    @property
    def max_retries(self) -> int:
        try:
            return int(self.labels.get(labels.MAX_RETRIES, "0"))
        except ValueError:
            return 0

    @property
    def failed(self) -> bool:
        """Ended other than by exiting 0."""
        return self.state == "dead" or (self.state == "exited" and self.exit_code != 0)

    def needs_inspect(self) -> bool:
        """Whether the list answer leaves out something the status needs."""
        if self.kind != labels.KIND_REPLICA:
            return False
        if self.retry_policy == RetryPolicy.REPLICA.value and self.max_retries > 0:
            return True  # the engine's restart count
        # why it failed: 137 is SIGKILL, by the kernel's OOM killer or not; a dead
        # container has the engine's error; any other exit code says all there is
        return self.state == "dead" or (self.failed and self.exit_code == 137)


def seen_from_list(entry: Mapping[str, Any]) -> Seen:
    """A container from one entry of the engine's list answer (``GET /containers/json``)."""
    names = entry.get("Names") or ["/"]
    status = str(entry.get("Status") or "")
    match = _EXITED.search(status)
    state = str(entry.get("State") or "")
    return Seen(
        id=str(entry.get("Id", "")),
        name=str(names[0]).lstrip("/"),
        image=str(entry.get("Image", "")),
        labels=dict(entry.get("Labels") or {}),
        state=state,
        exit_code=int(match.group(1)) if match else (0 if state == "exited" else None),
        created=float(entry["Created"]) if isinstance(entry.get("Created"), int | float) else None,
        network=str((entry.get("HostConfig") or {}).get("NetworkMode") or ""),
    )


def add_inspect(seen: Seen, record: Mapping[str, Any]) -> None:
    """Fills in what only a container's full record (``GET /containers/ID/json``) says."""
    state = record.get("State") or {}
    seen.state = str(state.get("Status") or seen.state)
    if seen.state in ("exited", "dead"):
        seen.exit_code = int(state.get("ExitCode") or 0)
    seen.oom_killed = bool(state.get("OOMKilled"))
    seen.error = str(state.get("Error") or "")
    seen.restart_count = int(record.get("RestartCount") or 0)
    if seen.state in ("exited", "dead"):
        seen.finished = engine_time(str(state.get("FinishedAt") or ""))
    pairs = (str(item).partition("=") for item in (record.get("Config") or {}).get("Env") or [])
    seen.env = {name: value for name, sep, value in pairs if sep}


def engine_time(text: str) -> float | None:
    """The engine's ``2026-11-25T03:48:26.123456789Z`` as seconds since the epoch; None for
    its zero time (``0001-01-01T00:00:00Z``: never) or anything else.

    >>> engine_time("2026-11-25T03:48:26.5Z"), engine_time("0001-01-01T00:00:00Z")
    (1795578506.5, None)
    """
    from datetime import UTC, datetime

    head, dot, frac = text.rstrip("Z").partition(".")
    if not text.endswith("Z") or len(head) != 19 or head.startswith("0001"):
        return None
    try:
        when = datetime.fromisoformat(head).replace(tzinfo=UTC).timestamp()
    except ValueError:
        return None
    return when + (float("0." + frac) if dot and frac.isdigit() else 0.0)


@dataclass
class Markers:
    """What the marker containers of an app record."""

    cancelled: bool = False
    #: the app's other replicas were stopped after one failed
    stopped: bool = False
    #: replicas (``role/index``) that had ended before the first cancel or stop; None:
    #: not recorded (a marker of an earlier release: a replica that exited 0 had ended)
    ended_before: set[str] | None = None
    #: restarts of every role (APPLICATION policy): how many, and whether one is under way
    app_restarts: int = 0
    #: restarts of one role (ROLE policy), by role
    role_restarts: dict[str, int] = field(default_factory=dict)
    #: roles ("" for every role) whose restart is under way
    restarting: set[str] = field(default_factory=set)

    @property
    def num_restarts(self) -> int:
        return self.app_restarts + sum(self.role_restarts.values())


def read_markers(containers: Iterable[Seen]) -> Markers:
    """The app's markers among its containers."""
    out = Markers()
    for c in containers:
        if c.kind in (labels.KIND_CANCELLED, labels.KIND_STOPPED):
            if c.kind == labels.KIND_CANCELLED:
                out.cancelled = True
            else:
                out.stopped = True
            ended = _ended_before(c)
            if ended is not None:  # ended before every such marker: before the first
                out.ended_before = ended if out.ended_before is None else out.ended_before & ended
        elif c.kind == labels.KIND_RESTART:
            role = c.labels.get(labels.RESTART_ROLE, "")
            if role:
                out.role_restarts[role] = out.role_restarts.get(role, 0) + 1
            else:
                out.app_restarts += 1
            if not c.name.endswith("-done"):
                out.restarting.add(role)
    return out


def _ended_before(marker: Seen) -> set[str] | None:
    text = marker.labels.get(labels.ENDED_BEFORE)
    if text is None:
        return None
    try:
        return {str(k) for k in json.loads(text)}
    except (ValueError, TypeError):
        return None


def replica_key(c: Seen) -> str:
    """``role/index``: how markers name a replica."""
    return f"{c.role}/{c.replica}"


def ended_before_json(replicas: Iterable[Seen]) -> str:
    """The ``ENDED_BEFORE`` label of a marker made now: the replicas that have ended."""
    return json.dumps(sorted(replica_key(c) for c in replicas if c.state in ("exited", "dead")))


def _stopped_by_torchx(c: Seen, markers: Markers) -> bool:
    """Whether ``c`` ended because torchx stopped it (a cancel, or a sibling's failure)."""
    if not (markers.cancelled or markers.stopped) or c.state not in ("exited", "dead", "created"):
        return False
    if markers.ended_before is None:  # an earlier release's marker: exit 0 had ended
        return not (c.state == "exited" and c.exit_code == 0)
    return replica_key(c) not in markers.ended_before


def restart_due(c: Seen, markers: Markers) -> bool:
    """Whether failed replica ``c`` is to be restarted with its role (``ROLE``) or app
    (``APPLICATION``): restarts left, and nothing cancelled or stopped the app."""
    if not c.failed or c.max_retries <= 0 or markers.cancelled or markers.stopped:
        return False
    if c.retry_policy == RetryPolicy.APPLICATION.value:
        return markers.app_restarts < c.max_retries
    if c.retry_policy == RetryPolicy.ROLE.value:
        return markers.role_restarts.get(c.role, 0) < c.max_retries
    return False


def replica_state(c: Seen, markers: Markers) -> AppState:
    """The state of the replica in container ``c``."""
    if _stopped_by_torchx(c, markers):
        return AppState.CANCELLED
    if c.state == "exited" and c.exit_code == 0:
        return AppState.SUCCEEDED
    if markers.restarting & {"", c.role} and c.state != "running":
        return AppState.PENDING
    if c.state in ("exited", "dead") and restart_due(c, markers):
        return AppState.PENDING
    if c.state == "exited":
        return AppState.FAILED
    return _STATES.get(c.state, AppState.UNKNOWN)


def siblings_to_stop(seen: list[Seen]) -> list[Seen]:
    """The replicas still running (or not started) of an app one of whose replicas has
    failed for good; none once the app was cancelled or stopped (see the module rules)."""
    markers = read_markers(seen)
    if markers.cancelled or markers.stopped or markers.restarting:
        return []
    replicas = [c for c in seen if c.kind == labels.KIND_REPLICA]
    if not any(replica_state(c, markers) == AppState.FAILED for c in replicas):
        return []
    return [c for c in replicas if c.state not in ("exited", "dead")]


def failure_text(c: Seen) -> str:
    """Why the replica in ``c`` failed, in a few words."""
    where = f"replica {c.role}/{c.replica} (container {c.name or 'gone'})"
    if not c.id:
        return f"replica {c.role}/{c.replica} is gone: {c.error}"
    if c.oom_killed:
        return f"{where} was killed for running out of memory (OOMKilled, exit {c.exit_code})"
    if c.state == "dead":
        return f"{where} is dead: the engine could not stop or remove it ({c.error or 'no reason given'})"
    if c.error:
        return f"{where} exited with {c.exit_code}: {c.error}"
    return f"{where} exited with {c.exit_code}"


def knows_more_than_the_exit(c: Seen) -> bool:
    """Whether the engine says why ``c`` failed beyond its exit code.

    Killed for memory, dead, gone, or an error of the engine's own: then the scheduler
    fills ``structured_error_msg``. A plain non-zero exit is left to the Runner, which
    reads the end of the replica's stderr (the Python exception, say) and says that.
    """
    return c.oom_killed or c.state == "dead" or not c.id or bool(c.error)


def structured_error(c: Seen) -> str:
    """The replica's failure as JSON (``structured_error_msg``), with its format version."""
    return json.dumps(
        {
            "version": ERROR_FORMAT,
            "message": failure_text(c),
            "reason": "OOMKilled" if c.oom_killed else ("Dead" if c.state == "dead" else "Error"),
            "exitCode": c.exit_code,
            "role": c.role,
            "replica": c.replica,
            "container": c.name,
        },
        sort_keys=True,
    )


@dataclass
class AppView:
    """An app's status as computed from its containers."""

    state: AppState
    roles: list[RoleStatus]
    num_restarts: int
    msg: str
    structured_error_msg: str
    failed: list[Seen]


def app_status(
    containers: list[Seen],
    role_order: list[str] | None = None,
    expected: Mapping[str, int] | None = None,
) -> AppView:
    """The status of an app from all its containers (replicas and markers).

    ``expected``: the replicas each role was submitted with (from the AppDef). A replica
    whose container is gone (removed by hand, not by ``delete``) is FAILED, saying so.
    """
    markers = read_markers(containers)
    replicas = [c for c in containers if c.kind == labels.KIND_REPLICA]
    present = {(c.role, c.replica) for c in replicas}
    for role, n in (expected or {}).items():
        for k in range(n):
            if (role, k) not in present:
                gone = Seen(
                    id="",
                    name="",
                    image="",
                    labels=labels.replica_labels("", role, k),
                    state="dead",
                    error="its container was removed from the engine",
                )
                replicas.append(gone)
    by_role: dict[str, RoleStatus] = {}
    order = list(role_order or [])
    for name in sorted({c.role for c in replicas} - set(order)):
        order.append(name)
    for name in order:
        by_role[name] = RoleStatus(name)
    failed: list[Seen] = []
    states = []
    for c in sorted(replicas, key=lambda c: (order.index(c.role), c.replica)):
        state = replica_state(c, markers)
        states.append(state)
        ended = c.state in ("exited", "dead")
        status = ReplicaStatus(
            id=c.replica,
            state=state,
            role=c.role,
            hostname=c.name,
            exit_code=c.exit_code if ended else None,
        )
        if state == AppState.FAILED:
            failed.append(c)
            if knows_more_than_the_exit(c):
                status.structured_error_msg = structured_error(c)
        by_role[c.role].replicas.append(status)
    state = rollup(states)
    if markers.cancelled and state == AppState.FAILED:
        state = AppState.CANCELLED
    msg = "; ".join(failure_text(c) for c in failed) if state == AppState.FAILED else ""
    if msg and markers.stopped:
        msg += "; its other replicas were stopped"
    restarts = markers.num_restarts + sum(c.restart_count for c in replicas)
    return AppView(
        state=state,
        roles=[r for r in by_role.values() if r.replicas],
        num_restarts=restarts,
        msg=msg,
        structured_error_msg=(
            structured_error(failed[0])
            if state == AppState.FAILED and knows_more_than_the_exit(failed[0])
            else ""
        ),
        failed=failed,
    )


def to_inspect(seen: list[Seen]) -> list[Seen]:
    """The containers whose full record ``describe`` needs (the list answer says too little).

    Every replica once all have ended (their records say when: the app's end time),
    else those :meth:`Seen.needs_inspect` names and the failed ones (the env they ran
    with: see the module).
    """
    replicas = [c for c in seen if c.kind == labels.KIND_REPLICA]
    if replicas and all(c.state in ("exited", "dead") for c in replicas):
        return replicas
    return [c for c in seen if c.needs_inspect() or (c.kind == labels.KIND_REPLICA and c.failed)]


def describe_response(app_id: str, seen: list[Seen]) -> DescribeAppResponse | None:
    """The app ``app_id`` from all its containers (replicas and markers); None without replicas."""
    replicas = [c for c in seen if c.kind == labels.KIND_REPLICA]
    if not replicas:
        return None
    appdef, run_options = _appdef_of(replicas)
    order = [r.name for r in appdef.roles] if appdef is not None else None
    expected = {r.name: r.num_replicas for r in appdef.roles} if appdef is not None else None
    view = app_status(seen, order, expected)
    return DescribeAppResponse(
        app_id=app_id,
        state=view.state,
        num_restarts=view.num_restarts,
        msg=view.msg or NONE,
        structured_error_msg=view.structured_error_msg or NONE,
        roles_statuses=view.roles,
        roles=list(appdef.roles) if appdef is not None else [],
        metadata=dict(appdef.metadata) if appdef is not None else {},
        name=appdef.name if appdef is not None else _app_name(replicas),
        start_time=_start_time(replicas),
        end_time=_end_time(replicas) if view.state.is_terminal() else None,
        env={name: value for c in replicas for name, value in c.env.items()},
        run_options=run_options,
    )


def list_entries(seen: list[Seen]) -> list[ListAppResponse]:
    """One entry per app among every app's containers ``seen``."""
    by_app: dict[str, list[Seen]] = {}
    for c in seen:
        by_app.setdefault(c.labels.get(labels.APP_ID, ""), []).append(c)
    out = []
    for app_id, containers in by_app.items():
        replicas = [c for c in containers if c.kind == labels.KIND_REPLICA]
        if not app_id or not replicas:
            continue
        view = app_status(containers)
        out.append(
            ListAppResponse(
                app_id=app_id,
                state=view.state,
                name=_app_name(replicas),
                start_time=_start_time(replicas),
            )
        )
    return out


def _appdef_of(replicas: list[Seen]) -> tuple[AppDef | None, dict[str, Any]]:
    """The AppDef kept in the first replica's label and its (masked) run options."""
    for c in replicas:
        text = c.labels.get(labels.APPDEF)
        if text:
            from torchx.specs.appdef_json import decode_with_options

            try:
                return decode_with_options(text)
            except Exception:
                return None, {}
    return None, {}


def _app_name(replicas: list[Seen]) -> str:
    for c in replicas:
        name = c.labels.get(labels.APP_NAME)
        if name:
            return name
    return ""


def _start_time(replicas: list[Seen]) -> float | None:
    """When the app's first container was created (its submission, to within a second)."""
    times = [c.created for c in replicas if c.created is not None]
    return min(times) if times else None


def _end_time(replicas: list[Seen]) -> float | None:
    """When the last container of an ended app exited, where every one was inspected (the
    list answer says only "Exited (0) 5 seconds ago"); None otherwise."""
    times = [c.finished for c in replicas if c.finished is not None]
    return max(times) if times and len(times) == len(replicas) else None
