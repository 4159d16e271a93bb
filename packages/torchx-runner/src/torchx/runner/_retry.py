"""Retrying calls that failed transiently: exponential backoff with jitter, bounded.

Talking to a scheduler's backend may fail for reasons that go away on their own: a
timeout, throttling, a 5xx answer. Schedulers report those as
:class:`~torchx.schedulers.api.TransientSchedulerError` (or ``TimeoutError`` /
``ConnectionError``). The Runner wraps its *read-only or idempotent* scheduler calls
(describe, list, log_iter, cancel, delete) in :func:`call_with_retries`, so that a
blip while polling is retried instead of being reported as a failed app. Submitting
(``schedule``) is never retried: it is not idempotent.

When every attempt failed, :class:`RetriesExhaustedError` says what was being done,
how many attempts over how long, and the last failure. It is *not* transient itself,
so a caller that also retries does not retry it again.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import attrs

from torchx.schedulers.api import SchedulerError, TransientSchedulerError

__all__ = ["TRANSIENT_ERRORS", "Backoff", "RetriesExhaustedError", "call_with_retries"]

R = TypeVar("R")

#: The exceptions treated as transient (retried with backoff).
TRANSIENT_ERRORS: tuple[type[BaseException], ...] = (
    TransientSchedulerError,
    TimeoutError,
    ConnectionError,
)


class RetriesExhaustedError(SchedulerError):
    """A scheduler call kept failing transiently until the retry budget was spent.

    ``attempts`` and ``elapsed`` (seconds) say how hard the Runner tried; the last
    transient failure is the ``__cause__``.
    """

    def __init__(self, message: str, attempts: int, elapsed: float) -> None:
        super().__init__(message)
        self.attempts = attempts
        self.elapsed = elapsed


def _check_positive(instance: object, attribute: attrs.Attribute[float], value: float) -> None:
    del instance
    if value < 0:
        raise ValueError(f"Backoff.{attribute.name} must be >= 0, got {value!r}")


@attrs.frozen
class Backoff:
    """How the Runner retries a transient failure.

    The n-th retry (n = 0, 1, ...) waits ``min(max_delay, initial * multiplier**n)``
    seconds, spread by +/- ``jitter`` (a fraction) so that many clients do not retry
    in lock-step. At most ``attempts`` calls are made, and no retry starts once
    ``deadline`` seconds have passed since the first call (``None``: no deadline).

    >>> Backoff(initial=1.0, multiplier=2.0, max_delay=5.0, jitter=0.0).delay(3)
    5.0
    """

    attempts: int = attrs.field(default=6)
    initial: float = attrs.field(default=0.25, validator=_check_positive)
    multiplier: float = attrs.field(default=2.0, validator=_check_positive)
    max_delay: float = attrs.field(default=5.0, validator=_check_positive)
    jitter: float = attrs.field(default=0.2, validator=_check_positive)
    deadline: float | None = 60.0

    @attempts.validator
    def _check_attempts(self, attribute: attrs.Attribute[int], value: int) -> None:
        del attribute
        if value < 1:
            raise ValueError(f"Backoff.attempts must be >= 1, got {value!r}")

    def delay(self, retry: int, rand: float = 0.5) -> float:
        """Seconds to wait before retry number ``retry``; ``rand`` in [0, 1) picks the jitter."""
        base = min(self.max_delay, self.initial * self.multiplier**retry)
        return max(0.0, base * (1.0 + self.jitter * (2.0 * rand - 1.0)))


def call_with_retries(
    fn: Callable[[], R],
    what: str,
    backoff: Backoff,
    sleep: Callable[[float], None],
    clock: Callable[[], float],
) -> R:
    """Calls ``fn`` until it returns, retrying :data:`TRANSIENT_ERRORS` with ``backoff``.

    ``what`` names the operation for log lines and the final error (e.g.
    ``"status of local://torchx/app-1"``). Any other exception propagates at once.
    Nothing but the call itself happens on the first, successful attempt (``random`` and
    ``logging`` load only when a retry is needed: a status call stays cheap).
    """
    start = clock()
    attempt = 0
    while True:
        attempt += 1
        try:
            return fn()
        except TRANSIENT_ERRORS as e:
            import logging
            import random

            elapsed = clock() - start
            wait = backoff.delay(attempt - 1, random.random())
            out_of_time = backoff.deadline is not None and elapsed + wait > backoff.deadline
            if attempt >= backoff.attempts or out_of_time:
                raise RetriesExhaustedError(
                    f"{what}: the scheduler kept failing transiently; gave up after "
                    f"{attempt} attempt{'s' if attempt > 1 else ''} in {elapsed:.1f}s "
                    f"(last error: {type(e).__name__}: {e}); the app's state is unknown, "
                    "not failed: try again later",
                    attempts=attempt,
                    elapsed=elapsed,
                ) from e
            log = logging.getLogger("torchx.runner")
            if attempt == 1:
                # said once, so that a slow answer is never silent (a CLI user sees it on
                # stderr through logging's last-resort handler); later attempts at debug
                budget = f" for up to {backoff.deadline:g} s" if backoff.deadline else ""
                log.warning("%s: %s; retrying%s", what, e or type(e).__name__, budget)
            log.debug(
                "%s: transient failure (attempt %d of %d, retrying in %.3fs): %s: %s",
                what,
                attempt,
                backoff.attempts,
                wait,
                type(e).__name__,
                e,
            )
            sleep(wait)
