"""A replica's log, from the API's pod log: read once, or followed until the app ends.

``log_iter`` of both schedulers is :func:`replica_log`: the replica's newest pod (one
pod list by label selector), then its log (stdout and stderr together: the API has no
separate streams before Kubernetes 1.32), streamed in chunks of :data:`LOG_CHUNK` bytes
and cut into whole lines. ``should_tail`` waits for the container to start (or for the
app to end without it), follows the log until the container exits, then returns once
the app has ended. ``since`` is sent as ``sinceSeconds``, and both bounds are applied to
the lines' own times (requested with ``timestamps``).

Nothing here decides when an app has ended: the scheduler passes ``ended`` (the
``kubernetes_mcad`` scheduler's looks at the pods too).
"""

from __future__ import annotations

import codecs
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
    chunks: Iterable[str]
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
) -> Iterator[str]:
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


def _decode(answer: Any) -> Iterator[str]:
    decoder = codecs.getincrementaldecoder("utf-8")("replace")
    try:
        for chunk in answer.stream(LOG_CHUNK, decode_content=True):
            text = decoder.decode(chunk)
            if text:
                yield text
    finally:
        answer.release_conn()
    tail = decoder.decode(b"", final=True)
    if tail:
        yield tail


def _started(pod: dict[str, Any]) -> bool:
    """Has the pod's (first) container started: is there a log to read?"""
    phase = (pod.get("status") or {}).get("phase")
    if phase in ("Running", "Succeeded", "Failed"):
        cs = status._container_status(pod)
        state = cs.get("state") or {}
        return not state.get("waiting") or bool(cs.get("lastState", {}).get("terminated"))
    return False


def _whole_lines(chunks: Iterable[str]) -> Iterator[str]:
    """The lines of a stream whose chunks end anywhere (HTTP chunks split lines), each with
    its ``\\n`` (the last one without, if the stream ends without one)."""
    rest = ""
    for chunk in chunks:
        parts = (rest + chunk).split("\n")
        rest = parts.pop()
        for part in parts:
            yield part + "\n"
    if rest:
        yield rest
