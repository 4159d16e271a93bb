"""Following a log that an API serves in pages, from a cursor, without repeating or losing a line.

Backends behind an HTTP API hand out logs a page at a time: CloudWatch's
``GetLogEvents`` from a ``nextForwardToken``, a log service from an offset, the
Kubernetes and Docker APIs from a time (``sinceTime``, ``since``). :func:`paged_lines`
follows any of them given one function, ``fetch(cursor) -> Page``::

    from torchx.schedulers.helpers.paged import Page, paged_lines
    from torchx.schedulers.helpers.polling import Polled

    def fetch(token: str | None) -> Page[str]:
        kw = {"nextToken": token} if token else {"startFromHead": True}
        out = logs.get_log_events(logGroupName=group, logStreamName=stream, **kw)
        return Page([e["message"] for e in out["events"]], out["nextForwardToken"])

    return Polled(lambda: paged_lines(fetch, should_tail=tail, is_done=done))

The contract ``fetch`` keeps: given the cursor of the page before (None at first) it
returns the lines *after* it, in order, and the cursor after the last of them (the
same cursor when there is nothing new). :func:`paged_lines` then yields every line
exactly once, whatever the page sizes, and:

* without ``should_tail``, it reads pages until one is empty, and stops;
* with ``should_tail``, it keeps asking, at most every ``interval`` seconds, until
  ``is_done()`` (the app is terminal) has been true *before* an empty page: the source
  is then drained, as a page fetched after the app ended holds everything it wrote;
* where it would wait, it yields ``""`` (it is a polled source, see
  :mod:`torchx.schedulers.helpers.polling`): one thread follows many replicas' pages, and a
  fast caller does not make it ask the API more often than every ``interval`` seconds.

A source whose cursor is a time (inclusive: ``since=t`` returns the lines *at* ``t``
again) does not keep that contract by itself: :func:`since_time_fetch` makes one that
does, by remembering how many lines of the last instant it has seen.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from datetime import datetime
from typing import Generic, NamedTuple, TypeVar

__all__ = ["INTERVAL", "Page", "TimeCursor", "paged_lines", "since_time_fetch"]

C = TypeVar("C")

#: Default seconds between two fetches of a followed log that had nothing new.
INTERVAL = 1.0


class Page(NamedTuple, Generic[C]):
    """One answer of ``fetch``: the lines after the cursor asked for, and the cursor after them."""

    lines: Sequence[str]
    cursor: C


def paged_lines(
    fetch: Callable[[C | None], Page[C]],
    *,
    should_tail: bool,
    is_done: Callable[[], bool],
    interval: float = INTERVAL,
    clock: Callable[[], float] = time.monotonic,
) -> Iterator[str]:
    """Every line of the paged source, once each, in order; ``""`` where it would wait.

    Lines are given a final ``\\n`` if they lack one. See the module for when it stops.
    """
    cursor: C | None = None
    finishing = False
    next_fetch = clock()
    while True:
        if should_tail and clock() < next_fetch:
            yield ""
            continue
        page = fetch(cursor)
        cursor = page.cursor
        if page.lines:
            for line in page.lines:
                yield line if line.endswith("\n") else line + "\n"
            continue  # more may be waiting: ask again at once
        if finishing or not should_tail:
            return
        if is_done():
            finishing = True  # one more page: what was written before the end
            continue
        next_fetch = clock() + interval
        yield ""


#: The cursor of :func:`since_time_fetch`: (last time seen, lines of it seen), or None.
TimeCursor = tuple[datetime, int] | None


def since_time_fetch(
    fetch_since: Callable[[datetime | None], Sequence[tuple[datetime, str]]],
) -> Callable[[TimeCursor], Page[TimeCursor]]:
    """A ``fetch`` keeping the contract of :func:`paged_lines` over a source read by time.

    ``fetch_since(t)`` returns the (time, line) pairs at or after ``t`` (all of them for
    None), in order of time, lines of one instant always in the same order. The cursor
    is (the last time seen, how many lines of that time were yielded): lines at that
    time are skipped as often as they were yielded already, so none repeats and none is
    lost, even when many lines share one timestamp.
    """

    def fetch(cursor: TimeCursor) -> Page[TimeCursor]:
        since = cursor[0] if cursor is not None else None
        skip = cursor[1] if cursor is not None else 0
        lines: list[str] = []
        last, count = since, skip
        for when, line in fetch_since(since):
            if since is not None and when < since:
                continue  # a source that also answers a little before: not new
            if since is not None and when == since and skip:
                skip -= 1
                continue
            lines.append(line)
            if when == last:
                count += 1
            else:
                last, count = when, 1
        return Page(lines, None if last is None else (last, count))

    return fetch
