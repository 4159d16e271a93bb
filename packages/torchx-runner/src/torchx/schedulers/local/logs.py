"""Replica logs of the local scheduler: each byte stored once, the combined view built when read.

Each replica has (up to) three files in its log directory:

* ``stdout.log`` and ``stderr.log``: exactly what the process wrote (the files are its
  stdout and stderr, no pipe in between, so nothing is lost however fast it prints);
* ``index``: *when* each stream grew, written by the supervisor from the replica's first
  output on (a replica that printed nothing has none). It is tiny: one record
  per run of output of one stream (at most one per :data:`COALESCE` seconds and stream,
  plus one each time output switches from one stream to the other), a few bytes each.

The combined view (both streams, one line per line) and the ``since``/``until`` windows
are produced at read time by walking the index: record by record, the lines of the
named stream up to the recorded offset. Lines of the two streams thus keep the order in
which the supervisor saw them (within one of its ticks, 20 ms while output flows), and
each line carries the time its run of output was seen (late by at most about
:data:`COALESCE` plus a tick). Reading one stream with no time window reads its raw file
and never looks at the index.

Index format (version :data:`INDEX_VERSION`)::

    torchx.local/logindex-v1 <base: ms since the epoch>\\n
    then records, each two unsigned LEB128 varints:
        dt      ms since the previous record (the base for the first)
        delta   (bytes the stream grew since its previous record) << 1 | stream
                (stream 0 is stdout, 1 is stderr)

A reader meets an index of another version with a one-line error naming the file. Logs
written before the index existed (a ``combined.log`` and no ``index``) can be read one
stream at a time; their combined view is refused with a one-line message saying so.

Reading is bounded in memory: files are read in :data:`BLOCK` bytes at a time, and a
line longer than :data:`PIECE` bytes is delivered in consecutive pieces of at most that
size, only the last ending in ``\\n`` (joined, they are the whole line; the CLI prints
them as one line). Everything a replica wrote is delivered: when the app has ended, bytes
past the last index record (a supervisor killed before it indexed them) come last.

Following (``should_tail``) polls (the standard library has no file-change
notification): every :data:`POLL_INTERVAL` seconds while output flows, and less often
the longer the log stays quiet, up to every :data:`POLL_MAX` seconds. A quiet log costs
little that way, which counts when many are followed at once (``torchx run --log`` of
128 replicas follows 128 logs while the replicas are being started). It stops once the
app is finished *and* everything has been read: the supervisor indexes a replica's
output to its end before it records the final state.

This module is imported by the supervisor: standard library only, and little of it.
"""

from __future__ import annotations

import os
import time

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Generator, Iterator
    from datetime import datetime

#: Version of the index format (its first line says ``torchx.local/logindex-v<N>``).
INDEX_VERSION = 1
INDEX_MAGIC = b"torchx.local/logindex-v"
INDEX_NAME = "index"
STREAMS = ("stdout", "stderr")

#: A run of output of one stream is indexed at the latest this many seconds after the
#: supervisor first saw it (or as soon as the other stream prints, or the replica ends).
COALESCE = 0.2
#: Seconds between two looks at a followed log that just had something new.
POLL_INTERVAL = 0.02
#: The longest wait between two looks at a followed log that stays quiet (each quiet
#: look doubles the wait, from :data:`POLL_INTERVAL`).
POLL_MAX = 0.1
#: Bytes read from a log file at a time.
BLOCK = 1 << 16
#: The longest piece of text delivered at once: a longer line comes in pieces.
PIECE = 1 << 20


class LogFormatError(Exception):
    """A log directory this release cannot read (another index version, old layout)."""


# --------------------------------------------------------------------------- writing


def _varint(n: int) -> bytes:
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


