"""A replica's log, from the API's pod log: read once, or followed until the app ends.

``log_iter`` of both schedulers is :func:`replica_log`: the replica's newest pod (one
pod list by label selector), then its log (stdout and stderr together: the API has no
separate streams before Kubernetes 1.32), streamed in chunks of :data:`LOG_CHUNK` bytes
and cut into whole lines. ``should_tail`` waits for the container to start (or for the
app to end without it), follows the log until the container exits, then returns once
the app has ended. ``since`` is sent as ``sinceSeconds``, and both bounds are applied to
the lines' own times (requested with ``timestamps``).

A line longer than 16 KiB is kept by the container runtime as pieces of 16 KiB (Docker's
json-file driver under dockershim; containerd's CRI log likewise), and the kubelet sends
each piece with a timestamp of its own, the pieces of one line one after the other: a
20 KB line reads ``T1 <16384 bytes>T2 <the rest>``. The reader removes each
later piece's timestamp (one found exactly 16 KiB after the previous piece's start), so
the line comes back whole, with the time it began at.

Nothing here decides when an app has ended: the scheduler passes ``ended`` (the
``kubernetes_mcad`` scheduler's looks at the pods too).
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable, Iterator
from datetime import UTC, datetime
from typing import Any

from torchx.schedulers.contract.errors import SchedulerError
from torchx.schedulers.helpers.polling import matching_lines
from torchx.schedulers.helpers.window import window_lines
from torchx.specs.errors import SpecError
from torchx_k8s import labels, status
from torchx_k8s.backend import K8sBackend, api_status
from torchx_k8s.names import AppRef

__all__ = ["LOG_CHUNK", "replica_log"]

#: Bytes read from a log stream at a time.
LOG_CHUNK = 64 * 1024
#: The size of the pieces a container runtime cuts a long line into (see the module).
PIECE = 16 * 1024
#: The timestamp the kubelet puts before each piece (RFC 3339, nanoseconds), and a space.
_STAMP = re.compile(rb"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:\d\d) ")


def replica_log(
    backend: K8sBackend,
    ref: AppRef,
    role_name: str,
    k: int,
    *,
    ended: Callable[[], bool],
    missing: str,
    regex: str | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
    should_tail: bool = False,
) -> Iterator[str]:
    """The lines of replica ``k`` of ``role_name`` (see the module).

    ``ended()`` says whether the app has ended (or is gone); ``missing`` is the error
    for an app that does not exist (read once, with no pod).
    """
    selector = ",".join(
        [
            labels.pod_selector(ref.name),
            f"{labels.ROLE_NAME}={labels.label_value(role_name)}",
            f"{labels.REPLICA_ID}={k}",
        ]
    )
    options: dict[str, Any] = {"timestamps": True, "follow": should_tail}
    if since is not None:
        ago = datetime.now(UTC).timestamp() - since.timestamp()
        options["since_seconds"] = max(int(ago) + 1, 1)
    chunks: Iterable[bytes]
    if should_tail:
        chunks = _follow(backend, ref, selector, options, ended)
    else:
        pod = _newest_pod(backend, ref, selector)
        if pod is None and backend.get(ref) is None:
            raise SpecError(missing)
        # no pod yet, or one whose container never started (or was removed): no lines
        answer = _open_log(backend, ref, pod, options) if pod is not None else None
        chunks = _decode(answer) if answer is not None else iter(())
    lines: Iterator[str] = window_lines(_whole_lines(chunks), since, until, ordered=True)
    return matching_lines(regex, lines) if regex else lines


def _newest_pod(backend: K8sBackend, ref: AppRef, selector: str) -> dict[str, Any] | None:
    """The newest pod of one replica (one pod list by label selector), or None."""
    pods = backend.pods(ref, selector)
    if not pods:
        return None
    return max(pods, key=lambda p: str((p.get("metadata") or {}).get("creationTimestamp")))


def _open_log(
    backend: K8sBackend, ref: AppRef, pod: dict[str, Any], options: dict[str, Any]
) -> Any:
    """The pod's log as a stream (None: its container has not started, or it is gone).

    Opening is retried like any call (the API server's 5xx, as when it cannot reach
    the node); a container still waiting to start (400) or a pod removed meanwhile
    (404) has no log to give.
    """
    if not _started(pod):
        return None
    kwargs = dict(options)
    container = (((pod.get("spec") or {}).get("containers")) or [{}])[0].get("name")
    if container:
        kwargs["container"] = container
    name = pod["metadata"]["name"]
    try:
        return backend.call(
            lambda: backend.open_log(ref, name, **kwargs), f"reading the log of pod {name}"
        )
    except SchedulerError as e:
        if api_status(e.__cause__) in (400, 404):
            return None
        raise


def _wait_ended(ended: Callable[[], bool]) -> None:
    """Returns once the app has ended (or is gone): a followed log ends with the app."""
    delay = 0.1
    while not ended():
        time.sleep(delay)  # the object's status has no event to wait on here
        delay = min(delay * 1.5, 2.0)


def _follow(
    backend: K8sBackend,
    ref: AppRef,
    selector: str,
    options: dict[str, Any],
    ended: Callable[[], bool],
) -> Iterator[bytes]:
    """The replica's log, followed: waits for its container to start (or for the app
    to end without it), then streams the log until the container exits."""
    delay = 0.2
    while True:
        pod = _newest_pod(backend, ref, selector)
        if pod is not None and _started(pod):
            answer = _open_log(backend, ref, pod, options)
            if answer is not None:
                yield from _decode(answer)
                _wait_ended(ended)
                return
        if ended():
            return  # ended (or deleted) with no log left to read
        time.sleep(delay)  # no event to wait on through this API without a watch
        delay = min(delay * 1.5, 2.0)


def _decode(answer: Any) -> Iterator[bytes]:
    """The raw chunks of a log answer (decoded per line by :func:`_whole_lines`: a piece
    boundary may fall inside a character)."""
    try:
        yield from answer.stream(LOG_CHUNK, decode_content=True)
    finally:
        answer.release_conn()


def _started(pod: dict[str, Any]) -> bool:
    """Has the pod's (first) container started: is there a log to read?"""
    phase = (pod.get("status") or {}).get("phase")
    if phase in ("Running", "Succeeded", "Failed"):
        cs = status._container_status(pod)
        state = cs.get("state") or {}
        return not state.get("waiting") or bool(cs.get("lastState", {}).get("terminated"))
    return False


