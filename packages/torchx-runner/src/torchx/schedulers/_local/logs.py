"""Reading and following the logs of a local replica.

Each replica has three files in its log directory:

* ``stdout.log`` and ``stderr.log``: exactly what the process wrote (the files are its
  stdout and stderr, no pipe in between);
* ``combined.log``: both streams, one line per line, each prefixed by the supervisor
  with ``<UTC ISO timestamp> <stream> `` when it copied the line (within
  :data:`~torchx.schedulers._local.supervisor.TICK_MAX` of the write). Lines of the
  two streams copied in the same pass keep their order within a stream, stdout first.

Reading stdout or stderr without a time window reads the raw file; anything that
needs times (``since``/``until``) or both streams reads ``combined.log``. If the
supervisor was killed (the app is then FAILED, "supervisor died"), ``combined.log``
may lack the last lines it had not copied yet; the raw files never do.

Files are read, and followed (``should_tail``), with the public
:func:`torchx.schedulers.follow.follow_file`: it stops once the app is finished *and*
the file has been read to its end; the supervisor records the final state only after
the replica has exited and the last lines were copied, so no line is lost.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime


def iso_utc(when: datetime) -> str:
    """``when`` in the timestamp format of ``combined.log`` (naive means local time).

    >>> iso_utc(datetime(2025, 1, 2, 3, 4, 5, 6, tzinfo=UTC))
    '2025-01-02T03:04:05.000006Z'
    """
    return when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def combined_lines(
    lines: Iterator[str],
    stream: str | None,
    since: datetime | None,
    until: datetime | None,
) -> Iterator[str]:
    """Lines of ``combined.log`` with their prefix removed, filtered by stream and time.

    >>> raw = iter(["2025-01-01T00:00:01.000000Z stdout a\\n",
    ...             "2025-01-01T00:00:02.000000Z stderr b\\n"])
    >>> list(combined_lines(raw, "stderr", None, None))
    ['b\\n']
    """
    lo = iso_utc(since) if since is not None else None
    hi = iso_utc(until) if until is not None else None
    for line in lines:
        ts, name, text = line.split(" ", 2) if line.count(" ") >= 2 else ("", "", line)
        if stream is not None and name != stream:
            continue
        if lo is not None and ts < lo:
            continue
        if hi is not None and ts > hi:
            continue
        yield text
