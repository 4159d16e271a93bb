"""Retrying calls that failed transiently: exponential backoff with jitter, bounded.

Talking to a scheduler's backend may fail for reasons that go away on their own: a
timeout, throttling, a 5xx answer. Schedulers report those as
:class:`~torchx.schedulers.contract.errors.TransientSchedulerError` (or ``TimeoutError`` /
``ConnectionError``), and :func:`call_with_retries` retries them::

    from torchx.schedulers.helpers.retry import Backoff, call_with_retries

    job = call_with_retries(
        lambda: client.get_job(job_id),
        f"status of job {job_id}",
        Backoff(deadline=30),
        classify=self.classify_error,  # the scheduler's one map of its SDK's errors
    )

It is the one implementation of retries in TorchX: the Runner wraps its read-only or
idempotent scheduler calls in it (``describe``, ``list``, ``cancel``, ``delete``,
opening a log; so ``torchx status`` and ``torchx run --wait`` ride out a blip of the
backend instead of reporting a failed app), and plugins wrap their own calls to the
backend in it.

What it does:

* the n-th retry waits ``Backoff.delay(n)``: exponential, capped, spread by a random
  jitter so that many clients do not retry in lock-step;
* a :class:`~torchx.schedulers.contract.errors.TransientSchedulerError` with ``retry_after``
  (the backend's HTTP ``Retry-After``, or an AWS throttling delay; see
  :func:`parse_retry_after`) is never retried sooner than that;
* ``classify`` (the scheduler's ``classify_error``) maps any other exception to the
  contract's: a transient one is retried, a permanent :class:`SchedulerError` is raised
  at once (chained to the SDK's), and None leaves the exception as it is;
* when the budget (``Backoff.attempts``, ``Backoff.deadline``) is spent,
  :class:`RetriesExhaustedError` says what was being done, how many attempts over how
  long, and the last failure. It is *not* transient, so a caller that also retries does
  not retry it again; the app's state is then unknown, never failed.

Submitting is different: a retried create may create twice. The rules for a
``schedule`` made of several calls (create a job definition, then the job; a
ConfigMap, then the pods):

1. Retry a step only if doing it twice is harmless: a read, a delete, a create the
   backend makes idempotent (a client token, a name it refuses to create twice, as
   ``make_app_id`` gives each app).
2. A create that is not idempotent is not retried blindly: after a transient failure
   (a timeout: it may have happened), look it up by its unique name first, and create
   again only if it is not there.
3. A submit that fails removes what it created, in reverse order (each removal may be
   retried: a delete is idempotent), then raises the first error. No half-submitted
   app is left behind, and the user sees why the submit failed, not why a cleanup did.

:func:`create_once` is rules 2 and 3 for one create: it retries it like
:func:`call_with_retries`, but before each retry it looks the thing up (``find``), or
takes the backend's "that name exists" answer to a retry (``exists``) as the first
attempt's success, and when it finally fails after an attempt that may have created
the thing (a transient failure), it calls ``undo`` (a delete by the unique name)::

    job_id = create_once(
        lambda: batch.submit_job(jobName=name, ...)["jobId"],
        f"submit job {name}",
        classify=self.classify_error,
        find=lambda: job_id_named(name),  # None: not there, create it again
    )
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar, overload

import attrs

from torchx.schedulers.contract.errors import SchedulerError, TransientSchedulerError

__all__ = [
    "TRANSIENT_ERRORS",
    "Backoff",
    "RetriesExhaustedError",
    "call_with_retries",
    "create_once",
    "is_transient",
    "parse_retry_after",
]

R = TypeVar("R")

#: The exceptions treated as transient (retried with backoff).
TRANSIENT_ERRORS: tuple[type[BaseException], ...] = (
    TransientSchedulerError,
    TimeoutError,
    ConnectionError,
)

#: What maps an exception to the contract's error (None: leave it as it is).
Classifier = Callable[[BaseException], "BaseException | None"]


def is_transient(e: BaseException) -> bool:
    """True for the errors :func:`call_with_retries` retries (:data:`TRANSIENT_ERRORS`)."""
    return isinstance(e, TRANSIENT_ERRORS)


class RetriesExhaustedError(SchedulerError):
    """A scheduler call kept failing transiently until the retry budget was spent.

    ``attempts`` and ``elapsed`` (seconds) say how hard the caller tried; the last
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
    """How a transient failure is retried.

    The n-th retry (n = 0, 1, ...) waits ``min(max_delay, initial * multiplier**n)``
    seconds, spread by +/- ``jitter`` (a fraction) so that many clients do not retry
    in lock-step. No retry is made that would start later than ``deadline`` seconds
    after the first call (``None``: no deadline); ``attempts``, when given, also caps
    the number of calls. By default only the deadline bounds the retries, so the budget
    is the time the warning promises ("retrying for up to 60 s"): an outage of the
    backend shorter than that (a daemon or API server restarting) is ridden out, which
    a count of attempts (6 took 7 to 9 s) did not do.

    >>> Backoff(initial=1.0, multiplier=2.0, max_delay=5.0, jitter=0.0).delay(3)
    5.0
    """

    attempts: int | None = attrs.field(default=None)
    initial: float = attrs.field(default=0.25, validator=_check_positive)
    multiplier: float = attrs.field(default=2.0, validator=_check_positive)
    max_delay: float = attrs.field(default=5.0, validator=_check_positive)
    jitter: float = attrs.field(default=0.2, validator=_check_positive)
    deadline: float | None = 60.0

    @attempts.validator
    def _check_attempts(self, attribute: attrs.Attribute[int | None], value: int | None) -> None:
        del attribute
        if value is not None and value < 1:
            raise ValueError(f"Backoff.attempts must be >= 1, got {value!r}")

    def __attrs_post_init__(self) -> None:
        if self.attempts is None and self.deadline is None:
            raise ValueError("Backoff needs a bound: give attempts or deadline (or both)")

    def delay(self, retry: int, rand: float = 0.5) -> float:
        """Seconds to wait before retry number ``retry``; ``rand`` in [0, 1) picks the jitter."""
        base = min(self.max_delay, self.initial * self.multiplier**retry)
        return max(0.0, base * (1.0 + self.jitter * (2.0 * rand - 1.0)))