class IndexWriter:
    """The supervisor's side: notes when ``stdout.log`` and ``stderr.log`` grew.

    :meth:`pump` looks at the two files' sizes (no data is read, so its cost does not
    depend on how much was printed) and appends the records that are due. It holds no
    file open between calls: a supervisor of many replicas keeps few descriptors.
    """

    def __init__(self, log_dir: str, now: float) -> None:
        self.path = os.path.join(log_dir, INDEX_NAME)
        self.paths = [os.path.join(log_dir, f"{name}.log") for name in STREAMS]
        self.prev_ms = int(now * 1000)
        # written with the first records (a replica that prints nothing has no index)
        self.header: bytes | None = INDEX_MAGIC + f"{INDEX_VERSION} {self.prev_ms}\n".encode()
        self.seen = [0, 0]  # sizes last seen
        self.ends = [0, 0]  # sizes last indexed
        self.first: list[float | None] = [None, None]  # when unindexed output was first seen
        self.last = [0.0, 0.0]  # when each stream was last seen growing

    def pump(self, now: float, final: bool = False) -> bool:
        """Indexes what is due; True if either stream grew since the last call.

        A stream's pending run is written when the other stream grows (so that the
        combined view keeps their order), when it is :data:`COALESCE` seconds old, or
        when ``final``. Raises OSError when the index cannot be written (disk full).
        """
        sizes = [0, 0]
        for i, path in enumerate(self.paths):
            try:
                sizes[i] = os.stat(path).st_size
            except FileNotFoundError:
                pass
        grew = [sizes[0] > self.seen[0], sizes[1] > self.seen[1]]
        out = bytearray()
        for i in (0, 1):
            if grew[1 - i] and self.seen[i] > self.ends[i]:
                out += self._record(i)  # the other stream moves on: close this run first
        for i in (0, 1):
            if grew[i]:
                self.seen[i] = sizes[i]
                self.last[i] = now
                if self.first[i] is None:
                    self.first[i] = now
        due = [
            i
            for i in (0, 1)
            if self.seen[i] > self.ends[i] and (final or now - (self.first[i] or now) >= COALESCE)
        ]
        for i in sorted(due, key=lambda i: self.first[i] or 0.0):
            out += self._record(i)
        if out:
            flags = os.O_WRONLY | os.O_APPEND | os.O_CLOEXEC | os.O_NOFOLLOW
            if self.header is not None:
                out[:0] = self.header
                flags |= os.O_CREAT | os.O_TRUNC
            fd = os.open(self.path, flags, 0o600)
            try:
                view = memoryview(bytes(out))
                while view:
                    view = view[os.write(fd, view) :]
            finally:
                os.close(fd)
            self.header = None  # (a failed first write is made again, header and all)
        return grew[0] or grew[1]

    def _record(self, i: int) -> bytes:
        t_ms = max(int(self.last[i] * 1000), self.prev_ms)  # times never go backwards
        rec = _varint(t_ms - self.prev_ms) + _varint((self.seen[i] - self.ends[i]) << 1 | i)
        self.prev_ms = t_ms
        self.ends[i] = self.seen[i]
        self.first[i] = None
        return rec


# --------------------------------------------------------------------------- reading


