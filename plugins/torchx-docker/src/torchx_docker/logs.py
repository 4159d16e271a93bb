"""A replica's log from the engine, read in large blocks.

The engine sends a container's log (one without a terminal) as a stream of frames:
an 8-byte header (the stream, stdout or stderr, and the payload's length) before each
write the program made. docker-py reads that stream two small reads per frame, which
costs about 40 µs a line: 100,000 lines take seconds. :func:`engine_log` asks for the
same log with the SDK's own HTTP session and cuts the frames out of 64 KiB blocks; while
following, it reads whatever has arrived instead (the engine sends each write as one
HTTP chunk, cut out here by :func:`dechunk` from whatever the socket has, many chunks per
read), so a followed log still shows each line as soon as the engine sends it.

The engine keeps a line longer than 16 KiB as several messages (its log driver cuts
lines into 16 KiB pieces, each but the last without its newline), and sends each piece
as a frame of its own with a timestamp of its own. :func:`demux` joins them again: a
piece that does not end its line is held until the rest of the line has come (the
timestamps of the later pieces dropped), so every line comes back whole, once, with
the time it began at, even when the other stream's lines come in between.

A followed log outlives the engine going away (dockerd restarting: issue 35):
:func:`follow_container` follows it again from the last line's time, and
:func:`follow_resuming` drops the lines already passed on, so each comes once.

>>> def frame(stream: int, data: bytes) -> bytes:
...     return bytes([stream, 0, 0, 0]) + len(data).to_bytes(4, "big") + data
>>> sent = frame(1, b"out\\n") + frame(2, b"err\\n")
>>> reads = iter([sent[:5], sent[5:14], sent[14:]])  # the network cuts it anywhere
>>> list(demux(lambda n: next(reads, b"")))
[b'out\\n', b'err\\n']
>>> cut = frame(1, b"T1 ab") + frame(2, b"T2 err\\n") + frame(1, b"T3 cd\\n")  # a long line
>>> reads = iter([cut])
>>> list(demux(lambda n: next(reads, b"")))
[b'T1 abcd\\nT2 err\\n']
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import logging

    import docker

#: How much one read may take from the engine's answer.
BLOCK = 1 << 16
_HEADER = 8


def demux(read: Callable[[int], bytes]) -> Iterator[bytes]:
    """The payloads of the frames that ``read`` returns, in order, in blocks, lines whole.

    ``read(n)`` returns up to ``n`` bytes as soon as some have arrived, ``b""`` at the end.
    A frame cut between two reads is completed by the next; one cut by the end is dropped
    (the engine closed the log mid-write). A payload that does not end with a newline is
    the start of a line the engine cut (see the module docstring): the next payloads of
    its stream, their leading timestamp removed, are added to it until one ends the line,
    and the lines after its start (of either stream) wait for it, so the log stays in
    the order of the lines' times. A line still unended at the end is yielded as it is.
    """
    buf = bytearray()
    lines: list[list[Any]] = []  # [stream, pieces, ended]: from the first unended line on
    cut: dict[int, list[Any]] = {}  # stream -> its line still to be ended
    while True:
        data = read(BLOCK)
        if not data:
            rest = b"".join(b"".join(line[1]) for line in lines)
            if rest:
                yield rest
            return
        buf += data
        pos, end, out = 0, len(buf), []
        while end - pos >= _HEADER:
            size = int.from_bytes(buf[pos + 4 : pos + 8], "big")
            if end - pos - _HEADER < size:
                break
            payload = bytes(buf[pos + _HEADER : pos + _HEADER + size])
            stream = buf[pos]
            pos += _HEADER + size
            ended = payload.endswith(b"\n")
            line = cut.get(stream)
            if line is not None:  # the rest of a cut line: drop its own timestamp
                line[1].append(payload.split(b" ", 1)[-1])
                if ended:
                    line[2] = True
                    del cut[stream]
            elif ended and not lines:  # the usual case: a whole line, nothing waiting
                out.append(payload)
                continue
            elif payload:
                lines.append([stream, [payload], ended])
                if not ended:
                    cut[stream] = lines[-1]
            while lines and lines[0][2]:  # lines ended, and all before them
                out.append(b"".join(lines.pop(0)[1]))
        del buf[:pos]
        if out:
            yield b"".join(out)


def engine_log(
    api: docker.APIClient,
    name: str,
    *,
    stdout: bool,
    stderr: bool,
    follow: bool,
    since: float | None,
    until: float | None,
    timeout: float,
) -> Iterator[bytes]:
    """The log of container ``name`` (timestamped lines), as the engine sends it.

    Raises docker's ``NotFound`` for no such container and its ``APIError`` for any other
    refusal, before the first byte is yielded (the request is made when called).
    """
    import docker.errors

    params: dict[str, Any] = {
        "stdout": int(stdout),
        "stderr": int(stderr),
        "timestamps": 1,
        "follow": int(follow),
        "tail": "all",
    }
    if since is not None:
        params["since"] = f"{since:.6f}"
    if until is not None:
        params["until"] = f"{until:.6f}"
    url = f"{api.base_url}/v{api.api_version}/containers/{name}/logs"
    # following: no read timeout (a quiet program is not a dead engine)
    response = api.get(
        url, params=params, stream=True, timeout=(timeout, None if follow else timeout)
    )
    if response.status_code >= 400:
        explanation = response.text.strip()
        response.close()
        kind = docker.errors.NotFound if response.status_code == 404 else docker.errors.APIError
        raise kind(f"{response.status_code} for {url}", response=response, explanation=explanation)
    raw = response.raw
    if not follow:  # all of it is there: full blocks
        return _closing(demux(raw.read), response)
    # following: what has arrived, at once. The engine sends each write as an HTTP chunk,
    # and the HTTP client reads one chunk per call (a line each, for a program printing
    # lines); reading the socket's buffer and cutting the chunks here takes all that has
    # arrived in one go.
    sock_file = getattr(getattr(raw, "_fp", None), "fp", None)
    chunked = "chunked" in str(response.headers.get("Transfer-Encoding", "")).lower()
    if chunked and sock_file is not None and hasattr(sock_file, "read1"):
        blocks = dechunk(sock_file.read1)
        return _closing(demux(lambda n: next(blocks, b"")), response)
    read = getattr(raw, "read1", None)
    if read is None:  # urllib3 1.x: no read1; its read(n) waits for n bytes
        return _small_reads(api, name, stdout, stderr, follow, since, until, response)
    return _closing(demux(read), response)


def dechunk(read1: Callable[[int], bytes]) -> Iterator[bytes]:
    """The body of an HTTP/1.1 chunked answer, as blocks of whatever has arrived.

    ``read1(n)`` returns what the socket has (at most ``n`` bytes, waiting only when it
    has nothing), ``b""`` at its end. Each block holds the payload of every chunk (or part
    of one) that arrived together; the answer ends at the last chunk (size 0) or when
    the connection does.

    >>> wire = iter([b"4\\r\\nab", b"cd\\r\\n3\\r\\nefg\\r\\n", b"0\\r\\n\\r\\n"])
    >>> list(dechunk(lambda n: next(wire, b"")))
    [b'ab', b'cdefg']
    """
    buf = b""
    left = 0  # payload bytes of the current chunk still to come
    crlf = False  # the CRLF after a chunk's payload is still to come
    while True:
        data = read1(BLOCK)
        if not data:
            return
        buf += data
        pos, out = 0, []
        while True:
            if left:
                take = min(left, len(buf) - pos)
                if take:
                    out.append(buf[pos : pos + take])
                pos += take
                left -= take
                if left:
                    break
                crlf = True
            if crlf:
                if len(buf) - pos < 2:
                    break
                pos += 2
                crlf = False
            eol = buf.find(b"\r\n", pos)
            if eol < 0:
                break
            size = int(buf[pos:eol].split(b";", 1)[0], 16)
            pos = eol + 2
            if size == 0:
                if out:
                    yield b"".join(out)
                return
            left = size
        buf = buf[pos:]
        if out:  # never an empty block: b"" is the end to whoever reads these
            yield b"".join(out)


def _closing(blocks: Iterator[bytes], response: Any) -> Iterator[bytes]:
    try:
        yield from blocks
    finally:
        response.close()


def _small_reads(
    api: docker.APIClient,
    name: str,
    stdout: bool,
    stderr: bool,
    follow: bool,
    since: float | None,
    until: float | None,
    response: Any,
) -> Iterator[bytes]:
    """docker-py's own frame-by-frame reader (older urllib3)."""
    response.close()
    kwargs: dict[str, Any] = {}
    if since is not None:
        kwargs["since"] = since
    if until is not None:
        kwargs["until"] = until
    chunks: Iterator[bytes] = api.logs(
        name, stdout=stdout, stderr=stderr, timestamps=True, stream=True, follow=follow, **kwargs
    )
    return _joined(chunks)


