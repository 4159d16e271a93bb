"""A log that one thread can follow among many: lines, blocks of lines, or a poll.

``torchx log`` and ``torchx run --log`` follow every replica of an app. A log iterable
that only blocks costs one thread per replica (128 pods: 128 threads, each waking up to
look for more). One that can be *polled* lets the CLI follow them all on one thread: it
asks each in turn for what is new, and sleeps only when none had anything. That is the
optional protocol :class:`torchx.runner.logs.PolledLog` describes, which
``log_iter``'s result may offer besides being iterable:

* ``blocks(size)``: the same text in blocks of whole lines (what a printer wants);
* ``poll(size)``: the text of ``blocks``, but ``""`` where it would wait.

:class:`Polled` gives both (and plain iteration) to any *polled line source*: a function
returning a fresh iterator that yields lines, each ending in ``\\n``, or ``""`` when
nothing is new yet; it never waits itself. The public followers make such sources:
:func:`torchx.schedulers.helpers.follow.follow_file` with ``polled=True``,
:func:`torchx.schedulers.helpers.paged.paged_lines` and :func:`torchx.schedulers.helpers.merge.merge_lines`::

    from torchx.schedulers.helpers.follow import follow_file
    from torchx.schedulers.helpers.polling import Polled

    def log_iter(self, app_id, role_name, k=0, ..., should_tail=False, ...):
        path = self._log_path(app_id, role_name, k)
        done = lambda: self._ended(app_id)
        return Polled(lambda: follow_file(path, should_tail=should_tail, is_done=done, polled=True))

Iterating a :class:`Polled` (or ``blocks``) waits where the source says ``""``: from
:data:`POLL_MIN` seconds, doubling to :data:`POLL_MAX` while the source stays quiet.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable, Iterator

__all__ = ["BLOCK", "POLL_MAX", "POLL_MIN", "Polled", "PolledSource", "matching_lines"]

#: Seconds a blocking reader first waits when its source has nothing new.
POLL_MIN = 0.02
#: ... doubling up to this while the source stays quiet.
POLL_MAX = 0.1
#: Default bytes of text per block (``blocks``/``poll``).
BLOCK = 1 << 16

#: A fresh iterator of lines (each ending in ``\\n``), ``""`` when nothing is new yet.
PolledSource = Callable[[], Iterator[str]]


class Polled:
    """The lines of a polled source, iterable again and again, with ``blocks`` and ``poll``.

    Args:
        source: returns a fresh iterator over the log (see the module)
        sleep: how a blocking reader waits (for tests)
    """

    def __init__(self, source: PolledSource, *, sleep: Callable[[float], None] = time.sleep):
        self.source = source
        self.sleep = sleep

    def __iter__(self) -> Iterator[str]:
        return self._waiting(self.source())

    def blocks(self, size: int = BLOCK) -> Iterator[str]:
        """The text in blocks of whole lines of about ``size`` characters, waiting as needed."""
        return self._waiting(self.poll(size))

    def _waiting(self, polled: Iterable[str]) -> Iterator[str]:
        """``polled`` without its ``""`` (nothing right now): a wait instead, doubling from
        :data:`POLL_MIN` to :data:`POLL_MAX` while nothing comes, short again once it does."""
        pause = POLL_MIN
        for text in polled:
            if text:
                pause = POLL_MIN
                yield text
            else:
                self.sleep(pause)
                pause = min(pause * 2, POLL_MAX)

    def poll(self, size: int = BLOCK) -> Iterator[str]:
        """The text of :meth:`blocks`, but ``""`` where it would wait: it never waits.

        A block is yielded once it holds ``size`` characters or the source has nothing
        more right now, so what is there is never held back.
        """
        size = max(size, 1)
        pending: list[str] = []
        held = 0
        for line in self.source():
            if line:
                pending.append(line)
                held += len(line)
                if held < size:
                    continue
            if pending:
                yield "".join(pending)
                pending = []
                held = 0
            if not line:
                yield ""
        if pending:
            yield "".join(pending)


def matching_lines(regex: str, lines: Iterator[str]) -> Iterator[str]:
    """The lines in which ``regex`` matches (``re.search``); the ``""`` of a polled source too.

    ``filter_regex`` of :mod:`torchx.schedulers.contract.api` for polled sources: it must pass
    ``""`` on, or a caller polling a quiet log would spin inside the filter.
    """
    pattern = re.compile(regex)
    return (line for line in lines if not line or pattern.search(line))
