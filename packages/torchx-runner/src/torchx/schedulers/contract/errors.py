"""The errors of the Scheduler contract, in a module cheap enough for the CLI to import.

A scheduler raises :class:`SchedulerError` when the backend refused or failed what was
asked (a submit rejected, a queue that does not exist), with a one-line message saying
what and why. :class:`TransientSchedulerError` is the subclass for failures that may go
away when retried (a timeout, throttling, a 5xx answer): the Runner retries those with
backoff (:mod:`torchx.schedulers.helpers.retry`) and never reports an app as FAILED because of
one. When the backend said how long to wait (HTTP 429 or 503 with ``Retry-After``, an
AWS throttling error with a suggested delay), pass it as ``retry_after`` (seconds): no
retry starts sooner. :class:`AuthenticationError` is the subclass for credentials the
backend refused (expired, revoked, none): not retried, and never the app's failure (a
command following an app says its state is unknown, exit 4).

How a plugin maps its SDK's errors, in one place: override
:meth:`Scheduler.classify_error <torchx.schedulers.contract.api.Scheduler.classify_error>`. It
gets any exception that escaped a call into the scheduler and returns the contract's
error it stands for (or None: not the SDK's, leave it alone). The Runner applies it to
everything that escapes ``describe``, ``list``, ``cancel``, ``delete`` and opening a
log, and the plugin passes it to :func:`~torchx.schedulers.helpers.retry.call_with_retries`
around its own calls, so every method reports failures the same way::

    from torchx.schedulers.contract.errors import (
        SchedulerError, TransientSchedulerError, transient_http_status,
    )
    from torchx.schedulers.helpers.retry import parse_retry_after

    class MyScheduler(Scheduler[Mapping[str, CfgVal]]):
        def classify_error(self, e: BaseException) -> SchedulerError | None:
            if isinstance(e, sdk.HTTPError):
                if transient_http_status(e.status):
                    wait = parse_retry_after(e.headers.get("Retry-After"))
                    return TransientSchedulerError(f"{e.status} {e.reason}", retry_after=wait)
                return SchedulerError(f"the backend refused: {e.status} {e.reason}")
            return None

The ``torchx`` CLI prints a :class:`SchedulerError` (and any ``torchx.specs``
``SpecError``) as one line and exits 1; any *other* exception escaping a plugin is
reported as a bug of that plugin (one line naming it, the traceback with
``--log-level debug``), with exit status 3. ``TimeoutError`` and ``ConnectionError``
are treated as transient too, so an SDK that raises those needs no mapping for them.

Which HTTP answers are transient is one rule for every plugin,
:func:`transient_http_status`.

This module imports nothing: ``isinstance`` checks against these classes cost nothing.

This module is the errors' one import home: import them from here.
:mod:`torchx.schedulers.contract.api` re-exports ``SchedulerError`` and
``TransientSchedulerError`` only so that code written for upstream TorchX
(``from torchx.schedulers.api import SchedulerError``) keeps working.
"""

from __future__ import annotations

__all__ = [
    "AuthenticationError",
    "InvalidAppIdError",
    "SchedulerError",
    "TransientSchedulerError",
    "transient_http_status",
]


class SchedulerError(Exception):
    """A scheduler could not do what was asked (the message says what and why)."""


class TransientSchedulerError(SchedulerError):
    """A failure that may go away if retried: timeout, throttling, a 5xx from the backend.

    The Runner retries calls that raise it with backoff, and never reports the app as
    failed because of it. ``retry_after`` (seconds, or None) is how long the backend
    asked to be left alone (HTTP ``Retry-After``, a throttling error's delay): the next
    attempt waits at least that long.
    """

    def __init__(self, *args: object, retry_after: float | None = None) -> None:
        super().__init__(*args)
        if retry_after is not None and not retry_after >= 0:  # also refuses NaN
            raise ValueError(f"retry_after must be >= 0 seconds or None, got {retry_after!r}")
        self.retry_after = retry_after


class AuthenticationError(SchedulerError):
    """The backend did not accept the credentials (expired, revoked, missing).

    Not transient (the same credentials get the same answer, so it is not retried), and it
    says nothing of the app: a command following an app (``run --wait``, ``log -t``)
    reports the app's state as unknown (exit 4), never as failed; the app runs on.
    """


class InvalidAppIdError(SchedulerError, ValueError):
    """An app id that does not have the form of :func:`torchx.schedulers.helpers.ids.validate_app_id`.

    Also a :class:`ValueError`: it is bad input, not a backend failure.
    """


def transient_http_status(status: int) -> bool:
    """Is an HTTP error answer worth retrying? The one rule of every plugin, from RFC 9110.

    Transient: 408 (Request Timeout) and 429 (Too Many Requests), which ask to be asked
    again, and every 5xx (the server failed; it may not next time: 500, 502 Bad Gateway,
    503 Unavailable, 504 Gateway Timeout) except two that say the server will never do
    what was asked, however often: 501 (Not Implemented: it does not support the method)
    and 505 (HTTP Version Not Supported). Any other status is a refusal (permanent).

    >>> [code for code in (400, 404, 408, 409, 429, 500, 501, 503, 505) if transient_http_status(code)]
    [408, 429, 500, 503]
    """
    return status in (408, 429) or (500 <= status <= 599 and status not in (501, 505))
