"""The one reader of ``torchx log`` (:func:`read`), and its text sink: the logs of many
replicas at once, each line prefixed ``role/N`` (:func:`stream`).

:func:`read` yields records: text of a source (a replica, or one stream of it) with
the time it was seen where asked for, a source read to its end, a source that could
not be read (an outage or not), and pauses (nothing new: flush). Two sinks print them:
:func:`stream` as text, ``torchx.cli.log_json`` as ``LogLine`` documents; so both have
the same errors, exit statuses (:class:`Unread`) and, through
``torchx.cli.log_attempts``, the same following across a retried app's attempts.

Lines of one replica stay in order and lines of different replicas never interleave
mid-line. Prefixes are colored when stdout is a terminal, unless ``NO_COLOR`` is set
or ``--color`` says otherwise (:func:`use_color`). When a window
(``--since``/``--until``) or ``--regex`` selected no line at all, a note on stderr says
so, rather than a silence that looks like an empty log.

Text moves in blocks, not lines: when a scheduler's log iterable offers ``blocks(size)``
(the optional protocol ``torchx.runner.logs.BlockLog``/``PolledLog``, which the local and
Slurm schedulers' logs and any ``torchx.schedulers.helpers.polling.Polled`` keep: the same text
in blocks of whole lines), each block is one record, prefixed with one ``str.replace``
and written at once, so a million-line log prints in a fraction of a second. Other
schedulers' iterables are read line by line.

One source is read on the calling thread. Several sources whose iterables can be
polled without waiting (``poll(size)``, which yields ``""`` when nothing is new) are
all read on the calling thread too, in turn, which sleeps only
when none had anything (20 ms, doubling up to 100 ms while all stay quiet): following
128 replicas costs one thread, not 128 polling threads. Other sources (and any read
with times) are read by one thread each, feeding a bounded queue the calling thread
yields from. A line delivered in pieces (a very long one) stays whole: the turn stays
with its source (or, with threads, it is queued under a lock that the other readers
wait for).

Following (``tail``), credentials the backend refuses while a log is read end the
command (``torchx.cli._runtime.following``: the app's state is unknown, exit 4, one
line), as they do when its status is asked: every other log would be refused too.
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


# --- the reader: records of every source, for a sink (text here, JSON in log_json) ---


class Text:
    """A record of :func:`read`: text of source number ``source`` (a block of whole
    lines, or a piece of one: a line may come in pieces), seen at ``time`` (seconds since
    the epoch, where times were asked for and the log keeps them, else None)."""

    __slots__ = ("source", "text", "time")

    def __init__(self, source: int, time: float | None, text: str) -> None:
        self.source = source
        self.time = time
        self.text = text


class Ended:
    """A record of :func:`read`: source number ``source`` was read to its end."""

    __slots__ = ("source",)

    def __init__(self, source: int) -> None:
        self.source = source


class Failure:
    """A record of :func:`read`: source number ``source`` could not be read (on); no
    record of it follows. ``line`` says so (for stderr), ``outage``: the backend could not
    be asked (:func:`torchx.cli.errors.is_outage`). ``fatal``: the error that ends the
    command instead (credentials refused while following: the app's state is unknown,
    and every other log would be refused too), else None."""

    __slots__ = ("fatal", "line", "outage", "source")

    def __init__(
        self, source: int, line: str, outage: bool, fatal: BaseException | None = None
    ) -> None:
        self.source = source
        self.line = line
        self.outage = outage
        self.fatal = fatal


#: A record of :func:`read`: nothing more for now (the reader waits): a sink flushes.
PAUSE = object()


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


def read(
    runner: LogSource,
    handle: str,
    sources: Sequence[tuple[str, int, Stream | None]],
    *,
    regex: str | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
    tail: bool = False,
    times: str = "none",
) -> Iterator[object]:
    """The one reader of ``torchx log``: the records of every source's log until each is
    read to its end (or could not be read), for a sink to print (text: :func:`stream`;
    JSON: ``torchx.cli.log_json``).

    A source is ``(role, replica id, streams)``. The records are :class:`Text`,
    :class:`Ended`, :class:`Failure` and :data:`PAUSE`; the text of one source comes in
    order, and a line in pieces is never split by another source's text. ``times``:
    ``"none"`` (no times, text read in blocks), ``"kept"`` (each text with its time
    where the log keeps times, ``timed(size)``) or ``"required"`` (``--timestamps``:
    a log without times is a ``CliError``, up front if the first one has none). A
    source that fails is a :class:`Failure` and the others go on; under ``tail`` a
    refusal of the credentials is ``fatal``. How the sources are read: see the module.
    """
    # bytes read at a time per source: 64 KiB for one, less for many (bounded memory)
    block = max(4096, min(1 << 16, (1 << 20) // max(len(sources), 1)))

    def open_log(i: int) -> Iterable[str]:
        role, k, streams = sources[i]
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

    def failure(i: int, e: Exception) -> Failure:
        from torchx.cli.errors import is_outage

        role, k, _ = sources[i]
        line = f"torchx log: error reading the log of {role}/{k}: {type(e).__name__}: {e}\n"
        fatal = None
        if tail:  # following: the app runs on, its state unknown (torchx.cli._runtime)
            from torchx.schedulers.contract.errors import AuthenticationError

            fatal = e if isinstance(e, AuthenticationError) else None
        return Failure(i, line, is_outage(e), fatal)

    def texts(log: Iterable[str]) -> Iterator[tuple[float | None, str]]:
        timed = getattr(log, "timed", None) if times != "none" else None
        if callable(timed):
            yield from timed(block)
            return
        if times == "required":
            from torchx.cli.errors import CliError

            raise CliError(
                "--timestamps: this scheduler's logs carry no times (the local scheduler's do)"
            )
        for text in _texts(log, block):
            yield None, text

    # the first source's log, opened once for every path below (an error opening it is
    # a Failure, whichever way the logs are read)
    try:
        first: Iterable[str] | Exception = open_log(0)
    except Exception as e:
        first = e
    if (
        times == "required"
        and not isinstance(first, Exception)
        and not callable(getattr(first, "timed", None))
    ):
        # a scheduler whose logs hold no times: said once, up front, not per replica
        from torchx.cli.errors import CliError

        raise CliError(
            f"--timestamps: the logs of {handle} carry no times (its scheduler keeps "
            "none: the local scheduler's logs do); leave out --timestamps"
        )

    if len(sources) == 1:  # no thread, no queue
        try:
            if isinstance(first, Exception):
                raise first
            for t, text in texts(first):
                yield Text(0, t, text)
                if tail:
                    yield PAUSE
        except Exception as e:  # after what was read
            yield failure(0, e)
            return
        yield Ended(0)
        return

    # several sources: polled in turn by this thread if their logs allow it
    if callable(getattr(first, "poll", None)) and times == "none":
        logs: list[Iterable[str] | Exception] = [first]
        for i in range(1, len(sources)):
            try:
                logs.append(open_log(i))
            except Exception as e:
                logs.append(e)
        if all(isinstance(x, Exception) or callable(getattr(x, "poll", None)) for x in logs):
            yield from _in_turn(logs, block, failure)
            return

    names = [f"log-{r}-{k}" + (f"-{s.value}" if s is not None else "") for r, k, s in sources]
    yield from _threads(first, names, open_log, texts, failure)


def _in_turn(
    logs: list[Iterable[str] | Exception],
    block: int,
    failure: Callable[[int, Exception], Failure],
) -> Iterator[object]:
    """The records of the polled logs, read by this one thread source after source; see
    the module."""
    import time

    readers: list[tuple[int, Iterator[str]]] = []
    for i, log in enumerate(logs):
        if isinstance(log, Exception):
            yield failure(i, log)
        else:
            readers.append((i, log.poll(block)))  # type: ignore[attr-defined]
    pause = _POLL_MIN
    while readers:
        wrote = False
        for reader in list(readers):
            i, texts = reader
            turn = 0
            ends = True  # a turn starts at the start of a line
            try:
                for text in texts:
                    if text:
                        yield Text(i, None, text)
                        wrote = True
                        turn += 1
                        ends = text.endswith("\n")
                        if ends and turn >= _TURN:
                            break
                    elif ends:
                        break  # nothing new here: the next source's turn
                    else:  # quiet in the middle of a line: it stays whole, so we wait
                        yield PAUSE
                        time.sleep(_POLL_MIN)
                else:
                    readers.remove(reader)  # read to its end
                    yield Ended(i)
            except Exception as e:  # the other sources go on
                readers.remove(reader)
                yield failure(i, e)
        if wrote:
            yield PAUSE
            pause = _POLL_MIN
        elif readers:
            time.sleep(pause)
            pause = min(pause * 2, _POLL_MAX)


def _threads(
    first: Iterable[str] | Exception,
    names: list[str],
    open_log: Callable[[int], Iterable[str]],
    texts: Callable[[Iterable[str]], Iterator[tuple[float | None, str]]],
    failure: Callable[[int, Exception], Failure],
) -> Iterator[object]:
    """The records of the sources read by one thread each (named ``names``),
    through a bounded queue; see the module."""
    import queue
    import threading

    count = len(names)
    q: queue.Queue[object] = queue.Queue(maxsize=32)
    whole_line = threading.Lock()  # held by a reader while it queues a line in pieces

    def run(i: int) -> None:
        held = False
        end: object
        try:
            log = open_log(i) if i else first
            if isinstance(log, Exception):
                raise log
            for t, text in texts(log):
                if not held:
                    whole_line.acquire()
                    held = True
                q.put(Text(i, t, text))
                if text.endswith("\n"):
                    whole_line.release()
                    held = False
            end = Ended(i)
        except Exception as e:  # the other sources go on
            end = failure(i, e)
        try:
            if not held:
                whole_line.acquire()
                held = True
            q.put(end)  # right after this source's cut line, if it was cut
        finally:
            whole_line.release()

    threads = [
        threading.Thread(target=run, args=(i,), daemon=True, name=names[i]) for i in range(count)
    ]
    for t in threads:
        t.start()
    remaining = count
    while remaining:
        item = q.get()
        if type(item) is not Text:
            remaining -= 1
        yield item
        if q.empty():
            yield PAUSE


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
    """The text sink of :func:`read`: each source's text with its ``role/N`` prefix at
    the start of each line (colored, stamped), errors on stderr."""
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
