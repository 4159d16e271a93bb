"""``torchx log --json``: the JSON sink of the one log reader, :func:`torchx.cli.log_reader.read`.

A script reading the logs wants to know which replica and which stream a line came
from, and when it was written, without parsing the ``role/N`` prefix the text form
puts on it. Each line becomes ``{"formatVersion": ..., "kind": "LogLine", "data":
{"role", "replica", "stream", "time", "line"}}`` (printed through
:func:`torchx.cli.output.print_json`, so secrets are masked as in every other
output). ``time`` is seconds since the epoch where the scheduler keeps when a line was
written (the local scheduler does), else ``null``.

Each stream of a replica is a source of its own (stdout and stderr, unless
``--streams`` names one), so that each line knows its stream. Printed once, a replica's
lines come together, its two streams merged in the order they were written where lines
carry times; followed (``-t``), each line as it comes. Errors, exit statuses and the
following across attempts are the text form's, as the reader and
``torchx.cli.log_attempts`` are the same; between two attempts a ``LogAttempt``
document stands for the text form's marker line (:func:`print_attempt`).
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from datetime import datetime

    from torchx.cli.log_reader import LogSource
    from torchx.cli.logs import Unread
    from torchx.schedulers.contract.api import Stream


def print_lines(
    runner: LogSource,
    handle: str,
    pairs: list[tuple[str, int]],
    *,
    regex: str | None,
    since: datetime | None,
    until: datetime | None,
    streams: Stream | None,
    tail: bool = False,
) -> Unread:
    """Prints the selected replicas' lines as ``LogLine`` documents on stdout; returns
    how many replicas' logs could not be read (each said once on stderr), as
    :func:`torchx.cli.logs.stream` does."""
    import re
    import sys

    from torchx.cli.log_reader import PAUSE, Ended, Failure, Text, read
    from torchx.cli.logs import Unread
    from torchx.cli.output import mask, print_json
    from torchx.schedulers.contract.api import Stream

    wanted = [Stream.STDOUT, Stream.STDERR] if streams in (None, Stream.COMBINED) else [streams]
    sources = [(r, k, s) for r, k in pairs for s in wanted]
    names = [s.value for s in wanted]
    matcher = re.compile(regex) if regex is not None else None
    pending = [""] * len(sources)  # the start of a line whose end is still to come
    last: list[float | None] = [None] * len(sources)
    kept: list[list[tuple[float | None, str]]] = [[] for _ in sources]  # printed at the end
    failed: dict[int, bool] = {}  # the replicas (index in pairs) not read: outage or not

    def lines_of(i: int, t: float | None, text: str) -> None:
        if tail:
            role, k = pairs[i // len(wanted)]
            stream = names[i % len(wanted)]
            for line in text.split("\n"):
                if matcher is None or matcher.search(line):
                    data = {"role": role, "replica": k, "stream": stream, "time": t, "line": line}
                    print_json("LogLine", data, compact=True)
        else:
            keep = kept[i]
            for line in text.split("\n"):
                if matcher is None or matcher.search(line):
                    keep.append((t, line))

    records = read(
        runner, handle, sources, since=since, until=until, tail=tail, times="kept"
    )  # --regex is matched here, on whole lines (a log's own regex may not keep times)
    for record in records:
        if type(record) is Text:
            i, t = record.source, record.time
            last[i] = t
            whole, nl, pending[i] = (pending[i] + record.text).rpartition("\n")
            if nl:
                lines_of(i, t, whole)
        elif record is PAUSE:
            sys.stdout.flush()
        elif isinstance(record, Ended | Failure):
            i = record.source
            if pending[i]:  # a last line without its newline
                lines_of(i, last[i], pending[i])
                pending[i] = ""
            if isinstance(record, Failure):
                if record.fatal is not None:  # the command says it, in one line
                    sys.stdout.flush()
                    raise record.fatal
                if i // len(wanted) not in failed:  # said once for the replica
                    failed[i // len(wanted)] = record.outage
                    sys.stdout.flush()
                    sys.stderr.write(mask(record.line))
                    sys.stderr.flush()
    if not tail:  # each replica's lines together, in the order they were written
        for p, (role, k) in enumerate(pairs):
            lines = [
                (t, order, names[order], line)
                for order in range(len(wanted))
                for t, line in kept[p * len(wanted) + order]
            ]
            if all(t is not None for t, *_ in lines):
                lines.sort(key=lambda x: (x[0], x[1]))
            for t, _, stream_name, line in lines:
                data = {"role": role, "replica": k, "stream": stream_name, "time": t, "line": line}
                print_json("LogLine", data, compact=True)
    sys.stdout.flush()
    return Unread(len(failed), sum(failed.values()))


def print_attempt(handle: str, restarts: int, line: str) -> None:
    """The ``LogAttempt`` document between two attempts of a followed app: ``handle``,
    ``restarts`` (how many times the app has restarted), ``attempt`` (the number of the
    attempt whose lines follow, from 1) and ``line`` (the text form's marker line, which
    the caller, :mod:`torchx.cli.log_attempts`, makes)."""
    import sys

    from torchx.cli.output import print_json

    data = {"handle": str(handle), "restarts": restarts, "attempt": restarts + 1, "line": line}
    print_json("LogAttempt", data, compact=True)
    sys.stdout.flush()
