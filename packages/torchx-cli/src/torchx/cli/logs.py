"""Streaming the logs of many replicas at once, each line prefixed ``role/N``.

One reader thread per replica feeds a queue; the main thread prints, so lines of
one replica stay in order and lines never interleave mid-line. Prefixes are
colored when stdout is a terminal.
"""

from __future__ import annotations

import queue
import sys
import threading
from collections.abc import Iterable
from datetime import datetime
from typing import IO, TYPE_CHECKING, Any

if TYPE_CHECKING:
    from torchx.runner.api import Runner
    from torchx.schedulers.api import Stream
    from torchx.specs.api import AppStatus

_COLORS = ["\033[32m", "\033[34m", "\033[35m", "\033[36m", "\033[33m", "\033[31m"]
_RESET = "\033[0m"
_DONE = object()


class _Failed(str):
    """A reader's error line: printed like a log line, counted as a failure."""


def replicas_of(
    status: AppStatus, role: str | None, ids: list[int] | None
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


def stream(
    runner: Runner,
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
    q: queue.Queue[Any] = queue.Queue(maxsize=10_000)
    width = max((len(f"{r}/{k}") for r, k in pairs), default=0)

    def read(i: int, role: str, k: int) -> None:
        prefix = f"{role}/{k}".ljust(width)
        if color:
            prefix = f"{_COLORS[i % len(_COLORS)]}{prefix}{_RESET}"
        try:
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
            for line in lines:
                q.put(f"{prefix} {line if line.endswith(chr(10)) else line + chr(10)}")
        except Exception as e:  # reported, and the other replicas keep streaming
            q.put(_Failed(f"{prefix} <error reading logs: {type(e).__name__}: {e}>\n"))
        finally:
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
    from datetime import timedelta

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