class _Index:
    """Incremental reader of an index file: the records written since the last call."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.fd: int | None = None
        self.buf = b""
        self.t_ms: int | None = None
        self.ends = [0, 0]

    def read(self) -> list[tuple[float, int, int]]:
        """New records as (time in s, stream, end offset); [] if none (or no file yet)."""
        if self.fd is None:
            try:
                self.fd = os.open(self.path, os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW)
            except FileNotFoundError:
                return []
        while data := os.read(self.fd, BLOCK):
            self.buf += data
        if self.t_ms is None:
            nl = self.buf.find(b"\n")
            if nl < 0:  # the header is being written (or this is no index at all)
                if len(self.buf) > 64:
                    self._bad()
                return []
            head = self.buf[:nl]
            try:
                version, base = head[len(INDEX_MAGIC) :].split(b" ")
                ok = head.startswith(INDEX_MAGIC) and int(version) == INDEX_VERSION
                self.t_ms = int(base)
            except ValueError:
                ok = False
            if not ok:
                self._bad()
            self.buf = self.buf[nl + 1 :]
        out = []
        buf, pos, n = self.buf, 0, len(self.buf)
        t_ms = self.t_ms or 0
        while pos < n:
            vals = []
            p = pos
            for _ in (0, 1):
                shift = value = 0
                while p < n:
                    b = buf[p]
                    p += 1
                    value |= (b & 0x7F) << shift
                    shift += 7
                    if not b & 0x80:
                        break
                else:
                    break  # a record still being written
                vals.append(value)
            if len(vals) < 2:
                break
            pos = p
            t_ms += vals[0]
            stream = vals[1] & 1
            self.ends[stream] += vals[1] >> 1
            out.append((t_ms / 1000, stream, self.ends[stream]))
        self.t_ms = t_ms
        self.buf = buf[pos:]
        return out

    def _bad(self) -> None:
        head = self.buf.split(b"\n", 1)[0][:60].decode("utf-8", "replace")
        raise LogFormatError(
            f"{self.path}: log index {head!r} is not 'torchx.local/logindex-v{INDEX_VERSION}', "
            "the format this torchx-runner reads: it was written by another release; read "
            "one stream (--streams stdout) or use that release"
        )

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


def _utf8_cut(data: bytes | bytearray, limit: int) -> int:
    """The largest cut <= ``limit`` that does not split a UTF-8 sequence (never 0)."""
    cut = limit
    while cut > limit - 4 and 0 < cut < len(data) and data[cut] & 0xC0 == 0x80:
        cut -= 1
    return cut if cut > 0 else limit


class _Cursor:
    """Reads one raw stream file forward, cutting it into whole lines (and long-line pieces)."""

    def __init__(self, path: str, block: int = BLOCK) -> None:
        self.path = path
        self.block = block
        self.fd: int | None = None
        self.pos = 0
        # the unfinished last line read so far, grown in place (a long line is never
        # copied into ever larger bytes objects)
        self.partial = bytearray()
        # the filter decision for a line being delivered in pieces (None: at a line start)
        self.keep_line: bool | None = None

    def open(self) -> bool:
        if self.fd is None:
            try:
                self.fd = os.open(self.path, os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW)
            except FileNotFoundError:
                return False
        return True

    def take(self, end: int | None, keep: bool) -> Iterator[bytes]:
        """Blocks of the file from where it stopped to ``end`` (None: its end) that pass.

        ``keep`` says whether text first seen in this span is wanted (the time window);
        a line started in an earlier span follows that span's decision.
        """
        if not self.open():
            return
        assert self.fd is not None
        while end is None or self.pos < end:
            want = self.block if end is None else min(self.block, end - self.pos)
            data = os.pread(self.fd, want, self.pos)
            if not data:
                break
            self.pos += len(data)
            cut = data.rfind(b"\n") + 1
            if cut:
                head = data[:cut] if cut < len(data) else data
                if self.partial:
                    self.partial += head
                    head = bytes(self.partial)
                    self.partial.clear()
                self.partial += memoryview(data)[cut:]
                if self.keep_line is not None:  # the rest of a line delivered in pieces
                    nl = head.index(b"\n") + 1
                    if self.keep_line:
                        yield head[:nl]
                    head = head[nl:]
                    self.keep_line = None
                if keep and head:
                    yield head
            else:
                self.partial += data
            while len(self.partial) >= PIECE:
                piece_end = _utf8_cut(self.partial, PIECE)
                if self.keep_line is None:
                    self.keep_line = keep
                if self.keep_line:
                    yield bytes(self.partial[:piece_end])
                del self.partial[:piece_end]

    def rest(self, keep: bool) -> Iterator[bytes]:
        """Everything left, the last line ended with a newline if it had none."""
        yield from self.take(None, keep)
        if self.partial:
            if self.keep_line if self.keep_line is not None else keep:
                yield bytes(self.partial) + b"\n"
            self.partial.clear()
        self.keep_line = None

    def mtime(self) -> float:
        try:
            return os.stat(self.path).st_mtime
        except OSError:
            return time.time()

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


class _Pace:
    """How one follower of a log waits when it finds nothing new.

    Blocking (:meth:`LogLines.blocks`): it sleeps, from :data:`POLL_INTERVAL` doubling
    to :data:`POLL_MAX` while the log stays quiet. Polling (:meth:`LogLines.poll`): it
    does not wait, and the reader yields ``b""`` for its caller to look elsewhere.
    """

    def __init__(self, polling: bool) -> None:
        self.polling = polling
        self.pause = POLL_INTERVAL

    def grew(self) -> None:
        self.pause = POLL_INTERVAL

    def quiet(self) -> bool:
        """Waits (blocking); True if the reader should yield ``b""`` instead (polling)."""
        if self.polling:
            return True
        time.sleep(self.pause)
        self.pause = min(self.pause * 2, POLL_MAX)
        return False


class LogLines:
    """The lines of one replica's log, as ``log_iter`` returns them (iterable again and again).

    Iterating yields lines, each ending in ``\\n`` (a line longer than :data:`PIECE`
    comes in pieces, only the last ending in ``\\n``). :meth:`blocks` yields the same
    text in blocks of whole lines, which is what a printer wants: ``torchx log`` writes
    a block at a time instead of a line at a time.

    Args:
        log_dir: the replica's log directory
        stream: ``"stdout"``, ``"stderr"``, or None for both (the combined view)
        since, until: keep lines seen within this window (None: unbounded)
        should_tail: follow the log until ``is_done()`` and everything is read
        is_done: True once the app has ended (and so has its output)
    """

    def __init__(
        self,
        log_dir: str,
        stream: str | None,
        since: datetime | None,
        until: datetime | None,
        should_tail: bool,
        is_done: Callable[[], bool],
    ) -> None:
        self.log_dir = log_dir
        self.stream = stream
        self.lo = since.timestamp() if since is not None else None
        self.hi = until.timestamp() if until is not None else None
        self.should_tail = should_tail
        self.is_done = is_done

    def __iter__(self) -> Iterator[str]:
        for block in self.blocks(BLOCK):
            parts = block.split("\n")
            last = parts.pop()
            for part in parts:
                yield part + "\n"
            if last:
                yield last

    def blocks(self, size: int = BLOCK) -> Iterator[str]:
        """The log as text blocks: whole lines (or one piece of a long line), in order.

        ``size`` is how many bytes are read at a time (a block holds about that much, plus
        the end of a line begun before): a printer following many replicas at once asks
        for small blocks, to hold little in memory.
        """
        for data in self._byte_blocks(max(size, 1), _Pace(polling=False)):
            yield data.decode("utf-8", "replace")

    def poll(self, size: int = BLOCK) -> Iterator[str]:
        """The text of :meth:`blocks`, but it never waits: ``""`` means nothing new yet.

        Where :meth:`blocks` would sleep until a followed log grows, this yields an empty
        string, and the caller looks at other logs before it comes back (and sleeps
        itself when none had anything). One thread can so follow any number of replicas:
        ``torchx run --log`` of 128 replicas no longer needs 128 threads polling.
        """
        for data in self._byte_blocks(max(size, 1), _Pace(polling=True)):
            yield data.decode("utf-8", "replace")

    def timed(self, size: int = BLOCK) -> Iterator[tuple[float, str]]:
        """The text of :meth:`blocks`, each block with the time its lines were seen.

        ``(t, text)``: ``t`` in seconds since the epoch, when the supervisor saw that
        run of output (a line completed in a later run has the later time). What
        ``torchx log --timestamps`` prints. Always read through the index (both streams
        or one), so logs written before the index existed have no times to give.
        """
        blocks = self._indexed_timed(max(size, 1), _Pace(polling=False))
        try:
            for t, data in blocks:
                if data:
                    yield t, data.decode("utf-8", "replace")
        finally:
            blocks.close()

    def _keep(self, t: float) -> bool:
        return (self.lo is None or t >= self.lo) and (self.hi is None or t <= self.hi)

    def _byte_blocks(self, size: int, pace: _Pace) -> Iterator[bytes]:
        """Blocks of bytes; where nothing is new, as ``pace`` says (sleep, or ``b""``)."""
        if self.stream is not None and self.lo is None and self.hi is None:
            return self._raw(self.stream, size, pace)
        return self._indexed(size, pace)

    def _idle(self, finishing: bool) -> bool | None:
        """After a pass that found nothing: None to stop, else the new ``finishing``."""
        if finishing or not self.should_tail:
            return None
        # done: one more pass, to read what was written before the end
        return bool(self.is_done())

    def _raw(self, stream: str, size: int, pace: _Pace) -> Iterator[bytes]:
        cur = _Cursor(os.path.join(self.log_dir, f"{stream}.log"), size)
        try:
            finishing: bool | None = False
            while True:
                got = False
                for block in cur.take(None, True):
                    got = True
                    yield block
                if got:
                    pace.grew()
                    continue
                finishing = self._idle(bool(finishing))
                if finishing is None:
                    break
                if not finishing and pace.quiet():
                    yield b""
            yield from cur.rest(True)
        finally:
            cur.close()

    def _indexed(self, size: int, pace: _Pace) -> Iterator[bytes]:
        blocks = self._indexed_timed(size, pace)
        try:
            for _, data in blocks:
                yield data
        finally:
            blocks.close()

    def _indexed_timed(self, size: int, pace: _Pace) -> Generator[tuple[float, bytes], None, None]:
        """Blocks read by walking the index, each with its record's time (see the module)."""
        index = _Index(os.path.join(self.log_dir, INDEX_NAME))
        curs = [_Cursor(os.path.join(self.log_dir, f"{name}.log"), size) for name in STREAMS]
        wanted = [self.stream in (None, name) for name in STREAMS]
        try:
            if not os.path.exists(index.path) and os.path.exists(
                os.path.join(self.log_dir, "combined.log")
            ):
                raise LogFormatError(
                    f"{self.log_dir}: these logs were written by an earlier torchx-runner "
                    "(combined.log, no index): read one stream at a time (--streams stdout "
                    "or stderr, no --since/--until)"
                )
            finishing: bool | None = False
            last_t = 0.0
            while True:
                records = index.read()
                for t, stream, end in records:
                    last_t = t
                    if wanted[stream]:
                        for data in curs[stream].take(end, self._keep(t)):
                            yield t, data
                if records:
                    pace.grew()
                    continue
                finishing = self._idle(bool(finishing))
                if finishing is None:
                    break
                if not finishing and pace.quiet():
                    yield last_t, b""
            # Bytes past the last record: a supervisor killed before it indexed them, or
            # an app still running when not following. Their time: the file's last change.
            for i, cur in enumerate(curs):
                if wanted[i]:
                    seen = max(cur.mtime(), last_t)
                    for data in cur.rest(self._keep(seen)):
                        yield seen, data
        finally:
            index.close()
            for cur in curs:
                cur.close()