def _joined(payloads: Iterable[bytes]) -> Iterator[bytes]:
    """The payloads of docker-py's reader (one per frame, the stream not said), a line cut
    into pieces joined again as :func:`demux` joins it (as one stream)."""
    head = b""
    for payload in payloads:
        if head:
            payload = head + payload.split(b" ", 1)[-1]
        if payload.endswith(b"\n"):
            head = b""
            yield payload
        else:
            head = payload
    if head:
        yield head


def _stamp(line: bytes) -> tuple[int, int] | None:
    """The engine's timestamp at the head of ``line`` as (seconds, nanoseconds), or None.

    The engine writes RFC 3339 with up to 9 fraction digits and trailing zeros cut
    (``2026-11-25T03:19:30.00814Z``), so the text does not sort: compare these instead.
    """
    from datetime import UTC, datetime

    head = line.split(b" ", 1)[0].decode("ascii", "replace")
    if not head.endswith("Z") or "T" not in head:
        return None
    day, _, frac = head[:-1].partition(".")
    try:
        seconds = int(datetime.fromisoformat(day).replace(tzinfo=UTC).timestamp())
        nanos = int((frac + "000000000")[:9]) if frac else 0
    except ValueError:
        return None
    return seconds, nanos


def follow_to_the_end(
    followed: Iterable[bytes], rest: Callable[[float], Iterable[bytes]]
) -> Iterator[bytes]:
    """A followed log, then whatever the engine had not sent when it ended the follow.

    dockerd (20.10 here) may end a followed log early, without an error, when the
    container exits while its reader is behind: 8 replicas printing 100,000 lines each,
    read at once, showed one log cut at 10,725 lines. A read of the same log after the
    exit has every line. So once the followed log ends, ``rest(since)`` reads the log
    again from the last line's time (``since``, in seconds, a microsecond early) and the
    lines not yet passed on are yielded: those after the last time seen, and of the lines
    at that very time, those beyond as many as were seen. Lines are passed on whole. The
    second read costs little when nothing was lost (the log's last instant); if it fails
    (the container removed meanwhile, the engine gone), the log ends where the follow did.
    :func:`follow_resuming` with a container always stopped when a follow ends.

    >>> seen = [b"2026-01-01T00:00:01Z a\\n2026-01-01T00:00:02.5Z b\\n"]
    >>> later = [b"2026-01-01T00:00:02.5Z b\\n2026-01-01T00:00:03Z c\\n"]
    >>> b"".join(follow_to_the_end(seen, lambda since: later)).decode().split()[1::2]
    ['a', 'b', 'c']
    """
    return follow_resuming(followed, lambda: True, lambda since: (), rest)


