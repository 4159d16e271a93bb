"""Streaming the logs of many replicas at once, each line prefixed ``role/N``.

Lines of one replica stay in order and lines of different replicas never interleave
mid-line. Prefixes are colored when stdout is a terminal.

Text moves in blocks, not lines: when a scheduler's log iterable offers ``blocks(size)``
(the local scheduler's does: the same text in blocks of whole lines), each block is
prefixed with one ``str.replace`` and written at once, so a million-line log prints in
a fraction of a second. Other schedulers' iterables are read line by line. One replica
is read on the calling thread; several are read by one thread each, feeding a bounded
queue the calling thread prints from. A line delivered in pieces (a very long one) is
queued under a lock that the other readers wait for, so that it stays whole.
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False  # typing costs milliseconds: the quick path of `torchx log` uses this
if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator, Sequence
    from datetime import datetime
    from typing import IO, Any, Protocol

    from torchx.schedulers.api import Stream

    # What these functions read of an AppStatus and use of a Runner: the real ones, or
    # the quick path's plain stand-ins (torchx.cli._quick).
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


_COLORS = ["\033[32m", "\033[34m", "\033[35m", "\033[36m", "\033[33m", "\033[31m"]
_RESET = "\033[0m"
_DONE = object()


class _Failed(str):
    """A reader's error line: printed like a log line, counted as a failure."""


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


def _texts(lines: Iterable[str], size: int) -> Iterator[str]:
    """Text of a log iterable: its blocks if it has them, else its lines (each ended)."""
    blocks = getattr(lines, "blocks", None)
    if callable(blocks):
        yield from blocks(size)
        return
    for line in lines:
        yield line if line.endswith("\n") else line + "\n"


def _prefixed(texts: Iterable[str], prefix: str) -> Iterator[tuple[str, bool]]:
    """Each text with ``prefix`` at the start of each of its lines; and whether it ends one."""
    at_start = True
    nl_prefix = "\n" + prefix
    for text in texts:
        if not text:
            continue
        body = text.replace("\n", nl_prefix)
        ends = text.endswith("\n")
        if ends:
            body = body[: len(body) - len(prefix)]
        yield (prefix + body if at_start else body), ends
        at_start = ends


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
) -> int:
    """Prints the selected replicas' log lines until every reader is done.

    Returns how many replicas' logs could not be read (each is reported in its place,
    and the others keep streaming), so the caller can exit non-zero.
    """
    out = out or sys.stdout
    color = out.isatty()
    # bytes read at a time per replica: 64 KiB for one, less for many (bounded memory)
    block = max(4096, min(1 << 16, (1 << 20) // max(len(pairs), 1)))
    width = max((len(f"{r}/{k}") for r, k in pairs), default=0)

    def prefix_of(i: int, role: str, k: int) -> str:
        prefix = f"{role}/{k}".ljust(width)
        if color:
            prefix = f"{_COLORS[i % len(_COLORS)]}{prefix}{_RESET}"
        return prefix + " "

    def texts(role: str, k: int, prefix: str) -> Iterator[tuple[str, bool]]:
        lines: Iterable[str] = runner.log_lines(
            handle,
            role,
            k,
            regex=regex,
            since=since,
            until=until,
            should_tail=tail,
            streams=streams,
        )
        return _prefixed(_texts(lines, block), prefix)

    def failure(prefix: str, e: Exception) -> _Failed:
        return _Failed(f"{prefix}<error reading logs: {type(e).__name__}: {e}>\n")

    if len(pairs) == 1:  # no thread, no queue
        role, k = pairs[0]
        prefix = prefix_of(0, role, k)
        at_start = True  # where a failure's line goes
        try:
            for text, ends in texts(role, k, prefix):
                out.write(text)
                at_start = ends
                if tail:
                    out.flush()
        except Exception as e:  # reported like a log line
            out.write(("" if at_start else "\n") + failure(prefix, e))
            out.flush()
            return 1
        out.flush()
        return 0

    import queue  # several replicas: one reader thread each
    import threading

    q: queue.Queue[Any] = queue.Queue(maxsize=32)
    whole_line = threading.Lock()  # held by a reader while it queues a line in pieces

    def read(i: int, role: str, k: int) -> None:
        prefix = prefix_of(i, role, k)
        held = False
        ends = True
        try:
            for text, ends in texts(role, k, prefix):
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
            q.put(_Failed(("" if ends else "\n") + failure(prefix, e)))
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
    failed = 0
    while remaining:
        item = q.get()
        if item is _DONE:
            remaining -= 1
            continue
        if isinstance(item, _Failed):
            failed += 1
        out.write(item)
        if q.empty():
            out.flush()
    out.flush()
    return failed


def parse_time(text: str) -> datetime:
    """An ISO 8601 time, or a duration ago such as ``30s``, ``5m``, ``2h``, ``1d``."""
    import re
    from datetime import datetime, timedelta

    from torchx.cli.errors import CliError

    m = re.fullmatch(r"(\d+(?:\.\d+)?)([smhd])", text.strip())
    if m:
        unit = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days"}[m.group(2)]
        return datetime.now() - timedelta(**{unit: float(m.group(1))})
    try:
        return datetime.fromisoformat(text)
    except ValueError:
        raise CliError(
            f"bad time {text!r}: expected ISO 8601 (2026-11-22T10:00:00) or a duration ago (30s, 5m, 2h)"
        ) from None
