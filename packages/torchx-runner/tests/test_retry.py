"""torchx.schedulers.helpers.retry: backoff, Retry-After, the classifier hook, the budget."""

from __future__ import annotations

import math
from collections.abc import Callable
from datetime import UTC, datetime
from email.utils import format_datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from torchx.schedulers.contract.errors import SchedulerError, TransientSchedulerError
from torchx.schedulers.helpers.retry import (
    Backoff,
    RetriesExhaustedError,
    call_with_retries,
    create_once,
    is_transient,
    parse_retry_after,
)

FAST = Backoff(attempts=5, initial=0.01, multiplier=2.0, max_delay=1.0, jitter=0.0, deadline=None)


class Clock:
    """A fake clock: sleeping advances it, and every sleep is recorded."""

    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []

    def sleep(self, s: float) -> None:
        self.sleeps.append(s)
        self.now += s

    def __call__(self) -> float:
        return self.now


def failing(*errors: BaseException, result: str = "ok") -> tuple[list[int], Callable[[], str]]:
    calls = [0]
    pending = list(errors)

    def fn() -> str:
        calls[0] += 1
        if pending:
            raise pending.pop(0)
        return result

    return calls, fn


def test_transient_failures_are_retried_with_exponential_backoff() -> None:
    clock = Clock()
    calls, fn = failing(TransientSchedulerError("503"), TimeoutError(), ConnectionError())
    assert call_with_retries(fn, "x", FAST, sleep=clock.sleep, clock=clock) == "ok"
    assert calls[0] == 4
    assert clock.sleeps == [0.01, 0.02, 0.04]


def test_the_default_budget_is_the_time_the_warning_says() -> None:
    """An outage of 50 s (a daemon restarting) is ridden out by the default budget,
    which says "retrying for up to 60 s"; 6 attempts (about 8 s) gave up before."""
    clock = Clock()
    outage = 50.0

    def down_for_a_while() -> str:
        if clock.now < outage:
            raise TransientSchedulerError("503")
        return "ok"

    assert call_with_retries(down_for_a_while, "x", sleep=clock.sleep, clock=clock) == "ok"
    assert clock.now >= outage

    clock = Clock()
    with pytest.raises(RetriesExhaustedError) as e:
        call_with_retries(
            lambda: (_ for _ in ()).throw(TimeoutError()), "x", sleep=clock.sleep, clock=clock
        )
    assert 60.0 - 5.0 * 1.2 <= e.value.elapsed <= 60.0  # up to 60 s, never past it


def test_a_budget_without_any_bound_is_refused() -> None:
    with pytest.raises(ValueError, match="give attempts or deadline"):
        Backoff(deadline=None)


def test_retry_after_is_honoured() -> None:
    """A backend that said how long to wait is not asked again sooner."""
    clock = Clock()
    calls, fn = failing(TransientSchedulerError("429", retry_after=3.0), TimeoutError())
    call_with_retries(fn, "x", FAST, sleep=clock.sleep, clock=clock)
    assert calls[0] == 3
    assert clock.sleeps == [3.0, 0.02]  # then back to the backoff


def test_a_retry_after_beyond_the_deadline_gives_up_and_says_why() -> None:
    clock = Clock()
    backoff = Backoff(attempts=10, initial=0.01, jitter=0.0, deadline=5.0)
    calls, fn = failing(*[TransientSchedulerError("throttled", retry_after=30.0)] * 10)
    with pytest.raises(RetriesExhaustedError) as e:
        call_with_retries(fn, "list jobs", backoff, sleep=clock.sleep, clock=clock)
    assert calls[0] == 1 and clock.sleeps == []
    message = str(e.value)
    assert message.startswith("list jobs: ") and "asked to wait 30s" in message
    assert "not failed" in message and "\n" not in message


def test_the_classifier_maps_sdk_errors() -> None:
    """One place maps the SDK's errors: transient ones are retried, permanent ones raised."""

    class Throttled(Exception):
        pass

    class Forbidden(Exception):
        pass

    def classify(e: BaseException) -> SchedulerError | None:
        if isinstance(e, Throttled):
            return TransientSchedulerError("throttled", retry_after=1.5)
        if isinstance(e, Forbidden):
            return SchedulerError("the backend refused: 403 forbidden")
        return None

    clock = Clock()
    calls, fn = failing(Throttled(), Throttled())
    assert (
        call_with_retries(fn, "x", FAST, classify=classify, sleep=clock.sleep, clock=clock) == "ok"
    )
    assert calls[0] == 3 and clock.sleeps == [1.5, 1.5]

    calls, fn = failing(Forbidden())
    with pytest.raises(SchedulerError, match="403 forbidden") as e:
        call_with_retries(fn, "x", FAST, classify=classify, sleep=clock.sleep, clock=clock)
    assert calls[0] == 1 and isinstance(e.value.__cause__, Forbidden)

    calls, fn = failing(KeyError("bug"))  # not the SDK's: left alone, not retried
    with pytest.raises(KeyError):
        call_with_retries(fn, "x", FAST, classify=classify, sleep=clock.sleep, clock=clock)
    assert calls[0] == 1


