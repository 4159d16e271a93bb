"""Keeping the log lines written between ``since`` and ``until`` (``torchx log --since``).

``log_iter(since=..., until=...)`` bounds the lines by the time they were written. A
backend whose API can be asked for a time range should be (less to transfer), and the
lines it returns still go through these helpers, which hold the one rule:

* a line is kept when ``since <= its time <= until`` (either bound may be None);
* times are compared as instants: an aware datetime is what it says, a naive one (what
  ``torchx log --since 5m`` computes) is local time, and a number is seconds since the
  epoch. A line without a time is kept (nothing says it is outside).

:func:`in_window` decides for one time. :func:`window_lines` filters lines that start
with an RFC 3339 timestamp, as the Docker and Kubernetes APIs return them when asked
for timestamps (``2026-11-24T10:00:00.123456789Z the line``), drops that stamp and
passes the ``""`` of a polled source through (see :mod:`torchx.schedulers.helpers.polling`)::

    lines = paged_lines(fetch, should_tail=tail, is_done=done)  # "<stamp> <text>\\n"
    return Polled(lambda: window_lines(lines, since, until, ordered=True))

With ``ordered`` (the source's lines come in order of time), it stops at the first
line after ``until``: following a log up to a time in the past ends there.

>>> from datetime import datetime, timezone
>>> t = datetime(2026, 11, 24, 10, 0, 1, tzinfo=timezone.utc)
>>> lines = ["2026-11-24T10:00:00.5Z a\\n", "2026-11-24T10:00:01.000000001Z b\\n", "c\\n"]
>>> list(window_lines(lines, since=t, until=None))
['b\\n', 'c\\n']
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime

__all__ = ["in_window", "split_timestamp", "window_lines"]

# RFC 3339 as the container APIs write it: fraction of up to 9 digits, Z or an offset
_STAMP = re.compile(
    r"(\d{4}-\d{2}-\d{2})[Tt ](\d{2}:\d{2}:\d{2})(?:\.(\d{1,9}))?([Zz]|[+-]\d{2}:\d{2}) ?"
)


def _seconds(when: datetime | float) -> float:
    return when.timestamp() if isinstance(when, datetime) else float(when)


def in_window(
    when: datetime | float | None, since: datetime | None, until: datetime | None
) -> bool:
    """True if ``when`` is within ``[since, until]`` (see the module; None is kept)."""
    if when is None:
        return True
    t = _seconds(when)
    return (since is None or t >= since.timestamp()) and (until is None or t <= until.timestamp())


def split_timestamp(line: str) -> tuple[datetime | None, str]:
    """``"<RFC 3339 time> text"`` -> (that time, ``"text"``); (None, line) if none starts it.

    Fractions beyond microseconds (the APIs give nanoseconds) are cut, never rounded up:
    a line is never moved later than it was written.

    >>> split_timestamp("2026-11-24T10:00:00.123456789Z hello\\n")
    (datetime.datetime(2026, 11, 24, 10, 0, 0, 123456, tzinfo=datetime.timezone.utc), 'hello\\n')
    >>> split_timestamp("no time here")
    (None, 'no time here')
    """
    m = _STAMP.match(line)
    if m is None:
        return None, line
    day, clock, fraction, zone = m.groups()
    micros = (fraction or "").ljust(6, "0")[:6]
    offset = "+00:00" if zone in ("Z", "z") else zone
    try:
        when = datetime.fromisoformat(f"{day}T{clock}.{micros}{offset}")
    except ValueError:  # a date that does not exist (month 13): not a timestamp
        return None, line
    return when.astimezone(UTC), line[m.end() :]


def window_lines(
    lines: Iterable[str],
    since: datetime | None,
    until: datetime | None,
    *,
    ordered: bool = False,
) -> Iterator[str]:
    """The lines within ``[since, until]``, each without its leading timestamp.

    ``""`` (a polled source with nothing new) passes through. With ``ordered``, the
    first line after ``until`` ends the iteration.
    """
    hi = until.timestamp() if until is not None else None
    for line in lines:
        if not line:
            yield line
            continue
        when, text = split_timestamp(line)
        if when is not None and hi is not None and ordered and when.timestamp() > hi:
            return
        if in_window(when, since, until):
            yield text
