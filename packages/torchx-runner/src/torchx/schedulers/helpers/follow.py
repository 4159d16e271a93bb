"""Following a growing log file until a condition holds, without losing a line.

A scheduler whose replicas write their logs to files (the local scheduler; Slurm on a
shared filesystem; a vendor backend that syncs logs into a directory) implements
``log_iter(..., should_tail=True)`` with :func:`follow_file`: it reads the file to its
end, then polls for more until ``is_done()`` says the writer has finished, reads once
more (whatever was written before the end), and stops. The file may not exist yet
when following starts (a replica that has not started): it is waited for.

>>> import os, tempfile
>>> path = os.path.join(tempfile.mkdtemp(), "stdout.log")
>>> with open(path, "w") as f:
...     _ = f.write("epoch 1\\nepoch 2\\nlast line without newline")
>>> list(follow_file(path, should_tail=True, is_done=lambda: True))
['epoch 1\\n', 'epoch 2\\n', 'last line without newline\\n']

The contract ``is_done`` must keep for nothing to be lost: it returns True only once
everything the writer will ever write is in the file (e.g. the app's terminal state is
recorded after its output was flushed). It is called only when the reader has caught
up with the file, so an expensive check (a status call) runs at most once per poll.

With ``polled=True`` it never sleeps: where it would wait for more, it yields ``""``
and its caller looks elsewhere (the polled sources of :mod:`torchx.schedulers.helpers.polling`,
which :class:`~torchx.schedulers.helpers.polling.Polled` turns into a log one thread can follow
among many, and :func:`~torchx.schedulers.helpers.merge.merge_lines` merges).

A batch backend that writes one file per stream per replica (``BASE.out`` and
``BASE.err``: Slurm, LSF) follows a replica's log with three more pieces:
:func:`stream_files` (the files of the streams asked for), :class:`EveryInterval` (an
``is_done`` that asks the backend at most once per interval, so tailing never floods
it) and :func:`follow_files` (those files followed on one thread, merged);
:func:`replica_log` puts them together into such a scheduler's ``log_iter``, with
:func:`check_replica` refusing a role or replica the app does not have.

Files are read in 1 MiB chunks and decoded as UTF-8 (bad bytes replaced); memory is
bounded by the chunk size and the longest line, and a long line is yielded whole.
Polling rather than inotify: the standard library has no file-change notification.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Iterator, Mapping

TYPE_CHECKING = False  # not the typing module: this module is on the light paths
if TYPE_CHECKING:
    from torchx.schedulers.helpers.polling import Polled

__all__ = [
    "POLL_INTERVAL",
    "STATUS_INTERVAL",
    "EveryInterval",
    "check_replica",
    "follow_file",
    "follow_files",
    "replica_log",
    "stream_files",
]

#: Default seconds between two looks at a followed file that had nothing new.
POLL_INTERVAL = 0.02
#: Default seconds between two status calls of a followed replica log (:func:`replica_log`).
STATUS_INTERVAL = 1.0
_CHUNK = 1 << 20


def follow_file(
    path: str,
    *,
    should_tail: bool,
    is_done: Callable[[], bool],
    poll_interval: float = POLL_INTERVAL,
    polled: bool = False,
) -> Iterator[str]:
    """Yields the lines of ``path``, each ending in ``\\n``, following it while ``should_tail``.

    Without ``should_tail`` it reads what is there (nothing if the file does not exist)
    and stops. With it, it keeps reading until ``is_done()`` is true *and* the file has
    been read to its end. A final line without ``\\n`` is yielded (with one) at the end.
    ``polled``: yield ``""`` instead of sleeping ``poll_interval`` (see the module).
    """
    while not os.path.exists(path):
        if not should_tail or is_done():
            if not os.path.exists(path):  # it may have appeared just before the end
                return
            break
        if polled:
            yield ""
        else:
            time.sleep(poll_interval)
    with open(path, "rb", buffering=0) as f:
        partial: list[bytes] = []  # pieces of a line not ended yet (a long line grows here)
        finishing = False
        while True:
            data = f.read(_CHUNK)
            if data:
                cut = data.rfind(b"\n") + 1
                if not cut:
                    partial.append(data)
                    continue
                head = data[:cut]
                if partial:
                    partial.append(head)
                    head = b"".join(partial)
                    partial = []
                if cut < len(data):
                    partial.append(data[cut:])
                text = head.decode("utf-8", "replace")
                for line in text.split("\n")[:-1]:
                    yield line + "\n"
                continue
            if finishing or not should_tail:
                break
            if is_done():
                finishing = True  # one more pass: read what was written before the end
                continue
            if polled:
                yield ""
            else:
                time.sleep(poll_interval)
        if partial:
            yield b"".join(partial).decode("utf-8", "replace") + "\n"


def stream_files(base: str, streams: object = None) -> list[str]:
    """``BASE.out`` (stdout), ``BASE.err`` (stderr) or both (combined, and None), in that
    order; ``streams`` is a :class:`~torchx.schedulers.contract.api.Stream` or its value.

    >>> stream_files("/jobs/r-0", "stderr"), stream_files("/jobs/r-0")
    (['/jobs/r-0.err'], ['/jobs/r-0.out', '/jobs/r-0.err'])
    """
    name = str(getattr(streams, "value", streams) or "combined")
    return {
        "stdout": [base + ".out"],
        "stderr": [base + ".err"],
        "combined": [base + ".out", base + ".err"],
    }[name]


def follow_files(
    paths: list[str], *, should_tail: bool, is_done: Callable[[], bool]
) -> Iterator[str]:
    """The lines of ``paths`` on this one thread (:func:`follow_file`, ``polled``), each
    file's lines in order, merged (:func:`~torchx.schedulers.helpers.merge.merge_lines`); ``""``
    where a followed file has nothing new. A path that is there but is no file (a
    directory) is left out, as a missing log."""
    from torchx.schedulers.helpers.merge import merge_lines

    sources = [
        follow_file(p, should_tail=should_tail, is_done=is_done, polled=True)
        for p in paths
        if os.path.isfile(p) or not os.path.exists(p)
    ]
    return merge_lines(sources) if len(sources) > 1 else next(iter(sources), iter(()))


class EveryInterval:
    """An ``is_done`` for :func:`follow_file` that asks ``check`` at most once per ``interval``.

    ``is_done`` is called at every idle poll of a followed file (up to 50 times a
    second); asking the backend that often would flood it. ``check()`` says whether the
    app has ended (False when it could not tell: a transient failure); once it has,
    :attr:`ended` stays True and nothing is asked again.

    >>> answers = iter([False, True])
    >>> done = EveryInterval(0.0, lambda: next(answers))
    >>> done(), done(), done(), done.ended
    (False, True, True, True)
    """

    def __init__(self, interval: float, check: Callable[[], bool], *, ended: bool = False) -> None:
        self.interval = interval
        self.check = check
        #: whether the app was last seen ended
        self.ended = ended
        self._asked = time.monotonic()

    def __call__(self) -> bool:
        if self.ended or time.monotonic() - self._asked < self.interval:
            return self.ended
        self._asked = time.monotonic()
        self.ended = bool(self.check())
        return self.ended


def check_replica(replicas: Mapping[str, Iterable[int]], role: str, k: int, owner: str) -> None:
    """Raises a one-line ``SpecError`` unless ``replicas`` (role -> replica ids) has ``role``/``k``.

    ``owner`` names the app in the message (``"job 12"``, ``"app train-x1"``).

    >>> check_replica({"trainer": [0, 1]}, "trainer", 2, "job 12")
    Traceback (most recent call last):
    ...
    torchx.specs.errors.SpecError: role 'trainer' of job 12 has no replica 2; it has 0, 1
    """
    from torchx.specs.errors import SpecError

    if role not in replicas:
        raise SpecError(f"{owner} has no role {role!r}; its roles: {', '.join(replicas)}")
    ids = sorted(replicas[role])
    if k not in ids:
        raise SpecError(
            f"role {role!r} of {owner} has no replica {k}; it has {', '.join(map(str, ids))}"
        )


def replica_log(
    base: str,
    streams: object,
    *,
    should_tail: bool,
    ended: bool,
    has_ended: Callable[[], bool],
    missing: Callable[[list[str]], BaseException],
    regex: str | None = None,
    interval: float = STATUS_INTERVAL,
) -> Polled:
    """One replica's log from its files ``BASE.out``/``BASE.err``: a batch scheduler's ``log_iter``.

    The files of ``streams`` (:func:`stream_files`) are read on one thread, merged
    (:func:`follow_files`); with ``should_tail`` they are followed until the app has
    ended. ``ended`` says whether it had when the log was opened; ``has_ended()`` asks
    the backend again, at most once per ``interval`` (:class:`EveryInterval`), a
    transient failure of it counting as "not yet". Once the app has ended, a file still
    missing (a replica that never started) raises ``missing(paths)``, the backend's own
    explanation, rather than giving an empty log. ``regex`` keeps the matching lines.
    The result can be polled (:class:`~torchx.schedulers.helpers.polling.Polled`).
    """
    from torchx.schedulers.contract.errors import TransientSchedulerError
    from torchx.schedulers.helpers.polling import Polled, matching_lines

    paths = stream_files(base, streams)

    def check() -> bool:
        try:
            return has_ended()
        except TransientSchedulerError:
            return False

    # asked at every idle poll of a followed file: the backend at most once per interval
    done = EveryInterval(interval, check, ended=ended)

    def then_check(lines: Iterator[str]) -> Iterator[str]:
        yield from lines
        gone = [p for p in paths if not os.path.isfile(p)]
        if gone and done.ended:
            raise missing(gone)

    def lines() -> Iterator[str]:
        checked = then_check(follow_files(paths, should_tail=should_tail, is_done=done))
        return matching_lines(regex, checked) if regex else checked

    return Polled(lines)
