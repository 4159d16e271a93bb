"""Merging a replica's stdout and stderr into one log, each stream's order kept, on one thread.

A backend that keeps a replica's two streams apart (Slurm's ``.out`` and ``.err``
files, two API calls) answers ``log_iter(streams=COMBINED)`` by merging them:

    from torchx.schedulers.helpers.follow import follow_file
    from torchx.schedulers.helpers.merge import merge_lines
    from torchx.schedulers.helpers.polling import Polled

    def source(path):
        return follow_file(path, should_tail=tail, is_done=done, polled=True)

    return Polled(lambda: merge_lines([source(out_path), source(err_path)]))

:func:`merge_lines` reads *polled sources* (iterators yielding lines, or ``""`` when
nothing is new yet; see :mod:`torchx.schedulers.helpers.polling`) in turn: from each, what it
has now, then the next. What it guarantees:

* every line of every source comes out exactly once, and the lines of one source in
  that source's order (the two streams of a process have no order between them that a
  reader could know, so none is made up: lines come in the order they were found);
* it ends when every source has ended;
* it never waits: when no source has anything, it yields ``""`` itself, so the merged
  log is a polled source too, followed among many on one thread (wrap it in
  :class:`~torchx.schedulers.helpers.polling.Polled` for plain iteration, which then waits).

A source that is a plain iterator (it waits instead of yielding ``""``) works too; the
other sources then wait while it does.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

__all__ = ["TURN", "merge_lines"]

#: Lines taken from one source before the turn goes to the next (so a busy stream does
#: not hold back a quieter one).
TURN = 256


def merge_lines(sources: Iterable[Iterator[str]]) -> Iterator[str]:
    """The lines of every source, interleaved, each source's in its order (see the module)."""
    active = [iter(source) for source in sources]
    while active:
        found = False
        for source in list(active):
            for taken, line in enumerate(source, 1):
                if not line:
                    break  # nothing new in this one: the next one's turn
                found = True
                yield line
                if taken >= TURN:
                    break
            else:
                active.remove(source)  # ended
        if active and not found:
            yield ""
