"""The core data types: what an app is (AppDef, Role, Resource) and how it is doing (AppStatus).

An :class:`AppDef` is a name plus a list of :class:`Role` s; each role says what to
run (``image``, ``entrypoint``, ``args``, ``env``), how many copies (``num_replicas``),
what each copy needs (:class:`Resource`) and what to do when one fails
(:class:`RetryPolicy`). Schedulers turn an AppDef into their native request and
report progress back as an :class:`AppStatus`.

These are attrs classes whose constructor arguments, order and defaults follow the
documented TorchX signatures, so code written against upstream TorchX builds the
same objects here.

>>> from torchx.specs import AppDef, Role, Resource
>>> app = AppDef(
...     name="my_train",
...     roles=[Role(name="trainer", image="my_image:latest")],
... )
>>> app.roles[0].num_replicas
1
>>> Resource(cpu=4, gpu=1, memMB=8192)
Resource(cpu=4, gpu=1, memMB=8192, capabilities={}, devices={}, tags={})
"""

from __future__ import annotations

import copy as _copy
from collections.abc import Callable, Mapping
from enum import Enum, StrEnum
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import attrs

from torchx.specs import status as _status
from torchx.specs._dataclass_view import expose as _expose_to_dataclasses
from torchx.specs.errors import AppStatusError, SpecError
from torchx.specs.mounts import BindMount, DeviceMount, VolumeMount
from torchx.specs.workspace import Workspace

if TYPE_CHECKING:
    from torchx.specs.options import CfgVal
    from torchx.specs.status import StatusRecord

#: Placeholder for a required string field that was not given (upstream's ``MISSING``).
MISSING: str = "<MISSING>"
#: Placeholder for "no value" in string fields such as ``structured_error_msg``.
NONE: str = _status.NONE
#: Matches every role in filters such as ``AppStatus.format(filter_roles=...)``.
ALL: str = _status.ALL

#: Key in :attr:`Resource.tags` naming the named resource a Resource came from.
NAMED_RESOURCE_TAG: str = "torchx.specs/named_resource"
#: Key in :attr:`Resource.tags` marking a fractional slice of a named resource.
FRACTIONAL_TAG: str = "torchx.specs/fractional"


@attrs.define(eq=True)
class Resource:
    """Represents resource requirements for a Role.

    Prefer :func:`resource` with a named resource (``h="gpu.small"``) over raw values.

    Args:
        cpu: number of logical cpu cores
        gpu: number of gpus
        memMB: MB of ram
        capabilities: additional hardware specs (interpreted by the scheduler)
        devices: named devices with their quantities (e.g. ``{"vpc.amazonaws.com/efa": 1}``)
        tags: metadata tags (not interpreted by schedulers)

    >>> Resource(cpu=4, gpu=1, memMB=8192)
    Resource(cpu=4, gpu=1, memMB=8192, capabilities={}, devices={}, tags={})
    """

    cpu: int
    gpu: int
    memMB: int
    capabilities: dict[str, Any] = attrs.field(factory=dict)
    devices: dict[str, int] = attrs.field(factory=dict)
    tags: dict[str, object] = attrs.field(factory=dict)

    @staticmethod
    def copy(original: Resource, **capabilities: Any) -> Resource:
        """Copies a resource, merging in the given capabilities (given ones win).

        >>> base = Resource(cpu=1, gpu=0, memMB=512, capabilities={"a": 1})
        >>> Resource.copy(base, b=2).capabilities
        {'a': 1, 'b': 2}
        >>> base.capabilities
        {'a': 1}
        """
        return Resource(
            cpu=original.cpu,
            gpu=original.gpu,
            memMB=original.memMB,
            capabilities={**_copy.deepcopy(original.capabilities), **capabilities},
            devices=dict(original.devices),
            tags=_copy.deepcopy(original.tags),
        )

    def get_resource_name(self) -> str | None:
        """Return the registered named-resource name, or None.

        Set by ``register.named_resource`` on every resource it creates.
        """
        name = self.tags.get(NAMED_RESOURCE_TAG)
        return name if isinstance(name, str) else None

    def is_fractional(self) -> bool:
        """Return True if this resource is a fractional slice of a base named resource."""
        return bool(self.tags.get(FRACTIONAL_TAG, False))


#: The "no resource given" sentinel: a Role built without a resource carries a copy of it.
NULL_RESOURCE: Resource = Resource(cpu=-1, gpu=-1, memMB=-1)


def _null_resource() -> Resource:
    return Resource(cpu=-1, gpu=-1, memMB=-1)


