"""The line under a failed app's status that says where to read more.

``AppStatus.format()`` shows the error of each failed replica (its exception, from
the replica's elastic error file or its stderr: ``torchx.runner.failures``). What a
user does next is read that replica's log; :func:`more_hint` names the exact command,
``torchx log HANDLE/ROLE/N``, for the replica the error came from.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from torchx.specs.api import AppStatus

__all__ = ["failed_replica", "more_hint"]


def failed_replica(status: AppStatus) -> tuple[str, int] | None:
    """(role, replica id) of the first failed replica with an error, else the first failed one."""
    if status.state.name != "FAILED":
        return None
    from torchx.specs.structured_errors import error_message

    failed = [rep for role in status.roles for rep in role.replicas if rep.state.name == "FAILED"]
    for rep in failed:
        if error_message(rep.structured_error_msg):
            return rep.role, rep.id
    return (failed[0].role, failed[0].id) if failed else None


def more_hint(handle: str, status: AppStatus) -> str:
    """``"See its log: torchx log HANDLE/ROLE/N"`` for a failed app, else ``""``."""
    found = failed_replica(status)
    if found is None:
        return ""
    role, k = found
    return f"See its log: torchx log {handle}/{role}/{k}"
