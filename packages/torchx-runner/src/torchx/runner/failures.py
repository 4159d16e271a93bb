"""Fills in why a failed app failed, from its replicas' stderr, when its scheduler did not say.

A scheduler reports a replica's error in ``structured_error_msg`` when it has one (an
elastic error file: :mod:`torchx.schedulers.helpers.replica_errors`). When it does not, the
Runner reads the end of each failed replica's stderr through the scheduler's own
``log_iter`` and makes the error from it (``error_from_stderr``), so that every
scheduler with logs explains its failures without doing anything.

Only FAILED apps are looked at, and only their FAILED replicas (at most
:data:`MAX_REPLICAS` of them: the first failures are the cause, the rest usually
followed from them). Reading a log is best effort: a scheduler without logs, a log that
is gone or an error while reading leaves the field as it was, never failing the status.
The app's own ``structured_error_msg``, when the scheduler left it empty, becomes that
of its first failed replica.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from torchx.schedulers.contract.api import Scheduler
    from torchx.specs.api import AppStatus

__all__ = ["MAX_REPLICAS", "explain_failure"]

#: How many failed replicas' logs are read for one status.
MAX_REPLICAS = 4


def explain_failure(sched: Scheduler[Any], app_id: str, status: AppStatus) -> AppStatus:
    """``status`` with the error of its failed replicas filled in where it was missing."""
    from torchx.specs.api import NONE, AppState

    if status.state != AppState.FAILED:
        return status
    failed = [rep for role in status.roles for rep in role.replicas if rep.state == AppState.FAILED]
    stream = _stderr_stream(sched)
    for rep in failed[:MAX_REPLICAS]:
        if rep.structured_error_msg and rep.structured_error_msg != NONE:
            continue
        if stream is False:
            break
        rep.structured_error_msg = _from_log(sched, app_id, rep.role, rep.id, stream)
    if not status.structured_error_msg or status.structured_error_msg == NONE:
        for rep in failed:
            if rep.structured_error_msg and rep.structured_error_msg != NONE:
                status.structured_error_msg = rep.structured_error_msg
                break
    return status


def _stderr_stream(sched: Scheduler[Any]) -> Any:
    """The ``streams`` argument that reads stderr (or both streams); False: no logs."""
    from torchx.schedulers.contract.api import Stream
    from torchx.schedulers.contract.capabilities import Capability, missing

    try:
        lacking = missing(sched)
    except Exception:  # a malformed declaration is the conformance kit's to report
        return None
    if Capability.LOGS in lacking:
        return False
    if Capability.SEPARATE_STREAMS not in lacking:
        return Stream.STDERR
    return Stream.COMBINED if Capability.COMBINED_STREAM not in lacking else None


def _from_log(sched: Scheduler[Any], app_id: str, role: str, k: int, stream: Any) -> str:
    from torchx.schedulers.helpers.replica_errors import error_from_stderr
    from torchx.specs.api import NONE

    try:
        lines = sched.log_iter(app_id, role, k=k, streams=stream)
        return error_from_stderr(lines, timestamp=time.time())
    except Exception as e:  # best effort: the status is still true without it
        import logging  # only here: the status of an app that did not fail never needs it

        logging.getLogger(__name__).debug("no stderr for %s/%d of %s: %s", role, k, app_id, e)
        return NONE