class RetryPolicy(StrEnum):
    """What happens when a replica of a role fails (non-zero exit, host crash, preemption, eviction).

    Not every scheduler supports every policy, but all support ``APPLICATION``.

    1. ``REPLICA``: replace only the failed replica; survivors are untouched
       (with ``dist.ddp``, torchelastic coordinates the membership change).
    2. ``APPLICATION``: restart the entire application.
    3. ``ROLE``: restart every replica of the failed role, not the whole app.
    """

    REPLICA = "REPLICA"
    APPLICATION = "APPLICATION"
    ROLE = "ROLE"

    def __str__(self) -> str:
        return self.value


#: Any of the mounts a Role can ask for (``Role.mounts``).
Mount = BindMount | VolumeMount | DeviceMount


@attrs.define(eq=True)
class Role:
    """A set of identical replicas that perform one duty within an AppDef.

    A DDP app has a single role (``trainer``); a parameter-server app has two
    (``trainer`` and ``ps``).

    Args:
        name: name of the role
        image: software bundle installed on the container (docker image, a directory, ...)
        min_replicas: minimum replicas for elastic scaling; unset means ``num_replicas``
        entrypoint: command to invoke inside the container
        args: arguments to the entrypoint
        env: environment variable mappings
        num_replicas: number of container replicas
        max_retries: max number of retries before giving up
        retry_policy: retry behaviour upon failures
        resource: resource requirements per replica
        port_map: named port mappings (e.g. ``{"tensorboard": 8081}``)
        metadata: scheduler-specific data; keys should follow ``$scheduler.$key``
        mounts: bind, volume, or device mounts
        workspace: local project directories to mirror on the remote job
        overrides: scheduler-specific overrides, carried through untouched

    >>> trainer = Role(
    ...     name="trainer",
    ...     image="pytorch/torch:latest",
    ...     entrypoint="train.py",
    ...     args=["--lr", "0.01"],
    ...     num_replicas=4,
    ...     resource=Resource(cpu=4, gpu=1, memMB=8192),
    ... )
    >>> trainer.retry_policy
    <RetryPolicy.APPLICATION: 'APPLICATION'>
    """

    name: str
    image: str
    min_replicas: int | None = None
    entrypoint: str = MISSING
    args: list[str] = attrs.field(factory=list)
    env: dict[str, str] = attrs.field(factory=dict)
    num_replicas: int = 1
    max_retries: int = 0
    retry_policy: RetryPolicy = RetryPolicy.APPLICATION
    resource: Resource = attrs.field(factory=_null_resource)
    port_map: dict[str, int] = attrs.field(factory=dict)
    metadata: dict[str, Any] = attrs.field(factory=dict)
    mounts: list[Mount] = attrs.field(factory=list)
    workspace: Workspace | None = None
    overrides: dict[str, Any] = attrs.field(factory=dict)

    def pre_proc(self, scheduler: str, dryrun_info: AppDryRunInfo[Any]) -> AppDryRunInfo[Any]:
        """Hook for role-specific changes to a scheduler request.

        Called once per role, in ``AppDef.roles`` order, by ``Scheduler.submit_dryrun``.
        The default returns ``dryrun_info`` unchanged; subclasses may edit the request.
        """
        return dryrun_info


@attrs.define(eq=True)
class AppDef:
    """A distributed application: a name and one or more Roles.

    Args:
        name: name of the application
        roles: the roles that make up the application
        metadata: scheduler-specific metadata (treatment varies by scheduler)

    >>> app = AppDef(name="echo", roles=[Role(name="worker", image="/tmp", entrypoint="/bin/echo")])
    >>> app.name
    'echo'
    """

    name: str
    roles: list[Role] = attrs.field(factory=list)
    metadata: dict[str, str] = attrs.field(factory=dict)


class AppState(int, Enum):
    """State of an application (also used per replica, as :data:`ReplicaState`).

    An app starts ``UNSUBMITTED``, moves through ``SUBMITTED``, ``PENDING`` and
    ``RUNNING``, and ends in a terminal state: ``SUCCEEDED``, ``FAILED`` or
    ``CANCELLED``. A preempted app may go back from ``RUNNING`` to ``PENDING``.
    ``UNKNOWN`` means the scheduler could not say.

    >>> AppState.SUCCEEDED.is_terminal()
    True
    >>> str(AppState.RUNNING)
    'RUNNING'
    """

    UNSUBMITTED = 0
    SUBMITTED = 1
    PENDING = 2
    RUNNING = 3
    SUCCEEDED = 4
    FAILED = 5
    CANCELLED = 6
    UNKNOWN = 7

    def __str__(self) -> str:
        return self.name

    def is_terminal(self) -> bool:
        """True for SUCCEEDED, FAILED and CANCELLED: the state will not change again."""
        return self in _TERMINAL_STATES

    def is_started(self) -> bool:
        """True once the app has started running (RUNNING or any terminal state)."""
        return self == AppState.RUNNING or self in _TERMINAL_STATES


_TERMINAL_STATES = frozenset({AppState.SUCCEEDED, AppState.FAILED, AppState.CANCELLED})

