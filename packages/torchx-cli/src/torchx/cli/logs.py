"""Streaming the logs of many replicas at once, each line prefixed ``role/N``.

Lines of one replica stay in order and lines of different replicas never interleave
mid-line. Prefixes are colored when stdout is a terminal, unless ``NO_COLOR`` is set
or ``--color`` says otherwise (:func:`use_color`). When a window
(``--since``/``--until``) or ``--regex`` selected no line at all, a note on stderr says
so, rather than a silence that looks like an empty log.

Text moves in blocks, not lines: when a scheduler's log iterable offers ``blocks(size)``
(the optional protocol ``torchx.runner.logs.BlockLog``/``PolledLog``, which the local and
Slurm schedulers' logs and any ``torchx.schedulers.helpers.polling.Polled`` keep: the same text
in blocks of whole lines), each block is
prefixed with one ``str.replace`` and written at once, so a million-line log prints in
a fraction of a second. Other schedulers' iterables are read line by line.

One replica is read on the calling thread. Several replicas whose iterables can be
polled without waiting (``poll(size)``, which yields ``""`` when nothing is new) are
all read on the calling thread too, in turn, which sleeps only
when none had anything (20 ms, doubling up to 100 ms while all stay quiet): following
128 replicas costs one thread, not 128 polling threads. Other schedulers' replicas are
read by one thread each, feeding a bounded queue the calling thread prints from. A line
delivered in pieces (a very long one) stays whole: the turn stays with its replica (or,
with threads, it is queued under a lock that the other readers wait for).
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False  # typing costs milliseconds: the quick path of `torchx log` uses this
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator, Sequence
    from datetime import datetime
    from typing import IO, Any, Protocol

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

    class LogSource(Protocol):
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
        ) -> Iterable[str]: ...


#: Sleeps of the calling thread when no polled replica had anything new (seconds).
_POLL_MIN = 0.02
_POLL_MAX = 0.1
#: Blocks printed from one polled replica before the turn goes to the next.
_TURN = 8

_COLORS = ["\033[32m", "\033[34m", "\033[35m", "\033[36m", "\033[33m", "\033[31m"]
_RESET = "\033[0m"
_DONE = object()


class _Failed(str):
    """A reader's error line: it goes to stderr (never among the log lines on stdout),
    and counts as a failure; ``outage``: the backend could not be asked."""

    outage: bool

    def __new__(cls, text: str, outage: bool = False) -> _Failed:
        self = super().__new__(cls, text)
        self.outage = outage
        return self


class Unread(int):
    """What :func:`stream` returns: how many replicas' logs could not be read (each said
    on stderr), ``outages`` of them because the backend could not be asked.

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


def _texts(lines: Iterable[str], size: int) -> Iterator[str]:
    """Text of a log iterable: its blocks if it has them, else its lines (each ended)."""
    blocks = getattr(lines, "blocks", None)
    if callable(blocks):
        yield from blocks(size)
        return
    for line in lines:
        yield line if line.endswith("\n") else line + "\n"


def _stamped(lines: Iterable[str], size: int, matcher: Any = None) -> Iterator[str]:
    """Text of a log iterable with the time each line was written at its start.

    ``2026-11-25 09:15:00.123 the line``, local time to the millisecond, from the log's
    ``timed(size)`` (the optional protocol of the local scheduler's logs: text blocks
    with the time they were seen). ``matcher`` (a compiled ``--regex``) keeps only the
    lines it finds something in. A log without times cannot be stamped: that is a
    ``CliError`` naming the option, reported in the replica's place.
    """
    from datetime import datetime

    timed = getattr(lines, "timed", None)
    if not callable(timed):
        from torchx.cli.errors import CliError

        raise CliError(
            "--timestamps: this scheduler's logs carry no times (the local scheduler's do)"
        )
    at_start = True
    pending = ""  # with a matcher: the start of a line whose end is still to come
    stamp = ""
    for t, text in timed(size):
        stamp = datetime.fromtimestamp(t).isoformat(" ", "milliseconds") + " "
        if matcher is not None:  # whole lines only, to match them
            whole, nl, pending = (pending + text).rpartition("\n")
            kept = [line for line in whole.split("\n") if matcher.search(line)] if nl else []
            if kept:
                yield "".join(f"{stamp}{line}\n" for line in kept)
            continue
        body = text.replace("\n", "\n" + stamp)
        if text.endswith("\n"):
            body = body[: len(body) - len(stamp)]
        yield (stamp + body) if at_start else body
        at_start = text.endswith("\n")
    if pending and matcher is not None and matcher.search(pending):
        yield f"{stamp}{pending}\n"