#: The budget when the caller gives none: what the Runner uses by default.
DEFAULT_BACKOFF = Backoff()


def call_with_retries(
    fn: Callable[[], R],
    what: str,
    backoff: Backoff | None = None,
    *,
    classify: Classifier | None = None,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> R:
    """Calls ``fn`` until it returns, retrying transient failures with ``backoff``.

    ``what`` names the operation for log lines and the final error (e.g.
    ``"status of local://torchx/app-1"``). An exception ``fn`` raises is first given to
    ``classify`` (see the module); a transient one (:func:`is_transient`) is retried,
    any other propagates at once. ``sleep`` and ``clock`` are for tests.

    Nothing but the call itself happens on a first, successful attempt (``random`` and
    ``logging`` load only when a retry is needed: a status call stays cheap).
    """
    backoff = backoff or DEFAULT_BACKOFF
    start = clock()
    attempt = 0
    while True:
        attempt += 1
        try:
            return fn()
        except Exception as raised:
            e: BaseException = raised
            if classify is not None:
                mapped = classify(raised)
                if mapped is not None and mapped is not raised:
                    mapped.__cause__ = raised
                    e = mapped
            if not is_transient(e):
                if e is raised:
                    raise
                raise e from raised
            import logging
            import random

            elapsed = clock() - start
            wait = backoff.delay(attempt - 1, random.random())
            asked = getattr(e, "retry_after", None)
            if asked is not None:
                wait = max(wait, float(asked))
            out_of_time = backoff.deadline is not None and elapsed + wait > backoff.deadline
            if (backoff.attempts is not None and attempt >= backoff.attempts) or out_of_time:
                told = f"; the backend asked to wait {asked:g}s" if asked else ""
                raise RetriesExhaustedError(
                    f"{what}: the scheduler kept failing transiently; gave up after "
                    f"{attempt} attempt{'s' if attempt > 1 else ''} in {elapsed:.1f}s"
                    f"{told} (last error: {type(e).__name__}: {e}); the app's state is "
                    "unknown, not failed: try again later",
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
                "%s: transient failure (attempt %d of %s, retrying in %.3fs): %s: %s",
                what,
                attempt,
                backoff.attempts or "unbounded",
                wait,
                type(e).__name__,
                e,
            )
            sleep(wait)


def parse_retry_after(value: str | None, now: float | None = None) -> float | None:
    """Seconds to wait from an HTTP ``Retry-After`` header; None if absent or unreadable.

    The header is either a number of seconds or an HTTP date (``now``, seconds since
    the epoch, defaults to the current time); a date in the past gives 0.

    >>> parse_retry_after("120")
    120.0
    >>> parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT", now=1445412470.0)
    10.0
    >>> parse_retry_after("soon") is None
    True
    """
    if value is None:
        return None
    text = value.strip()
    if text.isascii() and text.isdigit():
        return float(text)
    from email.utils import parsedate_to_datetime

    try:
        when = parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    if when.tzinfo is None:  # an HTTP date is always GMT
        import datetime as _dt

        when = when.replace(tzinfo=_dt.UTC)
    current = time.time() if now is None else now
    return max(0.0, when.timestamp() - current)


@overload
def create_once(
    create: Callable[[], R],
    what: str,
    backoff: Backoff | None = None,
    *,
    classify: Classifier | None = None,
    find: Callable[[], R | None],
    exists: None = None,
    undo: Callable[[], object] | None = None,
) -> R: ...


@overload
def create_once(
    create: Callable[[], object],
    what: str,
    backoff: Backoff | None = None,
    *,
    classify: Classifier | None = None,
    find: None = None,
    exists: Callable[[BaseException], bool],
    undo: Callable[[], object] | None = None,
) -> None: ...


def create_once(
    create: Callable[[], R],
    what: str,
    backoff: Backoff | None = None,
    *,
    classify: Classifier | None = None,
    find: Callable[[], R | None] | None = None,
    exists: Callable[[BaseException], bool] | None = None,
    undo: Callable[[], object] | None = None,
) -> R | None:
    """Makes something that has a unique name once, retrying transient failures (rule 2).

    A create that failed transiently may have happened (its answer was lost), so a retry
    never creates blindly. Give one of:

    * ``find``: called before every retry; what it returns (not None) is taken as the
      create's result, and nothing is created again (a look-up by the unique name);
    * ``exists``: for a backend that refuses a name twice (HTTP 409, ``ResourceInUse``):
      an error of a *retry* for which it is true means the first attempt made it, and
      the create is done (its answer is not needed: None is returned).

    ``undo`` (rule 3) is called when the create finally fails after an attempt that
    failed transiently (so it may have made the thing): a delete by the unique name,
    so that a failed submit leaves nothing. Its own failure is ignored (the create's
    error is the one to tell). Retries, ``backoff`` and ``classify`` are
    :func:`call_with_retries`'s.

    >>> made = []
    >>> def create():
    ...     made.append("job-1")
    ...     if len(made) == 1:
    ...         raise TimeoutError("the answer was lost")
    ...     raise AssertionError("never created twice")
    >>> create_once(create, "create job-1", Backoff(initial=0), find=lambda: made and made[0])
    'job-1'
    """
    attempts = 0
    unsure = False  # did an attempt fail in a way that may have created the thing?

    def attempt() -> R | None:
        nonlocal attempts, unsure
        attempts += 1
        if attempts > 1 and find is not None:
            found = find()
            if found is not None:
                return found
        try:
            return create()
        except Exception as e:
            if attempts > 1 and exists is not None and exists(e):
                return None
            mapped = classify(e) if classify is not None else None
            unsure = unsure or is_transient(mapped if mapped is not None else e)
            raise

    try:
        return call_with_retries(attempt, what, backoff, classify=classify)
    except BaseException:
        if unsure and undo is not None:
            try:
                undo()
            except Exception:
                pass
        raise