#: Replicas report the same states as apps.
ReplicaState = AppState


def is_terminal(state: AppState) -> bool:
    """True if ``state`` is SUCCEEDED, FAILED or CANCELLED."""
    return state in _TERMINAL_STATES


def is_started(state: AppState) -> bool:
    """True if ``state`` is RUNNING or terminal."""
    return AppState(state).is_started()


@attrs.define(eq=True)
class ReplicaStatus:
    """The status of one replica of a role.

    Args:
        id: the replica's index within its role (its ``replica_id``)
        state: the replica's state
        role: the name of the role the replica belongs to
        hostname: where the replica runs ("" when unknown)
        structured_error_msg: a structured (JSON) error, or ``NONE``
        exit_code: the process exit code once it has exited, else None
    """

    id: int
    state: AppState
    role: str
    hostname: str
    structured_error_msg: str = NONE
    exit_code: int | None = None


@attrs.define(eq=True)
class RoleStatus:
    """The statuses of every replica of one role (most recent attempt only)."""

    role: str
    replicas: list[ReplicaStatus] = attrs.field(factory=list)


@attrs.define(eq=True)
class AppStatus:
    """Runtime status of an AppDef.

    ``roles`` holds replica statuses for the most recent retry only; ``num_restarts``
    counts the restarts that led there. ``start_time`` and ``end_time`` are when the app
    started (or was submitted, where the scheduler cannot tell) and ended, in seconds
    since the epoch; None where unknown or not yet (not in upstream TorchX's AppStatus:
    keyword arguments with defaults, so upstream code builds it unchanged).

    >>> AppStatus(AppState.SUCCEEDED).raise_for_status()
    >>> AppStatus(AppState.FAILED, msg="exit 1").raise_for_status()
    Traceback (most recent call last):
     ...
    torchx.specs.errors.AppStatusError: app did not succeed: FAILED (exit 1)
    """

    state: AppState
    num_restarts: int = 0
    msg: str = ""
    structured_error_msg: str = NONE
    ui_url: str | None = None
    roles: list[RoleStatus] = attrs.field(factory=list)
    start_time: float | None = None
    end_time: float | None = None

    @property
    def duration(self) -> float | None:
        """Seconds from start to end, once both are known."""
        if self.start_time is None or self.end_time is None:
            return None
        return max(self.end_time - self.start_time, 0.0)

    def is_terminal(self) -> bool:
        """True once the app has reached SUCCEEDED, FAILED or CANCELLED."""
        return is_terminal(self.state)

    def raise_for_status(self) -> None:
        """Raises :class:`~torchx.specs.errors.AppStatusError` if the state is not SUCCEEDED."""
        if self.state != AppState.SUCCEEDED:
            raise AppStatusError(self)

    def __str__(self) -> str:
        return f"{self.state}" + (f" ({self.msg})" if self.msg else "")

    def format(self, filter_roles: list[str] | None = None) -> str:
        """Human-readable, multi-line status; ``filter_roles`` keeps only the named roles.

        Errors show as the first line of their message (see
        :func:`torchx.specs.structured_errors.error_message`), not as the raw JSON.

        >>> st = AppStatus(
        ...     AppState.RUNNING,
        ...     roles=[RoleStatus("trainer", [ReplicaStatus(0, AppState.RUNNING, "trainer", "h0")])],
        ... )
        >>> print(st.format())
        State: RUNNING
        Num restarts: 0
        Roles:
          trainer:
            trainer/0  RUNNING  host=h0
        """
        return _status.format_status(self.record(), filter_roles, times=False)

    def record(self) -> StatusRecord:
        """This status as plain data: what :mod:`torchx.specs.status` formats.

        Each structured error is its first line (``errors``, only where there is one).
        """
        from torchx.specs.structured_errors import error_message

        errors = {}
        app_error = error_message(self.structured_error_msg)
        if app_error:
            errors[""] = app_error
        roles = []
        for role in self.roles:
            for rep in role.replicas:
                rep_error = error_message(rep.structured_error_msg)
                if rep_error:
                    errors[f"{role.role}/{rep.id}"] = rep_error
            roles.append(
                (
                    role.role,
                    [
                        (rep.id, str(rep.state), rep.exit_code, rep.hostname)
                        for rep in role.replicas
                    ],
                )
            )
        record: StatusRecord = {
            "state": str(self.state),
            "num_restarts": self.num_restarts,
            "msg": self.msg,
            "ui_url": self.ui_url,
            "start_time": self.start_time,
            "end_time": self.end_time,
            "roles": roles,
        }
        if errors:
            record["errors"] = errors
        return record


T = TypeVar("T")


