"""Durations and points in time as people type them: the one parser every command uses.

``torchx log --since 5m``, ``--until '1h30m ago'``, ``torchx delete --older-than 1d12h``
and the local scheduler's ``retain_for`` all read their text here, so a form accepted
in one place is accepted in every other::

    >>> parse_duration("1h30m"), parse_duration("1d12h"), parse_duration("0.5h")
    (5400.0, 129600.0, 1800.0)
    >>> from datetime import datetime
    >>> now = datetime(2026, 11, 25, 12, 0, 0)
    >>> parse_time("5m ago", now=now), parse_time("1h30m", now=now)
    (datetime.datetime(2026, 11, 25, 11, 55), datetime.datetime(2026, 11, 25, 10, 30))
    >>> parse_time("2026-11-25T09:15:00")
    datetime.datetime(2026, 11, 25, 9, 15)

A duration is one or more parts, each a number and a unit: ``s``, ``m``, ``h``, ``d``,
``w`` (seconds to weeks; upper case too, spaces between parts allowed). A time is ISO
8601, or a duration ago (``5m`` and ``5m ago`` mean the same). Bad text raises
:class:`InvalidDurationException` (a :class:`~torchx.specs.errors.SpecError`, so a
``ValueError``) with one line saying what was expected.

Only the standard library's ``datetime`` is imported, and only by :func:`parse_time`:
the local scheduler's supervisor and the CLI's quick path use this module.
"""

from __future__ import annotations

from torchx.specs.errors import SpecError

TYPE_CHECKING = False  # typing costs milliseconds: the CLI's quick path imports this
if TYPE_CHECKING:
    from datetime import datetime

__all__ = ["InvalidDurationException", "parse_duration", "parse_time"]

#: Seconds in each unit.
UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}

_DURATION_FORMS = "a number and a unit (s, m, h, d, w), or several, e.g. 30s, 5m, 1h30m, 1d12h"


class InvalidDurationException(SpecError):
    """A duration or time given as text is malformed (the message says what was expected)."""


def _seconds(text: str) -> float | None:
    """Seconds in ``text``, or None when it is not a duration."""
    value = text.strip().lower()
    total = 0.0
    i, n = 0, len(value)
    parts = 0
    while i < n:
        while i < n and value[i] == " ":
            i += 1
        start = i
        while i < n and value[i].isascii() and value[i].isdigit():
            i += 1
        if i < n and value[i] == "." and i > start:
            i += 1
            frac = i
            while i < n and value[i].isascii() and value[i].isdigit():
                i += 1
            if i == frac:
                return None
        if i == start or i >= n or value[i] not in UNITS:
            return None
        total += float(value[start:i]) * UNITS[value[i]]
        parts += 1
        i += 1
        while i < n and value[i] == " ":
            i += 1
    return total if parts and total != float("inf") else None


def parse_duration(text: str) -> float:
    """Seconds in a duration such as ``30s``, ``15m``, ``1h30m``, ``7d``, ``2w`` or ``1d12h``.

    Raises :class:`InvalidDurationException` for anything else.
    """
    seconds = _seconds(text) if isinstance(text, str) else None
    if seconds is None:
        raise InvalidDurationException(f"bad duration {text!r}: expected {_DURATION_FORMS}")
    return seconds


def parse_time(text: str, now: datetime | None = None) -> datetime:
    """A point in time: ISO 8601 (``2026-11-25T09:15:00``), or a duration ago (``5m ago``).

    A duration ago is counted back from ``now`` (default: the current local time) and
    returned as a naive local time, like ``datetime.now()``.
    """
    from datetime import datetime, timedelta

    value = text.strip() if isinstance(text, str) else ""
    body = value[:-3] if value.lower().endswith(" ago") or value.lower().endswith("ago") else value
    seconds = _seconds(body) if body else None
    if seconds is not None:
        try:
            return (now or datetime.now()) - timedelta(seconds=seconds)
        except OverflowError:
            raise InvalidDurationException(f"bad time {text!r}: that is too long ago") from None
    try:
        return datetime.fromisoformat(value)
    except ValueError:
        raise InvalidDurationException(
            f"bad time {text!r}: expected ISO 8601 (2026-11-22T10:00:00) or a duration ago "
            "(30s, 5m ago, 1h30m, 1d12h)"
        ) from None
