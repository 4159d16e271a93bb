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

Following (``should_tail``) reads to the end of the file, then polls every
:data:`POLL_INTERVAL` seconds (there is no file-change notification in the standard
library; inotify would need a dependency). It stops once the app is finished *and*
the file has been read to its end: the supervisor records the final state only after
the replica has exited and the last lines were copied, so no line is lost. Files are
read in 1 MiB chunks, which keeps up with a replica printing well over 100,000
lines a second.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime

#: Seconds between two looks at a followed file that had nothing new.
POLL_INTERVAL = 0.02
CHUNK = 1 << 20


def iso_utc(when: datetime) -> str:
    """``when`` in the timestamp format of ``combined.log`` (naive means local time).

    >>> iso_utc(datetime(2025, 1, 2, 3, 4, 5, 6, tzinfo=UTC))
    '2025-01-02T03:04:05.000006Z'
    """
    return when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def follow(path: str, should_tail: bool, is_done: Callable[[], bool]) -> Iterator[str]:
    """Lines of ``path`` (each ending in ``\\n``), following it while ``should_tail``."""
    while not os.path.exists(path):
        if not should_tail or is_done():
            if not os.path.exists(path):
                return
            break
        time.sleep(POLL_INTERVAL)
    with open(path, "rb", buffering=0) as f:
        partial = b""
        finishing = False
        while True:
            data = f.read(CHUNK)
            if data:
                buf = partial + data if partial else data
                cut = buf.rfind(b"\n") + 1
                if cut:
                    text = buf[:cut].decode("utf-8", "replace")
                    partial = buf[cut:]
                    for line in text.split("\n")[:-1]:
                        yield line + "\n"
                else:
                    partial = buf
                continue
            if finishing or not should_tail:
                break
            if is_done():
                finishing = True  # one more pass: read what was written before the end
                continue
            time.sleep(POLL_INTERVAL)
        if partial:
            yield partial.decode("utf-8", "replace") + "\n"


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
