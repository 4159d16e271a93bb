"""Property tests of the one duration and time parser (``torchx.specs.durations``)."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from torchx.specs.durations import (
    UNITS,
    InvalidDurationException,
    parse_duration,
    parse_time,
)
from torchx.specs.errors import SpecError

parts = st.lists(st.tuples(st.integers(0, 10**6), st.sampled_from("smhdwSMHDW")), min_size=1)
NOW = datetime(2026, 11, 25, 12, 0, 0)


def _text(pieces: list[tuple[int, str]], sep: str = "") -> str:
    return sep.join(f"{n}{unit}" for n, unit in pieces)


def _seconds(pieces: list[tuple[int, str]]) -> int:
    return sum(n * UNITS[unit.lower()] for n, unit in pieces)


@given(parts, st.sampled_from(["", " "]))
def test_a_duration_is_the_sum_of_its_parts(pieces: list[tuple[int, str]], sep: str) -> None:
    assert parse_duration(_text(pieces, sep)) == _seconds(pieces)


@given(parts, st.sampled_from(["", " ago", "ago", "  ago "]))
def test_a_time_is_a_duration_ago(pieces: list[tuple[int, str]], ago: str) -> None:
    seconds = min(_seconds(pieces), 10**9)  # within datetime's range from NOW
    capped = [(seconds, "s")] if seconds != _seconds(pieces) else pieces
    assert parse_time(_text(capped) + ago, now=NOW) == NOW - timedelta(seconds=seconds)


@given(st.datetimes(min_value=datetime(1970, 1, 2), max_value=datetime(2100, 1, 1)))
def test_iso_times_round_trip(when: datetime) -> None:
    assert parse_time(when.isoformat()) == when


@given(st.text(max_size=20))
def test_anything_else_is_a_one_line_error(text: str) -> None:
    for parse in (parse_duration, parse_time):
        try:
            parse(text)  # type: ignore[operator]
        except InvalidDurationException as e:
            assert isinstance(e, SpecError) and isinstance(e, ValueError)
            assert str(e).startswith("bad ") and "expected" in str(e) and "\n" not in str(e)


@pytest.mark.parametrize("bad", ["", "5", "m", "5x", "1.h", "5m ago ago", "1h-30m", "ago", "inf s"])
def test_the_errors_name_the_forms(bad: str) -> None:
    with pytest.raises(InvalidDurationException, match=r"expected .*1d12h"):
        parse_duration(bad)
    with pytest.raises(InvalidDurationException, match=r"ISO 8601 .*5m ago"):
        parse_time(bad)


def test_a_time_too_long_ago_is_an_error_not_an_overflow() -> None:
    with pytest.raises(InvalidDurationException, match="too long ago"):
        parse_time("999999999w ago")
