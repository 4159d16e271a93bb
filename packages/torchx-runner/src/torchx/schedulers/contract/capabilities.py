"""What a scheduler's backend cannot do, declared by name, each with the reason.

The Scheduler contract lets a backend lack a few things (separate stdout and
stderr, time-bounded logs, retries, ...), and says what each call does then (a
``ValueError``, the option ignored, ...). A scheduler plugin declares what its
backend lacks on its Scheduler class, as a mapping from :class:`Capability` to a
one-line reason::

    class AcmeScheduler(Scheduler[Mapping[str, CfgVal]]):
        missing_capabilities = {
            Capability.SEPARATE_STREAMS: "Acme Batch keeps one combined log per task",
        }

The declaration is used in three places, so it cannot drift from the code:

* the conformance kit (:mod:`torchx.schedulers.testing`) checks, for each declared
  capability, the documented behaviour of lacking it instead of the capability
  itself (and any other failure fails the kit);
* :func:`capability_table` renders the declarations of the installed schedulers as
  the table in ``docs/plugins.md`` (a test keeps it generated, never hand-written);
* users read why something does not work on a backend.

This module is cheap to import (no pytest, no attrs): a plugin's scheduler module
imports it at import time.

>>> class Sched:
...     missing_capabilities = {Capability.RETRIES: "the backend never restarts a task"}
>>> missing(Sched)
{<Capability.RETRIES: 'retries'>: 'the backend never restarts a task'}
>>> missing(object)
{}
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from enum import StrEnum

__all__ = ["LACKING", "Capability", "capability_table", "missing"]


class Capability(StrEnum):
    """Something a backend may lack; :data:`LACKING` says what the contract does then."""

    #: ``log_iter`` at all
    LOGS = "logs"
    #: ``log_iter(streams=Stream.STDOUT)`` / ``Stream.STDERR``: one stream alone
    SEPARATE_STREAMS = "separate_streams"
    #: ``log_iter(streams=Stream.COMBINED)``: both streams of a replica in one iterator
    COMBINED_STREAM = "combined_stream"
    #: ``log_iter(since=..., until=...)``: lines bounded by the time they were written
    LOG_TIME_WINDOW = "log_time_window"
    #: ``ReplicaStatus.exit_code``: a replica's exit status
    EXIT_CODES = "exit_codes"
    #: ``Role.max_retries``: replicas (or the app) restarted after a failure, and counted
    RETRIES = "retries"
    #: ``delete``: the app's records removed (beyond cancelling it)
    DELETE = "delete"
    #: ``list``: the apps of the backend
    LIST = "list"
    #: ``macros.rank0_env``: the name of an environment variable holding the rank-0 host
    RANK0_ENV = "rank0_env"
    #: ``DescribeAppResponse.name``/``roles``/``metadata``: ``describe`` gives back the
    #: submitted AppDef
    DESCRIBE_APPDEF = "describe_appdef"
    #: ``DescribeAppResponse.run_options``: ``describe`` gives back the (masked) run
    #: options the app was submitted with
    DESCRIBE_RUN_OPTIONS = "describe_run_options"
    #: ``ReplicaStatus.state`` per replica: each replica's own state (SageMaker reports one
    #: state per training job, none per instance)
    REPLICA_STATUS = "replica_status"
    #: The replicas' states and exit codes once an app has failed after its restarts (the
    #: attempt that failed it): Volcano deletes every pod of a job it restarts, the failed
    #: attempt's too, before it marks the job Failed
    LAST_ATTEMPT_STATUS = "last_attempt_status"
    #: An app of several roles, each with its own command, run as one app (SageMaker runs
    #: one image and one command on every instance of a training job)
    MULTI_ROLE = "multi_role"


#: What the contract does on a backend that lacks each capability (what the kit checks).
LACKING: Mapping[Capability, str] = {
    Capability.LOGS: "log_iter raises NotImplementedError",
    Capability.SEPARATE_STREAMS: "log_iter(streams=STDOUT or STDERR) raises ValueError",
    Capability.COMBINED_STREAM: "log_iter(streams=COMBINED) raises ValueError",
    Capability.LOG_TIME_WINDOW: "since/until are ignored: every line is returned",
    Capability.EXIT_CODES: "ReplicaStatus.exit_code is None",
    Capability.RETRIES: "max_retries is ignored: the app fails at the first failure, "
    "num_restarts <= 0",
    Capability.DELETE: "delete() only cancels: the ended app is still described",
    Capability.LIST: "list() raises NotImplementedError",
    Capability.RANK0_ENV: "${rank0_env} is left as it is (not substituted)",
    Capability.DESCRIBE_APPDEF: "describe's roles are empty and its name is the app's "
    "name or the job name made from it",
    Capability.DESCRIBE_RUN_OPTIONS: "describe's run_options is empty",
    Capability.REPLICA_STATUS: "every replica is reported in the app's state, with no exit "
    "code (torchx.schedulers.contract.states.replicas_in_app_state); declare exit_codes missing too",
    Capability.LAST_ATTEMPT_STATUS: "once an app has failed after restarts, every replica "
    "is reported in the app's state (FAILED), with no exit code",
    Capability.MULTI_ROLE: "the dry run of an app of several roles raises ValueError in one "
    "line: each role runs as an app of its own",
}


def missing(scheduler: object) -> dict[Capability, str]:
    """The capabilities a scheduler (class or instance) declares missing, with reasons.

    Reads its ``missing_capabilities`` attribute (none: it lacks nothing). A key that
    is not a :class:`Capability` (or its value), or a reason that is not a non-empty
    one-line string, raises ``ValueError`` naming the scheduler and the entry.
    """
    declared = getattr(scheduler, "missing_capabilities", None) or {}
    owner = scheduler if isinstance(scheduler, type) else type(scheduler)
    where = f"{owner.__module__}.{owner.__qualname__}.missing_capabilities"
    if not isinstance(declared, Mapping):
        raise ValueError(f"{where} must map Capability to a reason, got {declared!r}")
    found: dict[Capability, str] = {}
    for key, reason in declared.items():
        try:
            cap = Capability(key)
        except ValueError:
            valid = ", ".join(c.name for c in Capability)
            raise ValueError(f"{where}: {key!r} is not a Capability; valid: {valid}") from None
        if not isinstance(reason, str) or not reason.strip() or "\n" in reason:
            raise ValueError(f"{where}[{cap.name}]: the reason must be a one-line string")
        found[cap] = reason.strip()
    if Capability.REPLICA_STATUS in found and Capability.EXIT_CODES not in found:
        raise ValueError(
            f"{where}: declares {Capability.REPLICA_STATUS.name} missing but not "
            f"{Capability.EXIT_CODES.name}: a backend without per-replica status has no "
            "per-replica exit codes either; declare both"
        )
    return found


def capability_table(schedulers: Iterable[tuple[str, object]]) -> str:
    """A Markdown table: each scheduler's missing capabilities with their reasons.

    ``schedulers`` gives (name, scheduler class or instance) pairs, in the order shown.

    >>> class Sched:
    ...     missing_capabilities = {"list": "no API lists jobs"}
    >>> print(capability_table([("acme", Sched), ("local", object)]))
    | scheduler | lacks | why | instead |
    | --- | --- | --- | --- |
    | acme | `list` | no API lists jobs | list() raises NotImplementedError |
    | local | (nothing) | | |
    """

    def cell(text: str) -> str:
        return text.replace("|", "\\|")

    rows = ["| scheduler | lacks | why | instead |", "| --- | --- | --- | --- |"]
    for name, scheduler in schedulers:
        lacks = missing(scheduler)
        if not lacks:
            rows.append(f"| {name} | (nothing) | | |")
        for cap, reason in lacks.items():
            rows.append(f"| {name} | `{cap.value}` | {cell(reason)} | {cell(LACKING[cap])} |")
    return "\n".join(rows)
