"""``torchx log --json``: each log line as one JSON document, one per line.

A script reading the logs wants to know which replica and which stream a line came
from, and when it was written, without parsing the ``role/N`` prefix the text form
puts on it. Each line becomes ``{"formatVersion": ..., "kind": "LogLine", "data":
{"role", "replica", "stream", "time", "line"}}`` (printed through
:func:`torchx.cli.output.print_json`, so secrets are masked as in every other
output). ``time`` is seconds since the epoch where the scheduler keeps when a line was
written (the local scheduler does), else ``null``.

The streams are read one at a time (stdout, then stderr, unless ``--streams`` names
one), so that each line knows its stream; where lines carry times, a replica's two
streams are merged in the order they were written. Following (``-t``), each stream
has its reader and lines are printed as they come.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator
    from datetime import datetime
    from typing import Any

    from torchx.cli.logs import LogSource
    from torchx.schedulers.contract.api import Stream

#: Bytes read at a time from a log that keeps line times.
_BLOCK = 1 << 16


def print_lines(
    runner: LogSource,
    handle: str,
    pairs: list[tuple[str, int]],
    *,
    regex: str | None,
    since: datetime | None,
    until: datetime | None,
    streams: Stream | None,
) -> int:
    """Prints the selected replicas' lines as ``LogLine`` documents; returns how many
    replicas' logs could not be read (each said on stderr, as ``torchx log`` does)."""
    import re
    import sys

    from torchx.cli.output import mask, print_json
    from torchx.schedulers.contract.api import Stream

    wanted = [Stream.STDOUT, Stream.STDERR] if streams in (None, Stream.COMBINED) else [streams]
    matcher = re.compile(regex) if regex is not None else None
    failed = 0
    for role, k in pairs:
        try:
            lines: list[tuple[float | None, int, str, str]] = []
            for order, stream in enumerate(wanted):
                log = runner.log_lines(handle, role, k, since=since, until=until, streams=stream)
                for t, line in _timed_lines(log):
                    if matcher is None or matcher.search(line):
                        lines.append((t, order, stream.value, line))
        except Exception as e:  # said on stderr; the other replicas are still printed
            sys.stderr.write(
                mask(f"torchx log: error reading the log of {role}/{k}: {type(e).__name__}: {e}\n")
            )
            failed += 1
            continue
        if all(t is not None for t, *_ in lines):  # in the order they were written
            lines.sort(key=lambda x: (x[0], x[1]))
        for t, _, stream_name, line in lines:
            data = {"role": role, "replica": k, "stream": stream_name, "time": t, "line": line}
            print_json("LogLine", data, compact=True)
    sys.stdout.flush()
    return failed


def follow_lines(
    runner: LogSource,
    handle: str,
    pairs: list[tuple[str, int]],
    *,
    regex: str | None,
    since: datetime | None,
    until: datetime | None,
    streams: Stream | None,
) -> int:
    """``log -t --json``: follows each replica's streams until the app ends, printing
    each line's ``LogLine`` document as it comes (one reader thread per stream, as
    ``torchx.cli.logs`` reads logs that cannot be polled); returns how many streams
    could not be read (each said on stderr)."""
    import queue
    import re
    import sys
    import threading

    from torchx.cli.output import mask, print_json
    from torchx.schedulers.contract.api import Stream

    wanted = [Stream.STDOUT, Stream.STDERR] if streams in (None, Stream.COMBINED) else [streams]
    matcher = re.compile(regex) if regex is not None else None
    q: queue.Queue[dict[str, Any] | str | None] = queue.Queue(maxsize=1024)

    def read(role: str, k: int, stream: Stream) -> None:
        try:
            log = runner.log_lines(
                handle, role, k, since=since, until=until, should_tail=True, streams=stream
            )
            for t, line in _timed_lines(log):
                if matcher is None or matcher.search(line):
                    q.put(
                        {
                            "role": role,
                            "replica": k,
                            "stream": stream.value,
                            "time": t,
                            "line": line,
                        }
                    )
        except Exception as e:  # said on stderr; the other streams go on
            q.put(f"torchx log: error reading the log of {role}/{k}: {type(e).__name__}: {e}\n")
        finally:
            q.put(None)

    readers = [
        threading.Thread(target=read, args=(r, k, s), daemon=True, name=f"log-{r}-{k}-{s}")
        for r, k in pairs
        for s in wanted
    ]
    for thread in readers:
        thread.start()
    remaining, failed = len(readers), 0
    while remaining:
        item = q.get()
        if item is None:
            remaining -= 1
        elif isinstance(item, str):
            failed += 1
            sys.stderr.write(mask(item))
        else:
            print_json("LogLine", item, compact=True)
            if q.empty():
                sys.stdout.flush()
    sys.stdout.flush()
    return failed


def _timed_lines(log: Iterable[str]) -> Iterator[tuple[float | None, str]]:
    """(time or None, line without its newline) of a log iterable: with times where it
    keeps them (``timed(size)``, the local scheduler's), else each line with None."""
    timed: Any = getattr(log, "timed", None)
    if callable(timed):
        pending = ""
        t = None
        for t, text in timed(_BLOCK):
            whole, nl, pending = (pending + text).rpartition("\n")
            if nl:
                for line in whole.split("\n"):
                    yield t, line
        if pending:
            yield t, pending
        return
    for line in log:
        yield None, line.removesuffix("\n")
