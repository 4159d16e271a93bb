"""The little of an AppStatus and a Runner that ``torchx.cli.logs.stream`` reads, as plain values.

The full ``torchx log`` gives :func:`torchx.cli.logs.replicas_of` an ``AppStatus`` and
:func:`torchx.cli.logs.stream` a Runner. The quick path has neither (they would cost
what it exists to save), so it gives them these stand-ins: :class:`Roles`, the roles and
replica ids of a status record, and :class:`OpenedLogs`, the replicas' logs opened
beforehand (so that any doubt declines before anything is printed). The same two
functions then choose the replicas and print the lines, as the full command does.
"""

from __future__ import annotations

from torchx.cli._quick import Decline

TYPE_CHECKING = False  # typing costs milliseconds; the quick path exists to save them
if TYPE_CHECKING:
    from collections.abc import Iterable
    from datetime import datetime
    from typing import Any

    from torchx.schedulers.contract.api import Stream

#: The values of ``torchx log``'s ``--streams`` and ``--color``.
STREAMS = ("stdout", "stderr", "combined")
COLOR = ("auto", "always", "never")


def log_options(options: dict[str, Any]) -> tuple[str | None, str]:
    """(streams, color) of ``torchx log``'s options; declines a value the command refuses
    (the full command says what is wrong)."""
    streams = options.get("--streams")
    color = options.get("--color", "auto")
    if streams not in (None, *STREAMS) or color not in COLOR:
        raise Decline("arguments")
    return streams, color


class _Replica:
    __slots__ = ("id",)

    def __init__(self, rep_id: int) -> None:
        self.id = rep_id


class _Role:
    __slots__ = ("replicas", "role")

    def __init__(self, role: str, replicas: list[_Replica]) -> None:
        self.role = role
        self.replicas = replicas


class Roles:
    """The little of an AppStatus that ``replicas_of`` reads, from a status record's roles."""

    def __init__(self, roles: list[tuple[str, list[Any]]]) -> None:
        self.roles = [_Role(role, [_Replica(rep[0]) for rep in reps]) for role, reps in roles]


class OpenedLogs:
    """Stands in for the Runner in ``torchx.cli.logs.stream``: logs opened beforehand."""

    def __init__(self, logs: dict[tuple[str, int], Any]) -> None:
        self._logs = logs

    def log_lines(
        self,
        app_handle: str,
        role_name: str,
        k: int = 0,
        regex: str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        should_tail: bool = False,
        streams: Stream | None = None,
    ) -> Iterable[str]:
        opened: Iterable[str] = self._logs[(role_name, k)]  # with these very options
        return opened