def follow_resuming(
    followed: Iterable[bytes],
    stopped: Callable[[], bool],
    reopen: Callable[[float], Iterable[bytes]],
    rest: Callable[[float], Iterable[bytes]],
    broken: tuple[type[BaseException], ...] = (OSError,),
) -> Iterator[bytes]:
    """A followed log that outlives the engine going away, every line once.

    When a follow ends (or breaks: one of ``broken`` raised while reading it), ``stopped()`` says
    why: True, the container stopped (or is gone), so its log is complete but for what
    the engine held back (:func:`follow_to_the_end`: ``rest(since)`` reads it once more,
    a failure of that read ending the log where it is); False, the engine went away
    (dockerd restarting, with live-restore the container runs on and its lines are kept),
    so ``reopen(since)`` follows the log again (the caller retries it until the engine
    answers, or raises). Either read starts at the last line's time a microsecond early
    (``since``: the engine takes seconds with microseconds, its times have nanoseconds),
    and drops the lines already passed on: those before that time, and as many of those
    at that very time as were passed on. A line the break cut off before its end is
    dropped and comes again whole with the next read.

    >>> a = b"2026-01-01T00:00:01Z a\\n"
    >>> b = b"2026-01-01T00:00:02Z b\\n"
    >>> c = b"2026-01-01T00:00:03Z c\\n"
    >>> answers = iter([False, True])  # the engine went away once, then the app stopped
    >>> out = follow_resuming([a, b"2026-01-01T00:00:02Z"], lambda: next(answers),
    ...                       lambda since: [a, b], lambda since: [b, c])
    >>> b"".join(out).decode().split()[1::2]
    ['a', 'b', 'c']
    """
    passed = _Passed()
    chunks: Iterable[bytes] = followed
    while True:
        try:
            for chunk in chunks:
                out = passed.new(chunk)
                if out:
                    yield out
        except broken:
            pass  # the connection broke: stopped() tells whether the engine went away
        if stopped():
            break
        chunks = reopen(passed.again())
    pending = passed.pending
    since = passed.again()
    more = False
    try:
        for chunk in rest(since):
            out = passed.new(chunk)
            if out:
                more = True
                yield out
    except Exception:
        passed.pending = b""  # the last read is a best effort: the log ends where it is
    if passed.pending:
        yield passed.pending
    elif pending and not more:
        yield pending