def _whole_lines(chunks: Iterable[bytes]) -> Iterator[str]:
    """The lines of a stream whose chunks end anywhere (HTTP chunks split lines), each with
    its ``\\n`` (the last one without, if the stream ends without one), the pieces of a
    long line joined (see the module).

    >>> piece = b"a" * PIECE
    >>> log = b"2026-01-01T00:00:00.1Z " + piece + b"2026-01-01T00:00:00.2Z bc\\nT d\\n"
    >>> [(len(x), x[:24], x[-4:]) for x in _whole_lines([log[:5], log[5:20000], log[20000:]])]
    [(16410, '2026-01-01T00:00:00.1Z a', 'abc\\n'), (4, 'T d\\n', 'T d\\n')]
    """
    buf = bytearray()
    for chunk in chunks:
        start = len(buf)  # only the new bytes are searched: a long line is read once
        buf += chunk
        end = buf.rfind(b"\n", start)
        if end < 0:
            continue
        whole = bytes(buf[: end + 1])
        del buf[: end + 1]
        for line in whole.split(b"\n")[:-1]:
            yield _joined(line).decode("utf-8", "replace") + "\n"
    if buf:
        yield _joined(bytes(buf)).decode("utf-8", "replace")


def _joined(line: bytes) -> bytes:
    """``line`` (its leading timestamp kept) without the timestamps of its later pieces:
    each found :data:`PIECE` bytes after the start of the piece before it."""
    head = line.find(b" ") + 1
    if len(line) - head <= PIECE or not _STAMP.match(line, 0, head):
        return line
    out, pos = [line[:head]], head
    while len(line) - pos > PIECE:
        stamp = _STAMP.match(line, pos + PIECE)
        if stamp is None:
            break
        out.append(line[pos : pos + PIECE])
        pos = stamp.end()
    out.append(line[pos:])
    return b"".join(out)