class AppDryRunInfo(Generic[T]):
    """What ``Scheduler.submit_dryrun`` returns: the native request that would be submitted.

    ``print(info)`` shows the request through ``fmt``. ``Scheduler.submit_dryrun`` fills
    in the app (the scheduler's private copy, as the request was made from it), the
    resolved run options and the scheduler's name, so that ``schedule(info)`` needs
    nothing else: read them as :attr:`app`, :attr:`cfg` and :attr:`scheduler`. Code that
    builds a request in several steps (a scheduler assembling it from parts, a
    ``Role.pre_proc`` returning a new info, the Runner naming an alias) sets them the same
    way, ``info.app = app``; each setter checks the type, so a wrong value fails where it
    is set rather than in ``schedule``. (``_app``, ``_cfg`` and ``_scheduler`` hold the
    same values under upstream TorchX's names, for old callers; new code does not touch
    them.)

    ``needs_workspace_build`` is True when the request came from a dry run of an app
    with a workspace to build: ``Runner.schedule`` builds it before submitting (and
    makes the request again if the build went elsewhere than the dry run planned).

    >>> info = AppDryRunInfo({"cmd": ["echo", "hi"]}, lambda r: f"run {r['cmd']}")
    >>> print(info)
    run ['echo', 'hi']
    >>> info.request
    {'cmd': ['echo', 'hi']}
    >>> info.app
    Traceback (most recent call last):
      ...
    torchx.specs.errors.SpecError: this AppDryRunInfo has no app: it was not made by Scheduler.submit_dryrun (or Runner.dryrun); dry-run the app first
    """

    def __init__(self, request: T, fmt: Callable[[T], str]) -> None:
        self.request = request
        self._fmt = fmt
        self._app: AppDef | None = None
        self._cfg: Mapping[str, CfgVal] | None = None
        self._scheduler: str | None = None
        self.needs_workspace_build = False

    @property
    def app(self) -> AppDef:
        """The AppDef the request was made from (the scheduler's copy, not the caller's)."""
        if self._app is None:
            raise self._not_filled("app")
        return self._app

    @app.setter
    def app(self, app: AppDef) -> None:
        if not isinstance(app, AppDef):
            raise SpecError(f"AppDryRunInfo.app must be an AppDef, got {type(app).__name__}")
        self._app = app

    @property
    def cfg(self) -> Mapping[str, CfgVal]:
        """The run options, resolved against the scheduler's ``run_opts`` (defaults filled in)."""
        if self._cfg is None:
            raise self._not_filled("cfg")
        return self._cfg

    @cfg.setter
    def cfg(self, cfg: Mapping[str, CfgVal]) -> None:
        if not isinstance(cfg, Mapping):
            raise SpecError(
                f"AppDryRunInfo.cfg must be a mapping of run options, got {type(cfg).__name__}"
            )
        self._cfg = cfg

    @property
    def scheduler(self) -> str:
        """The name of the scheduler that made the request (as the caller named it)."""
        if self._scheduler is None:
            raise self._not_filled("scheduler")
        return self._scheduler

    @scheduler.setter
    def scheduler(self, scheduler: str) -> None:
        if not isinstance(scheduler, str) or not scheduler:
            raise SpecError(
                f"AppDryRunInfo.scheduler must be a scheduler's name, got {scheduler!r}"
            )
        self._scheduler = scheduler

    def _not_filled(self, what: str) -> SpecError:
        return SpecError(
            f"this AppDryRunInfo has no {what}: it was not made by Scheduler.submit_dryrun "
            "(or Runner.dryrun); dry-run the app first"
        )

    def __repr__(self) -> str:
        return self._fmt(self.request)

    __str__ = __repr__


# Upstream TorchX keeps these in ``torchx.specs.api`` too; resolve them on first use so
# code importing them from there keeps working without loading them eagerly here.
_ELSEWHERE = {
    "runopt": "torchx.specs.options",
    "runopts": "torchx.specs.options",
    "CfgVal": "torchx.specs.options",
    "macros": "torchx.specs.templating",
    "AppHandle": "torchx.specs.handles",
    "ParsedAppHandle": "torchx.specs.handles",
    "parse_app_handle": "torchx.specs.handles",
    "make_app_handle": "torchx.specs.handles",
    "InvalidRunConfigException": "torchx.specs.errors",
    "MalformedAppHandleException": "torchx.specs.errors",
    "UnknownAppException": "torchx.specs.errors",
    "UnknownSchedulerException": "torchx.specs.errors",
    "get_type_name": "torchx.specs.options",
    "MountType": "torchx.specs.mounts",
}


# dataclasses.fields / asdict / replace work on them, as on upstream's dataclasses
_expose_to_dataclasses(
    Resource,
    Role,
    AppDef,
    ReplicaStatus,
    RoleStatus,
    AppStatus,
    BindMount,
    VolumeMount,
    DeviceMount,
    Workspace,
)


def __getattr__(name: str) -> Any:
    module = _ELSEWHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'torchx.specs.api' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)
