"""Reading a CloudWatch Logs stream as TorchX log lines: bounded in time, filtered, followed.

AWS Batch (and SageMaker) send each container's output to a CloudWatch Logs stream.
:func:`stream_log` turns one stream into what ``Scheduler.log_iter`` returns::

    from torchx_aws.cwlogs import stream_log

    return stream_log(
        logs_client, "/aws/batch/job", stream_name,
        since=since, until=until, regex=regex,
        should_tail=should_tail, is_done=lambda: self._ended(app_id),
        classify=self.classify_error,
    )

How it reads: ``GetLogEvents`` from the head of the stream (``startFromHead``), with
``startTime``/``endTime`` from ``since``/``until`` (AWS filters by the event's time),
page after page by ``nextForwardToken``. CloudWatch answers the token it was given when
there is nothing newer (the end of the stream), and an answer may be empty with a new
token while more is still to come: such answers are read through, so that an empty
page means the end, as :func:`~torchx.schedulers.helpers.paged.paged_lines` expects. The
pages are walked by :func:`torchx.schedulers.helpers.paged.paged_lines` (the token is the
cursor), so a line is never yielded twice and none is skipped, however the answers are
cut. A stream that does not exist yet (the container has not started, or, on an
emulator, has not ended) is read as empty: followed, it is waited for. Each call is
retried on throttling and 5xx (:func:`torchx.schedulers.helpers.retry.call_with_retries`).

The result is a :class:`~torchx.schedulers.helpers.polling.Polled` log: one thread can follow
every replica's stream.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import datetime
from typing import Any

from torchx.schedulers.helpers.paged import INTERVAL, Page, paged_lines
from torchx.schedulers.helpers.polling import Polled, matching_lines
from torchx.schedulers.helpers.retry import Backoff, Classifier, call_with_retries

__all__ = ["PAGE_LIMIT", "stream_log", "stream_pages"]

#: Events per GetLogEvents answer (AWS's own maximum is 10,000).
PAGE_LIMIT = 10_000
#: Empty answers with a new token read in a row before a page is given back empty (the
#: stream's end is the token given back unchanged; a follow then asks again later).
_EMPTY_PAGES = 100
_BACKOFF = Backoff(attempts=8, deadline=60.0)


def _millis(when: datetime | None) -> int | None:
    return None if when is None else int(when.timestamp() * 1000)


def stream_pages(
    client: Any,
    group: str,
    stream: str | Callable[[], str | None],
    *,
    since: datetime | None = None,
    until: datetime | None = None,
    classify: Classifier | None = None,
    limit: int = PAGE_LIMIT,
) -> Callable[[str | None], Page[str | None]]:
    """The ``fetch`` of :func:`~torchx.schedulers.helpers.paged.paged_lines` for one stream.

    ``stream`` is the stream's name, or a function giving it (None while it is not
    known yet: the replica has not started). The cursor is CloudWatch's
    ``nextForwardToken``.
    """

    def fetch(token: str | None) -> Page[str | None]:
        name = stream() if callable(stream) else stream
        if not name:
            return Page([], token)
        kwargs: dict[str, Any] = {
            "logGroupName": group,
            "logStreamName": name,
            "startFromHead": True,
            "limit": limit,
        }
        if token is not None:
            kwargs["nextToken"] = token
        start, end = _millis(since), _millis(until)
        if start is not None:
            kwargs["startTime"] = start
        if end is not None:
            kwargs["endTime"] = end + 1  # endTime is exclusive; ``until`` is not

        def call() -> Any:
            return client.get_log_events(**kwargs)

        given = token
        for _ in range(_EMPTY_PAGES):
            try:
                answer = call_with_retries(
                    call, f"logs of {group}/{name}", _BACKOFF, classify=classify
                )
            except Exception as e:
                if _missing(e):
                    return Page([], given)  # not written yet
                raise
            events = answer.get("events") or []
            lines = [str(event.get("message", "")) for event in events]
            after = answer.get("nextForwardToken") or kwargs.get("nextToken")
            if lines or after == kwargs.get("nextToken"):
                return Page(lines, after)
            kwargs["nextToken"] = after  # an empty page that is not the end: go on
        return Page([], kwargs.get("nextToken"))

    return fetch


def _missing(e: BaseException) -> bool:
    """True for CloudWatch's answer about a group or stream that does not exist."""
    for err in (e, e.__cause__):
        response = getattr(err, "response", None)
        if isinstance(response, dict):
            code = (response.get("Error") or {}).get("Code")
            if code == "ResourceNotFoundException":
                return True
    return False


def stream_log(
    client: Any,
    group: str,
    stream: str | Callable[[], str | None],
    *,
    since: datetime | None = None,
    until: datetime | None = None,
    regex: str | None = None,
    should_tail: bool = False,
    is_done: Callable[[], bool] = lambda: True,
    classify: Classifier | None = None,
    interval: float = INTERVAL,
    limit: int = PAGE_LIMIT,
) -> Polled:
    """The lines of one stream (see the module), each ending in ``\\n``."""
    fetch = stream_pages(
        client, group, stream, since=since, until=until, classify=classify, limit=limit
    )

    def source() -> Iterator[str]:
        lines = paged_lines(fetch, should_tail=should_tail, is_done=is_done, interval=interval)
        return matching_lines(regex, lines) if regex else lines

    return Polled(source)
