"""What a log iterable may offer beyond its lines, so that one thread follows many replicas.

``Scheduler.log_iter`` (and ``Runner.log_lines``) return an iterable of lines. A printer
following several replicas at once (``torchx log``, ``torchx run --log``) reads more
than lines when the iterable offers it, checked with ``callable(getattr(log, name,
None))`` (the CLI imports nothing to check):

* :class:`BlockLog`: ``blocks(size)``, the same text in blocks of whole lines, written
  at once (a million-line log prints in a fraction of a second);
* :class:`PolledLog`: also ``poll(size)``, the text of ``blocks`` but ``""`` where it
  would wait. When every replica's log offers it, the CLI follows them all on its own
  thread, in turn, sleeping only when none had anything: 128 pods cost one thread, not
  128. Otherwise each replica is read by a thread of its own.

A scheduler plugin gets both by returning a :class:`torchx.schedulers.helpers.polling.Polled`
over a polled source (:func:`~torchx.schedulers.helpers.follow.follow_file` with
``polled=True``, :func:`~torchx.schedulers.helpers.paged.paged_lines`,
:func:`~torchx.schedulers.helpers.merge.merge_lines`); the local scheduler's logs offer both.

The rules a ``poll`` keeps: it never sleeps or blocks for long (at most one API call
or file read per block); ``""`` means nothing new *now*, and the iterator ends when the
log has ended; a block holds whole lines (a line longer than ``size`` may come in
pieces, only the last ending in ``\\n``, and then no ``""`` comes between them).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Protocol, runtime_checkable

__all__ = ["BlockLog", "PolledLog"]


@runtime_checkable
class BlockLog(Protocol):
    """A log iterable that also gives its text in blocks of whole lines."""

    def __iter__(self) -> Iterator[str]: ...

    def blocks(self, size: int = ...) -> Iterator[str]:
        """The log's text in blocks of whole lines of about ``size``, waiting as needed."""
        ...


@runtime_checkable
class PolledLog(BlockLog, Protocol):
    """A log iterable that can be polled: the text of ``blocks``, ``""`` where it would wait."""

    def poll(self, size: int = ...) -> Iterator[str]:
        """Like ``blocks``, but never waits: ``""`` means nothing new yet (see the module)."""
        ...
