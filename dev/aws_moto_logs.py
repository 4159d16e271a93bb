"""A job container's output as CloudWatch Logs events, as AWS's ``awslogs`` driver sends them.

On AWS a Batch job's (and a SageMaker instance's) container writes to Docker's
``awslogs`` log driver, which puts each line into the job's log stream as one event. The
emulator reads the container's log from the engine instead, and two things must come out
as they do on AWS:

* **Lines whole.** The engine keeps a line longer than 16 KiB as several messages, each
  sent with a timestamp of its own (every one but the last without its newline): asked
  for timestamps, it answers ``T1 <16 KiB>T2 <the rest>``. :func:`container_lines` joins
  the pieces again (the later pieces' timestamps dropped), one stream at a time, so a
  line is one line with the time it began at; read as text split at newlines, a 20 KB
  line came back with the engine's timestamps inside it.
* **At most the event size CloudWatch takes.** ``PutLogEvents`` takes no event larger
  than 256 KiB, counting 26 bytes for each event besides its message (the CloudWatch Logs
  API reference, PutLogEvents: "Each log event can be no larger than 256 KB", batch sizes
  counted as the messages in UTF-8 "plus 26 bytes for each log event"). A longer line is
  split by the driver into events of at most 262,144 - 26 = 262,118 bytes, in order, each
  with the line's time: a line of 262,145 bytes is two events, of 262,118 and 27 bytes
  (what aws/shim-loggers-for-containerd#239 reports of EC2 with Docker, the launch type
  Batch's compute environments use). :func:`events_of` cuts there, never inside a UTF-8
  character (moby's driver moves a cut that would land in one back to the character's
  start).

Standard library only (the container is passed in): its doctests run without moto or an
engine (``python3 -m doctest dev/aws_moto_logs.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

#: CloudWatch Logs' largest event (256 KiB), less the 26 bytes it counts for each event.
MAX_EVENT_BYTES = 262144 - 26


def joined(payloads: Iterable[bytes], ended: bool) -> list[tuple[bytes, bytes]]:
    """(timestamp, line without its newline) for each line of one stream's log messages.

    ``payloads``: the engine's messages of one stream, each ``TIMESTAMP SP TEXT``; one
    whose text does not end with a newline is continued by the next (whose timestamp
    is dropped). A line not ended yet is left for a later look, unless the container
    has ``ended`` (the driver then sends what it has).

    >>> joined([b"T1 short\\n", b"T2 long", b"T3 er", b"T4 line\\n", b"T5 tail"], False)
    [(b'T1', b'short'), (b'T2', b'longerline')]
    >>> joined([b"T5 tail"], True)
    [(b'T5', b'tail')]
    """
    out: list[tuple[bytes, bytes]] = []
    start: bytes | None = None
    pieces: list[bytes] = []
    for payload in payloads:
        stamp, _, text = payload.partition(b" ")
        if start is None:
            start = stamp
        pieces.append(text)
        if text.endswith(b"\n"):
            out.append((start, b"".join(pieces)[:-1]))
            start, pieces = None, []
    if start is not None and ended:
        out.append((start, b"".join(pieces)))
    return out


def new_events(
    container: Any, parse_time: Callable[[str], int], seen: dict[str, int]
) -> list[dict[str, Any]]:
    """The events of the lines the container wrote since the last look, stdout's and
    stderr's in the order of their times; ``seen`` (stream -> lines sent) is updated.

    Each stream is asked for on its own (a cut line's pieces are then the messages that
    follow it), with ``stream=True``: the SDK then gives each message apart instead of
    gluing them into one text. ``parse_time`` reads one of the engine's timestamps (to
    milliseconds); the container must have been reloaded (its status says if it ended).
    """
    ended = container.status not in ("running", "created")
    lines: list[tuple[int, bytes]] = []
    for which in ("stdout", "stderr"):
        messages = container.logs(
            stdout=which == "stdout",
            stderr=which == "stderr",
            timestamps=True,
            stream=True,
            follow=False,  # the SDK follows a streamed log unless told not to
        )
        try:
            found = joined(messages, ended)
        finally:
            messages.close()
        for stamp, line in found[seen.get(which, 0) :]:
            lines.append((parse_time(stamp.decode("ascii", "replace")), line))
        seen[which] = len(found)
    lines.sort(key=lambda x: x[0])  # stable: a stream's own lines keep their order
    return [event for when, line in lines for event in events_of(when, line)]


def events_of(when: int, line: bytes) -> list[dict[str, Any]]:
    """The CloudWatch events the ``awslogs`` driver puts for one line (see the module
    docstring): at most :data:`MAX_EVENT_BYTES` each, cut between UTF-8 characters (bytes
    that are not UTF-8 count as the 3 bytes of the replacement character CloudWatch
    stores for them).

    >>> [len(e["message"]) for e in events_of(5, b"a" * (MAX_EVENT_BYTES + 27))]
    [262118, 27]
    >>> [e["message"][-1:] for e in events_of(5, b"a" * (MAX_EVENT_BYTES - 1) + "é".encode())]
    ['a', 'é']
    >>> events_of(5, b"")
    [{'timestamp': 5, 'message': ''}]
    """
    rest = line.decode("utf-8", "replace").encode()
    events = []
    while True:
        cut = min(len(rest), MAX_EVENT_BYTES)
        while cut < len(rest) and rest[cut] & 0xC0 == 0x80:  # inside a character: before it
            cut -= 1
        events.append({"timestamp": when, "message": rest[:cut].decode()})
        rest = rest[cut:]
        if not rest:
            return events
