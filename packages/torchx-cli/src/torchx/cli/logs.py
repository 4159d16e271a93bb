"""The text sink of ``torchx log`` (:func:`stream`): the logs of many replicas at once,
each line prefixed ``role/N``, as the one reader (:func:`torchx.cli.log_reader.read`)
yields them; and the helpers of the command: which replicas (:func:`replicas_of`), the
checks of a selection (:func:`check_selection`, :func:`parse_time`), whether to color
(:func:`use_color`) and the count of logs left unread that both sinks return
(:class:`Unread`, so the text and ``--json`` forms exit alike).

Lines of one replica stay in order and lines of different replicas never interleave
mid-line. Prefixes are colored when stdout is a terminal, unless ``NO_COLOR`` is set
or ``--color`` says otherwise (:func:`use_color`). A block of text the reader yields is
prefixed with one ``str.replace`` and written at once. With ``--timestamps`` each line
carries the time it was written, after its prefix. When a window
(``--since``/``--until``) or ``--regex`` selected no line at all, a note on stderr says
so, rather than a silence that looks like an empty log.

Following (``tail``), credentials the backend refuses while a log is read end the
command (``torchx.cli._runtime.following``: the app's state is unknown, exit 4, one
line), as they do when its status is asked: every other log would be refused too.
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False  # typing costs milliseconds: the quick path of `torchx log` uses this
if TYPE_CHECKING:
    from collections.abc import Sequence
    from datetime import datetime
    from typing import IO, Any, Protocol

    from torchx.cli.log_reader import LogSource
    from torchx.schedulers.contract.api import Stream

    # What these functions read of an AppStatus and use of a Runner: the real ones, or
    # the quick path's plain stand-ins (torchx.cli._quick.standins).
    class _Replica(Protocol):
        @property
        def id(self) -> int: ...

    class _Role(Protocol):
        @property
        def role(self) -> str: ...
        @property
        def replicas(self) -> Sequence[_Replica]: ...

    class StatusOfRoles(Protocol):
        @property
        def roles(self) -> Sequence[_Role]: ...


_COLORS = ["\033[32m", "\033[34m", "\033[35m", "\033[36m", "\033[33m", "\033[31m"]
_RESET = "\033[0m"


def use_color(mode: str | None, out: Any) -> bool:
    """Whether to color what goes to ``out``: ``--color always|never|auto`` (None is auto).

    Auto colors a terminal only, and never when ``NO_COLOR`` is set to anything but
    the empty string (https://no-color.org) or ``TERM`` is ``dumb``.
    """
    if mode == "always":
        return True
    if mode == "never":
        return False
    import os

    if os.environ.get("NO_COLOR") or os.environ.get("TERM") == "dumb":
        return False
    isatty = getattr(out, "isatty", None)
    return bool(isatty and isatty())


def replicas_of(
    status: StatusOfRoles, role: str | None, ids: list[int] | None
) -> list[tuple[str, int]]:
    """The (role, replica id) pairs to read, as selected by ``role`` and ``ids``."""
    from torchx.cli.errors import CliError

    pairs = []
    roles = [r.role for r in status.roles]
    if role is not None and role not in roles:
        raise CliError(f"no role {role!r} in this app; its roles: {', '.join(roles)}")
    for r in status.roles:
        if role is not None and r.role != role:
            continue
        for rep in r.replicas:
            if ids is None or rep.id in ids:
                pairs.append((r.role, rep.id))
    if ids is not None:
        missing = sorted(set(ids) - {k for _, k in pairs})
        if missing:
            raise CliError(f"no replica {missing} in role {role!r}")
    return pairs


def _fail(out: Any, line: str, mid_line: bool) -> None:
    """Ends a log line the error cut short (stdout), then says the error on stderr."""
    if mid_line:
        out.write("\n")
    out.flush()
    from torchx.cli.output import mask

    sys.stderr.write(mask(line))
    sys.stderr.flush()


class Unread(int):
    """What a sink returns: how many replicas' logs could not be read (each said on
    stderr), ``outages`` of them because the backend could not be asked.

    ``exit_status`` is the command's: 0 when every log was read, 4 (the app's state
    is unknown, as ``status`` says in an outage) when only an outage kept some unread,
    else 1.
    """

    outages: int

    def __new__(cls, count: int = 0, outages: int = 0) -> Unread:
        self = super().__new__(cls, count)
        self.outages = outages
        return self

    @property
    def exit_status(self) -> int:
        from torchx.cli.errors import EXIT_APP_FAILED, EXIT_UNKNOWN

        if not self:
            return 0
        return EXIT_UNKNOWN if self.outages == self else EXIT_APP_FAILED


class _Stamper:
    """``--timestamps`` of one source: its text with the time each line was written at
    its start (``2026-11-25 09:15:00.123 the line``, local time to the millisecond), and
    with a ``matcher`` (a compiled ``--regex``) only the lines it finds something in."""

    def __init__(self, matcher: Any) -> None:
        self.matcher = matcher
        self.at_start = True
        self.pending = ""  # with a matcher: the start of a line whose end is still to come
        self.stamp = ""

    def __call__(self, t: float | None, text: str) -> str:
        from datetime import datetime

        stamp = self.stamp = datetime.fromtimestamp(t or 0).isoformat(" ", "milliseconds") + " "
        if self.matcher is not None:  # whole lines only, to match them
            whole, nl, self.pending = (self.pending + text).rpartition("\n")
            if not nl:
                return ""
            return "".join(
                f"{stamp}{line}\n" for line in whole.split("\n") if self.matcher.search(line)
            )
        body = text.replace("\n", "\n" + stamp)
        if text.endswith("\n"):
            body = body[: len(body) - len(stamp)]
        at_start, self.at_start = self.at_start, text.endswith("\n")
        return (stamp + body) if at_start else body

    def end(self) -> str:
        """The last line, kept for its end that never came, if the matcher keeps it."""
        if self.pending and self.matcher is not None and self.matcher.search(self.pending):
            return f"{self.stamp}{self.pending}\n"
        return ""


class _Counting:
    """Stands in for the output stream, remembering whether anything was written."""

    def __init__(self, out: IO[str]) -> None:
        self._out = out
        self.wrote = False

    def write(self, text: str) -> int:
        if text:
            self.wrote = True
        return self._out.write(text)

    def flush(self) -> None:
        self._out.flush()

    def isatty(self) -> bool:
        return self._out.isatty()


def _selection(regex: str | None, since: datetime | None, until: datetime | None) -> str:
    """``matching 'x' between ... and ...``: what selected the lines, in words."""
    words = []
    if regex is not None:
        words.append(f"matching {regex!r}")
    if since is not None and until is not None:
        words.append(
            f"between {since.isoformat(' ', 'seconds')} and {until.isoformat(' ', 'seconds')}"
        )
    elif since is not None:
        words.append(f"since {since.isoformat(' ', 'seconds')}")
    elif until is not None:
        words.append(f"until {until.isoformat(' ', 'seconds')}")
    return " ".join(words)


def stream(
    runner: LogSource,
    handle: str,
    pairs: list[tuple[str, int]],
    *,
    regex: str | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
    tail: bool = False,
    streams: Stream | None = None,
    out: IO[str] | None = None,
    color: str | None = None,
    timestamps: bool = False,
) -> Unread:
    """Prints the selected replicas' log lines until every reader is done.

    Returns how many replicas' logs could not be read (each is reported on stderr,
    and the others keep streaming), so the caller can exit non-zero
    (``Unread.exit_status``). ``color`` is
    ``auto`` (the default), ``always`` or ``never``. When ``regex``, ``since`` or
    ``until`` left nothing to print, a note on stderr says so. ``timestamps`` puts the
    time each line was written after its prefix (see ``_stamped``).
    """
    counting = _Counting(out or sys.stdout)
    failed = _stream(
        runner,
        handle,
        pairs,
        regex=regex,
        since=since,
        until=until,
        tail=tail,
        streams=streams,
        out=counting,
        color=color,
        timestamps=timestamps,
    )
    if not counting.wrote and not failed and (regex is not None or since or until):
        print(
            f"torchx log: no line of {handle} {_selection(regex, since, until)}",
            file=sys.stderr,
        )
    return failed


def _stream(
    runner: LogSource,
    handle: str,
    pairs: list[tuple[str, int]],
    *,
    regex: str | None,
    since: datetime | None,
    until: datetime | None,
    tail: bool,
    streams: Stream | None,
    out: Any,
    color: str | None,
    timestamps: bool = False,
) -> Unread:
    """The text sink of :func:`torchx.cli.log_reader.read`: each source's text with its
    ``role/N`` prefix at the start of each line (colored, stamped), errors on stderr."""
    from torchx.cli.log_reader import PAUSE, Ended, Failure, Text, read

    colored = use_color(color, out)
    matcher = None
    if timestamps and regex is not None:  # the lines are filtered here, once timed
        import re

        matcher, regex = re.compile(regex), None
    width = max((len(f"{r}/{k}") for r, k in pairs), default=0)

    def prefix_of(i: int, role: str, k: int) -> str:
        prefix = f"{role}/{k}".ljust(width)
        if colored:
            prefix = f"{_COLORS[i % len(_COLORS)]}{prefix}{_RESET}"
        return prefix + " "

    prefixes = [prefix_of(i, r, k) for i, (r, k) in enumerate(pairs)]
    nl_prefixes = ["\n" + p for p in prefixes]
    at_start = [True] * len(pairs)  # whether what was printed of each ends a line
    stampers = [_Stamper(matcher) for _ in pairs] if timestamps else None
    failed = outages = 0
    records = read(
        runner,
        handle,
        [(r, k, streams) for r, k in pairs],
        regex=regex,
        since=since,
        until=until,
        tail=tail,
        times="required" if timestamps else "none",
    )
    for record in records:
        if type(record) is Text:  # (type, not isinstance: once per block, cheaply)
            i, text = record.source, record.text
            if stampers is not None:
                text = stampers[i](record.time, text)
        elif type(record) is Ended and stampers is not None:
            i = record.source
            text = stampers[i].end()  # the last line, kept for a newline that never came
        else:
            text = ""
        if text:
            prefix = prefixes[i]
            body = text.replace("\n", nl_prefixes[i])
            ends = text.endswith("\n")
            if ends:
                body = body[: len(body) - len(prefix)]
            out.write(prefix + body if at_start[i] else body)
            at_start[i] = ends
        elif record is PAUSE:
            out.flush()
        elif isinstance(record, Failure):
            cut = not at_start[record.source]
            at_start[record.source] = True
            if record.fatal is not None:  # the command says it, in one line
                if cut:
                    out.write("\n")
                out.flush()
                raise record.fatal
            failed += 1
            outages += record.outage
            _fail(out, record.line, cut)
    out.flush()
    return Unread(failed, outages)


def check_selection(regex: str | None, since: datetime | None, until: datetime | None) -> None:
    """Refuses (one line, exit 2) a ``--regex`` that does not compile and an empty window.

    Checked once, before any replica is read: a bad regex would otherwise fail once
    per replica, and ``--since 1m --until 2h`` (a window that ends before it starts)
    would print nothing without a word.
    """
    from torchx.cli.errors import CliError

    if regex is not None:
        import re

        try:
            re.compile(regex)
        except re.error as e:
            raise CliError(f"bad --regex {regex!r}: {e}; e.g. --regex 'loss=[0-9.]+'") from None
    if since is not None and until is not None and since.timestamp() > until.timestamp():
        raise CliError(
            f"empty window: --since ({since.isoformat(' ', 'seconds')}) is after --until "
            f"({until.isoformat(' ', 'seconds')}); a duration means that long ago, so "
            "--since 2h --until 1m is the window from 2 hours to 1 minute ago"
        )


def parse_time(text: str) -> datetime:
    """An ISO 8601 time, or a duration ago: ``30s``, ``5m ago``, ``1h30m``, ``1d12h``.

    The one parser of ``torchx.specs.durations`` (``delete --older-than`` reads its
    durations there too); bad text is a ``SpecError``, one line, exit 2.
    """
    from torchx.specs.durations import parse_time as _parse_time

    return _parse_time(text)