class _Passed:
    """The lines of a log passed on so far, told by the time of the last (see
    :func:`follow_resuming`): what to read again from, and what to drop when it comes."""

    def __init__(self) -> None:
        #: the latest time passed on, and how many lines at it
        self.last: tuple[int, int] | None = None
        self.at_last = 0
        #: lines at ``last`` still to drop from a read made again
        self.skip = 0
        #: reading again: lines before ``last`` were passed on already
        self.again_from: tuple[int, int] | None = None
        #: the start of a line still to come
        self.pending = b""

    def again(self) -> float:
        """The log is read again: ``since`` for it (0 when no line was passed on)."""
        self.skip, self.again_from, self.pending = self.at_last, self.last, b""
        if self.last is None:
            return 0.0
        return max(self.last[0] + self.last[1] / 1e9 - 1e-6, 0.0)

    def new(self, chunk: bytes) -> bytes:
        """The whole lines of ``chunk`` (after ``pending``) not passed on yet."""
        lines = (self.pending + chunk).split(b"\n")
        self.pending = lines.pop()
        out = []
        for line in lines:
            stamp = _stamp(line)
            if stamp is not None and self.again_from is not None:
                if stamp < self.again_from:
                    continue
                if stamp == self.again_from and self.skip > 0:
                    self.skip -= 1
                    continue
                if stamp > self.again_from:
                    self.again_from = None  # beyond what was passed on: all is new
            if stamp is not None:
                if self.last is not None and stamp == self.last:
                    self.at_last += 1
                elif self.last is None or stamp > self.last:
                    self.last, self.at_last = stamp, 1
            out.append(line)
        return b"\n".join(out) + b"\n" if out else b""


def follow_container(
    chunks: Iterator[bytes],
    api: docker.APIClient,
    name: str,
    stdout: bool,
    stderr: bool,
    classify: Callable[[BaseException], BaseException | None],
    timeout: float,
) -> Iterator[bytes]:
    """A followed log, to the container's stop, across the engine going away, every line once.

    :func:`~torchx_docker.logs.follow_resuming` does the bookkeeping; here is what its
    three questions ask the engine:

    * has the container stopped, now that the follow ended? The engine closes a followed
      log when the container's output ends, a moment before it records the container as
      exited: its own wait call (``condition=not-running``, not a poll) returns then, so a
      follower that ends sees the app ended too. A container removed meanwhile, or any
      answer that is not an outage: the log ended. An outage (``classify`` says
      transient: dockerd restarting, its socket gone) is "not stopped": a warning on
      stderr, and the log is followed again.
    * follow again from ``since``: retried (:func:`~torchx.schedulers.helpers.retry.call_with_retries`,
      the Runner's budget) until the engine answers; when it never does, the retries'
      error ends the log (an outage: ``torchx log`` exits "state unknown").
    * the rest after the stop (dockerd may end a follow early: ``follow_to_the_end``).

    ``chunks`` is the follow already opened (its errors were the opener's to raise);
    ``timeout`` bounds each other call to the engine (not the follow's own reads).
    """
    import urllib3.exceptions

    def read(since: float | None, follow: bool) -> Iterator[bytes]:
        return engine_log(
            api,
            name,
            stdout=stdout,
            stderr=stderr,
            follow=follow,
            since=since,
            until=None,
            timeout=timeout,
        )

    outages: list[float] = []  # when the recent ones began (monotonic)

    def stopped() -> bool:
        try:
            api.wait(name, timeout=timeout, condition="not-running")
        except Exception as e:
            import time

            from torchx.schedulers.helpers.retry import is_transient

            err = classify(e) or e
            if is_transient(err):
                _log().warning(
                    "log of %s: %s; following it again once the engine answers", name, err
                )
                now = time.monotonic()
                outages[:] = [t for t in outages if now - t < 60]
                if outages:  # again within a minute: an engine that lets a follow open
                    # but fails its wait would otherwise be asked in a tight loop
                    time.sleep(min(0.25 * 2 ** (len(outages) - 1), 5.0))
                outages.append(now)
                return False
        return True  # stopped, removed meanwhile, or refused: the log ended

    def reopen(since: float) -> Iterable[bytes]:
        from torchx.schedulers.helpers.retry import call_with_retries

        return call_with_retries(lambda: read(since, True), f"log of {name}", classify=classify)

    return follow_resuming(
        chunks,
        stopped,
        reopen,
        lambda since: read(since, False),
        broken=(OSError, urllib3.exceptions.HTTPError),
    )


def _log() -> logging.Logger:
    import logging  # only when something is logged

    return logging.getLogger("torchx_docker")