def _prefixed(texts: Iterable[str], prefix: str, idle: bool = False) -> Iterator[tuple[str, bool]]:
    """Each text with ``prefix`` at the start of each of its lines; and whether it ends one.

    An empty text (a polled log with nothing new) is skipped, or passed on as ``""``
    with ``idle``: then its flag says whether the text so far ended a line.
    """
    at_start = True
    nl_prefix = "\n" + prefix
    for text in texts:
        if not text:
            if idle:
                yield "", at_start
            continue
        body = text.replace("\n", nl_prefix)
        ends = text.endswith("\n")
        if ends:
            body = body[: len(body) - len(prefix)]
        yield (prefix + body if at_start else body), ends
        at_start = ends


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
    colored = use_color(color, out)
    matcher = None
    if timestamps and regex is not None:  # the lines are filtered here, once timed
        import re

        matcher, regex = re.compile(regex), None
    # bytes read at a time per replica: 64 KiB for one, less for many (bounded memory)
    block = max(4096, min(1 << 16, (1 << 20) // max(len(pairs), 1)))
    width = max((len(f"{r}/{k}") for r, k in pairs), default=0)

    def prefix_of(i: int, role: str, k: int) -> str:
        prefix = f"{role}/{k}".ljust(width)
        if colored:
            prefix = f"{_COLORS[i % len(_COLORS)]}{prefix}{_RESET}"
        return prefix + " "

    def open_log(role: str, k: int) -> Iterable[str]:
        return runner.log_lines(
            handle,
            role,
            k,
            regex=regex,
            since=since,
            until=until,
            should_tail=tail,
            streams=streams,
        )

    # the first replica's log, opened once for every path below (an error opening it is
    # reported on stderr, by whichever way the logs are read)
    try:
        first: Iterable[str] | Exception = open_log(*pairs[0])
    except Exception as e:
        first = e
    if (
        timestamps
        and not isinstance(first, Exception)
        and not callable(getattr(first, "timed", None))
    ):
        # a scheduler whose logs hold no times: said once, up front, not per replica
        from torchx.cli.errors import CliError

        raise CliError(
            f"--timestamps: the logs of {handle} carry no times (its scheduler keeps "
            "none: the local scheduler's logs do); leave out --timestamps"
        )

    def texts(
        role: str, k: int, prefix: str, lines: Iterable[str] | None = None
    ) -> Iterator[tuple[str, bool]]:
        if lines is None:
            lines = open_log(role, k)
        if timestamps:
            return _prefixed(_stamped(lines, block, matcher), prefix)
        return _prefixed(_texts(lines, block), prefix)

    names = {prefix_of(i, r, k): f"{r}/{k}" for i, (r, k) in enumerate(pairs)}

    def failure(prefix: str, e: Exception) -> _Failed:
        from torchx.cli.errors import is_outage

        what = f"{type(e).__name__}: {e}"
        text = f"torchx log: error reading the log of {names[prefix]}: {what}\n"
        return _Failed(text, is_outage(e))

    if len(pairs) == 1:  # no thread, no queue
        role, k = pairs[0]
        prefix = prefix_of(0, role, k)
        at_start = True  # where a failure's line goes
        try:
            if isinstance(first, Exception):
                raise first
            for text, ends in texts(role, k, prefix, first):
                out.write(text)
                at_start = ends
                if tail:
                    out.flush()
        except BrokenPipeError:  # the reader of our output went away (torchx log | head)
            raise
        except Exception as e:  # reported on stderr, after what was read
            line = failure(prefix, e)
            _fail(out, line, not at_start)
            return Unread(1, int(line.outage))
        out.flush()
        return Unread()

    # several replicas: polled in turn by this thread if their logs allow it
    if callable(getattr(first, "poll", None)) and not timestamps:
        logs: list[Iterable[str] | Exception] = [first]
        for role, k in pairs[1:]:
            try:
                logs.append(open_log(role, k))
            except Exception as e:
                logs.append(e)
        if all(isinstance(x, Exception) or callable(getattr(x, "poll", None)) for x in logs):
            prefixes = [prefix_of(i, r, k) for i, (r, k) in enumerate(pairs)]
            return _poll_in_turn(list(zip(prefixes, logs)), block, out, failure)

    import queue  # else: one reader thread each
    import threading

    q: queue.Queue[Any] = queue.Queue(maxsize=32)
    whole_line = threading.Lock()  # held by a reader while it queues a line in pieces

    def read(i: int, role: str, k: int) -> None:
        prefix = prefix_of(i, role, k)
        held = False
        ends = True
        try:
            if i == 0 and isinstance(first, Exception):
                raise first
            opened = first if i == 0 and not isinstance(first, Exception) else None
            for text, ends in texts(role, k, prefix, opened):
                if not held:
                    whole_line.acquire()
                    held = True
                q.put(text)
                if ends:
                    whole_line.release()
                    held = False
        except Exception as e:  # reported, and the other replicas keep streaming
            if not held:
                whole_line.acquire()
                held = True
            line = failure(prefix, e)
            q.put(_Failed(("" if ends else "\n") + line, line.outage))  # \n: for stdout
        finally:
            if held:
                whole_line.release()
            q.put(_DONE)

    threads = [
        threading.Thread(target=read, args=(i, r, k), daemon=True, name=f"log-{r}-{k}")
        for i, (r, k) in enumerate(pairs)
    ]
    for t in threads:
        t.start()
    remaining = len(threads)
    failed = outages = 0
    while remaining:
        item = q.get()
        if item is _DONE:
            remaining -= 1
            continue
        if isinstance(item, _Failed):
            failed += 1
            outages += item.outage
            mid_line = item.startswith("\n")
            _fail(out, item[1:] if mid_line else item, mid_line)
            continue
        out.write(item)
        if q.empty():
            out.flush()
    out.flush()
    return Unread(failed, outages)


def _poll_in_turn(
    logs: list[tuple[str, Iterable[str] | Exception]],
    block: int,
    out: IO[str],
    failure: Callable[[str, Exception], _Failed],
) -> Unread:
    """Prints the polled logs from this one thread, replica after replica; see the module.

    Returns how many could not be read.
    """
    import time

    failed: list[_Failed] = []
    readers: list[tuple[str, Iterator[tuple[str, bool]]]] = []
    for prefix, lines in logs:
        if isinstance(lines, Exception):
            failed.append(failure(prefix, lines))
            _fail(out, failed[-1], False)
        else:
            readers.append((prefix, _prefixed(lines.poll(block), prefix, idle=True)))  # type: ignore[attr-defined]
    pause = _POLL_MIN
    while readers:
        wrote = False
        for reader in list(readers):
            prefix, texts = reader
            turn = 0
            ends = True
            try:
                for text, ends in texts:
                    if text:
                        out.write(text)
                        wrote = True
                        turn += 1
                        if ends and turn >= _TURN:
                            break
                    elif ends:
                        break  # nothing new here: the next replica's turn
                    else:  # quiet in the middle of a line: it stays whole, so we wait
                        out.flush()
                        time.sleep(_POLL_MIN)
                else:
                    readers.remove(reader)  # read to its end
            except BrokenPipeError:  # the reader of our output went away
                raise
            except Exception as e:  # reported, and the other replicas keep streaming
                failed.append(failure(prefix, e))
                _fail(out, failed[-1], not ends)
                readers.remove(reader)
        if wrote:
            out.flush()
            pause = _POLL_MIN
        elif readers:
            time.sleep(pause)
            pause = min(pause * 2, _POLL_MAX)
    out.flush()
    return Unread(len(failed), sum(line.outage for line in failed))


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
