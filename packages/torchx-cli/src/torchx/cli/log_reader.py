"""The one reader of ``torchx log`` (:func:`read`): the logs of many replicas (or of
each stream of them) as records, for a sink to print: text (``torchx.cli.logs.stream``)
or JSON (``torchx.cli.log_json``), so both have the same errors, exit statuses and,
through ``torchx.cli.log_attempts``, the same following across a retried app's attempts.

:func:`read` yields records: text of a source (a replica, or one stream of it) with
the time it was seen where asked for (:class:`Text`), a source read to its end
(:class:`Ended`), a source that could not be read, an outage or not (:class:`Failure`),
and pauses (:data:`PAUSE`: nothing new, a sink flushes). Text of one source comes in
order, and a line in pieces is never split by another source's text.

Text moves in blocks, not lines: when a scheduler's log iterable offers ``blocks(size)``
(the optional protocol ``torchx.runner.logs.BlockLog``/``PolledLog``, which the local and
Slurm schedulers' logs and any ``torchx.schedulers.helpers.polling.Polled`` keep: the same text
in blocks of whole lines), each block is one record, so a million-line log prints in a
fraction of a second. Other schedulers' iterables are read line by line.

One source is read on the calling thread. Several sources whose iterables can be
polled without waiting (``poll(size)``, which yields ``""`` when nothing is new) are
all read on the calling thread too, in turn, which sleeps only
when none had anything (20 ms, doubling up to 100 ms while all stay quiet): following
128 replicas costs one thread, not 128 polling threads. Other sources (and any read
with times) are read by one thread each, feeding a bounded queue the calling thread
yields from. A line delivered in pieces (a very long one) stays whole: the turn stays
with its source (or, with threads, it is queued under a lock that the other readers
wait for).

Following (``tail``), credentials the backend refuses while a log is read are a
``fatal`` :class:`Failure`: the sink ends the command (``torchx.cli._runtime.following``:
the app's state is unknown, exit 4, one line), as when its status is asked: every other
log would be refused too.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing costs milliseconds: the quick path of `torchx log` uses this
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator, Sequence
    from datetime import datetime
    from typing import Protocol

    from torchx.schedulers.contract.api import Stream

    # What the reader uses of a Runner: the real one, or the quick path's plain
    # stand-in (torchx.cli._quick.standins).
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


def _texts(lines: Iterable[str], size: int) -> Iterator[str]:
    """Text of a log iterable: its blocks if it has them, else its lines (each ended)."""
    blocks = getattr(lines, "blocks", None)
    if callable(blocks):
        yield from blocks(size)
        return
    for line in lines:
        yield line if line.endswith("\n") else line + "\n"


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
    read to its end (or could not be read), for a sink to print (text:
    ``torchx.cli.logs.stream``; JSON: ``torchx.cli.log_json``).

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