def test_exhausted_retries_chain_the_last_error_and_are_not_transient() -> None:
    clock = Clock()
    calls, fn = failing(*[TransientSchedulerError("503")] * 10)
    with pytest.raises(RetriesExhaustedError) as e:
        call_with_retries(fn, "status of x", FAST, sleep=clock.sleep, clock=clock)
    assert calls[0] == FAST.attempts == e.value.attempts
    assert isinstance(e.value.__cause__, TransientSchedulerError)
    assert not is_transient(e.value)


def test_a_first_successful_call_does_not_sleep_or_read_the_clock_twice() -> None:
    reads = []
    assert call_with_retries(lambda: 1, "x", clock=lambda: reads.append(1) or 0.0) == 1
    assert reads == [1]


def test_bad_retry_after() -> None:
    with pytest.raises(ValueError, match="retry_after must be >= 0"):
        TransientSchedulerError("x", retry_after=-1)
    with pytest.raises(ValueError):
        TransientSchedulerError("x", retry_after=math.nan)
    assert TransientSchedulerError("x").retry_after is None


@given(
    retry=st.integers(0, 60),
    rand=st.floats(0, 1, exclude_max=True),
    backoff=st.builds(
        Backoff,
        initial=st.floats(0, 10),
        multiplier=st.floats(1, 4),
        max_delay=st.floats(0, 100),
        jitter=st.floats(0, 1),
    ),
)
def test_delays_stay_within_the_jittered_cap(retry: int, rand: float, backoff: Backoff) -> None:
    delay = backoff.delay(retry, rand)
    assert 0 <= delay <= backoff.max_delay * (1 + backoff.jitter) + 1e-9
    assert backoff.delay(retry + 1, rand) >= delay - 1e-9  # never shrinks (same jitter)


@given(st.integers(0, 10**9))
def test_retry_after_seconds(seconds: int) -> None:
    assert parse_retry_after(str(seconds)) == float(seconds)
    assert parse_retry_after(f"  {seconds} ") == float(seconds)


@given(st.integers(0, 4 * 10**9), st.integers(-(10**6), 10**6))
def test_retry_after_dates(when: int, offset: int) -> None:
    header = format_datetime(datetime.fromtimestamp(when, UTC), usegmt=True)
    assert parse_retry_after(header, now=when - offset) == max(0.0, float(offset))


@given(st.text(max_size=40))
def test_retry_after_never_raises(text: str) -> None:
    got = parse_retry_after(text, now=0.0)
    assert got is None or got >= 0


# -- create_once: a create that is never made twice ------------------------------------------


class Taken(Exception):
    """What a backend answers to a second create of one name (HTTP 409, ResourceInUse)."""


def test_create_once_looks_the_thing_up_before_a_retry() -> None:
    made: list[str] = []

    def create() -> str:
        made.append("job-1")
        raise TimeoutError("the answer was lost")  # ... but the job was made

    found = create_once(create, "create job-1", FAST, find=lambda: made[0] if made else None)
    assert found == "job-1" and made == ["job-1"]


def test_create_once_creates_again_when_the_look_up_finds_nothing() -> None:
    calls, create = failing(TransientSchedulerError("503"), result="job-2")
    looked: list[int] = []
    assert create_once(create, "create", FAST, find=lambda: looked.append(1)) == "job-2"
    assert calls == [2] and looked == [1]  # looked up once: before the retry only


def test_create_once_takes_a_retrys_name_taken_answer_as_done() -> None:
    calls, create = failing(TransientSchedulerError("503"), Taken("exists"))
    assert create_once(create, "create", FAST, exists=lambda e: isinstance(e, Taken)) is None
    assert calls == [2]
    # on a first attempt the name was taken before this submit: that is an error
    calls, create = failing(Taken("exists"))
    with pytest.raises(Taken):
        create_once(create, "create", FAST, exists=lambda e: isinstance(e, Taken))
    assert calls == [1]


def test_create_once_undoes_a_create_that_may_have_happened() -> None:
    undone: list[str] = []

    def undo() -> None:
        undone.append("deleted")
        raise RuntimeError("the undo's own failure is not the one to tell")

    calls, create = failing(*[TransientSchedulerError("503")] * 5)
    with pytest.raises(RetriesExhaustedError):
        create_once(create, "create", FAST, exists=lambda e: False, undo=undo)
    assert calls == [5] and undone == ["deleted"]
    # refused at once (permanent): nothing can have been made, nothing is undone
    undone.clear()
    calls, create = failing(SchedulerError("quota exceeded"))
    with pytest.raises(SchedulerError, match="quota"):
        create_once(create, "create", FAST, exists=lambda e: False, undo=undo)
    assert undone == []


def test_create_once_classifies_like_call_with_retries() -> None:
    def classify(e: BaseException) -> SchedulerError | None:
        return TransientSchedulerError("throttled") if isinstance(e, KeyError) else None

    undone: list[int] = []
    calls, create = failing(KeyError("sdk error"), ValueError("refused"))
    with pytest.raises(ValueError, match="refused"):
        create_once(
            create, "create", FAST, classify=classify, exists=lambda e: False,
            undo=lambda: undone.append(1),
        )  # fmt: skip
    assert calls == [2] and undone == [1]  # the first failure was transient once classified
