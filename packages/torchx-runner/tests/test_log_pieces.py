"""The shared log pieces: polled logs, the paged follower, the stream merger, the time window."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from torchx.runner.logs import BlockLog, PolledLog
from torchx.schedulers.helpers.follow import follow_file
from torchx.schedulers.helpers.merge import TURN, merge_lines
from torchx.schedulers.helpers.paged import Page, paged_lines, since_time_fetch
from torchx.schedulers.helpers.polling import Polled, matching_lines
from torchx.schedulers.helpers.window import in_window, split_timestamp, window_lines

lines_st = st.lists(st.text(st.characters(exclude_characters="\n\r"), max_size=8), max_size=40)


def ended(lines: list[str]) -> list[str]:
    return [line + "\n" for line in lines]


# -- the paged follower -------------------------------------------------------------------


class PagedSource:
    """A log served in pages by offset: page sizes decided by ``sizes`` (cycled)."""

    def __init__(self, lines: list[str], sizes: list[int], written: int | None = None) -> None:
        self.lines = lines
        self.sizes = sizes or [1]
        self.written = len(lines) if written is None else written  # lines the app wrote so far
        self.calls = 0

    def fetch(self, cursor: int | None) -> Page[int]:
        start = cursor or 0
        size = self.sizes[self.calls % len(self.sizes)]
        self.calls += 1
        end = min(self.written, start + size)
        return Page(self.lines[start:end], end)


@given(lines_st, st.lists(st.integers(0, 7), min_size=1, max_size=6))
def test_paged_no_repeat_no_loss_across_any_page_split(lines: list[str], sizes: list[int]) -> None:
    source = PagedSource(lines, [max(s, 1) for s in sizes])
    got = list(paged_lines(source.fetch, should_tail=False, is_done=lambda: True))
    assert got == ended(lines)


@given(lines_st, st.lists(st.integers(1, 7), min_size=1, max_size=6), st.integers(0, 5))
def test_paged_follows_until_terminal_and_drained(
    lines: list[str], sizes: list[int], steps_per_line: int
) -> None:
    """The app writes while it is followed; after it is terminal the rest is still read."""
    source = PagedSource(lines, sizes, written=0)
    now = [0.0]
    polls = [0]

    def is_done() -> bool:
        return source.written == len(lines)

    got = []
    for line in paged_lines(
        source.fetch, should_tail=True, is_done=is_done, interval=1.0, clock=lambda: now[0]
    ):
        if line:
            got.append(line)
            continue
        polls[0] += 1  # idle: time passes, the app writes a line every few polls
        now[0] += 0.5
        if polls[0] % (steps_per_line + 1) == 0:
            source.written = min(len(lines), source.written + 1)
        assert polls[0] < 10_000
    assert got == ended(lines)


def test_paged_asks_the_api_at_most_once_per_interval() -> None:
    source = PagedSource(["a"], [5], written=0)
    now = [0.0]
    it = paged_lines(source.fetch, should_tail=True, is_done=lambda: False, clock=lambda: now[0])
    for _ in range(1000):  # a fast poller, no time passing
        assert next(it) == ""
    assert source.calls == 1
    now[0] += 1.0
    source.written = 1
    assert next(it) == "a\n"
    assert source.calls == 2


@given(
    st.lists(st.tuples(st.integers(0, 5), st.text("xyz", min_size=1, max_size=3)), max_size=30).map(
        lambda xs: sorted(xs, key=lambda x: x[0])
    ),
    st.lists(st.integers(0, 30), min_size=1, max_size=6),
)
def test_since_time_cursor_neither_repeats_nor_loses_lines_of_one_instant(
    entries: list[tuple[int, str]], visible: list[int]
) -> None:
    """An inclusive ``since=t`` API, lines sharing timestamps, the log growing between pages."""
    base = datetime(2026, 1, 1, tzinfo=UTC)
    stamped = [(base + timedelta(seconds=s), f"{i}:{text}") for i, (s, text) in enumerate(entries)]
    shown = [len(stamped)]

    def fetch_since(since: datetime | None) -> list[tuple[datetime, str]]:
        part = stamped[: shown[0]]
        return [e for e in part if since is None or e[0] >= since]

    fetch = since_time_fetch(fetch_since)
    got: list[str] = []
    cursor = None
    for n in [*sorted(visible), len(stamped)]:  # the log as the app writes it
        shown[0] = min(n, len(stamped))
        page = fetch(cursor)
        got += page.lines
        cursor = page.cursor
    assert got == [line for _, line in stamped]


# -- polled logs ---------------------------------------------------------------------------


def test_polled_gives_lines_blocks_and_polls_of_one_source() -> None:
    script = ["a\n", "", "", "b\n", "c\n", "", "d\n"]
    sleeps: list[float] = []
    log = Polled(lambda: iter(script), sleep=sleeps.append)
    assert isinstance(log, PolledLog) and isinstance(log, BlockLog)
    assert list(log) == ["a\n", "b\n", "c\n", "d\n"]
    assert sleeps == [0.02, 0.04, 0.02]  # waits where the source had nothing, backing off
    assert list(log.poll(100)) == ["a\n", "", "", "b\nc\n", "", "d\n"]
    assert list(log.poll(1)) == ["a\n", "", "", "b\n", "c\n", "", "d\n"]
    assert list(log.blocks(100)) == ["a\n", "b\nc\n", "d\n"]


def test_matching_lines_passes_the_idle_marker() -> None:
    assert list(matching_lines("b|d", iter(["a\n", "", "b\n", "d\n"]))) == ["", "b\n", "d\n"]


def test_the_local_scheduler_logs_are_polled_logs(tmp_path: Path) -> None:
    from torchx.schedulers.local.logs import LogLines

    (tmp_path / "stdout.log").write_text("x\n")
    log = LogLines(str(tmp_path), "stdout", None, None, False, lambda: True)
    assert isinstance(log, PolledLog)


# -- the merger ----------------------------------------------------------------------------

# a polled source's script: lines, and None where it has nothing new for a while
scripts = st.lists(st.one_of(st.none(), st.text("abc", min_size=1, max_size=3)), max_size=40)


def polled(script: list[str | None], tag: str) -> Iterator[str]:
    for i, item in enumerate(script):
        yield "" if item is None else f"{tag}{i}:{item}\n"


@given(st.lists(scripts, min_size=1, max_size=4))
def test_merge_keeps_each_streams_order_and_every_line(streams: list[list[str | None]]) -> None:
    merged = list(merge_lines([polled(s, f"s{n}/") for n, s in enumerate(streams)]))
    for n, script in enumerate(streams):
        tag = f"s{n}/"
        mine = [line for line in merged if line.startswith(tag)]
        assert mine == [line for line in polled(script, tag) if line]
    assert sum(1 for line in merged if line) == sum(
        1 for s in streams for item in s if item is not None
    )


def test_merge_takes_turns_and_yields_idle_only_when_all_are_idle() -> None:
    busy = iter([f"o{i}\n" for i in range(3 * TURN)])
    quiet = iter(["", "e0\n"])
    merged = list(merge_lines([busy, quiet]))
    # quiet had nothing at its first turn, and its line comes at its second: a busy
    # stream does not hold back a quiet one until it ends
    assert merged.index("e0\n") == 2 * TURN
    assert "" not in merged  # the busy one always had something
    assert list(merge_lines([iter(["", "a\n"]), iter(["", "b\n"])])) == ["", "a\n", "b\n"]


def test_merged_followed_files_on_one_thread(tmp_path: Path) -> None:
    """Slurm's combined log: two growing files, followed and merged by one polled source."""
    out, err = tmp_path / "x.out", tmp_path / "x.err"
    out.write_text("")
    done = threading.Event()

    def src(path: Path) -> Iterator[str]:
        return follow_file(str(path), should_tail=True, is_done=done.is_set, polled=True)

    threads = threading.active_count()
    log = Polled(lambda: merge_lines([src(out), src(err)]))
    it = log.poll(1 << 16)
    assert next(it) == ""  # nothing yet, and no thread waits for it
    with open(out, "a") as f:
        f.write("o1\no2\n")
    err.write_text("e1\n")
    seen = []
    for text in it:
        seen.append(text)
        if "o1" in "".join(seen) and "e1" in "".join(seen):
            break
    done.set()
    with open(out, "a") as f:
        f.write("o3")  # written before the end, without a newline
    rest = "".join(it)
    text = "".join(seen) + rest
    assert sorted(text.splitlines()) == ["e1", "o1", "o2", "o3"]
    assert text.index("o1") < text.index("o2") < text.index("o3")
    assert threads == threading.active_count()  # no thread was started to follow them


# -- the time window -----------------------------------------------------------------------

times = st.datetimes(
    min_value=datetime(2000, 1, 1), max_value=datetime(2100, 1, 1), timezones=st.just(UTC)
)


@given(st.lists(times, max_size=20), st.none() | times, st.none() | times)
def test_window_keeps_exactly_the_lines_within(
    stamps: list[datetime], since: datetime | None, until: datetime | None
) -> None:
    lines = [f"{t.isoformat().replace('+00:00', 'Z')} line{i}\n" for i, t in enumerate(stamps)]
    got = list(window_lines(lines, since, until))
    want = [
        f"line{i}\n"
        for i, t in enumerate(stamps)
        if (since is None or t >= since) and (until is None or t <= until)
    ]
    assert got == want


@given(st.lists(times, max_size=20).map(sorted), times)
def test_an_ordered_window_stops_after_until(stamps: list[datetime], until: datetime) -> None:
    pulled = []

    def source() -> Iterator[str]:
        for i, t in enumerate(stamps):
            pulled.append(i)
            yield f"{t.isoformat()} line{i}\n"

    got = list(window_lines(source(), None, until, ordered=True))
    kept = [i for i, t in enumerate(stamps) if t <= until]
    assert got == [f"line{i}\n" for i in kept]
    assert len(pulled) <= len(kept) + 1  # nothing read past the first line after until


@given(times, st.integers(0, 999_999_999))
def test_nanosecond_stamps_are_cut_never_moved_later(t: datetime, nanos: int) -> None:
    text = t.replace(microsecond=0).strftime("%Y-%m-%dT%H:%M:%S") + f".{nanos:09d}Z x\n"
    when, rest = split_timestamp(text)
    assert rest == "x\n" and when is not None
    assert when == t.replace(microsecond=nanos // 1000)


def test_window_passes_the_idle_marker_and_keeps_unstamped_lines() -> None:
    t = datetime(2026, 1, 1, tzinfo=UTC)
    assert list(window_lines(["", "plain\n"], t, t)) == ["", "plain\n"]
    assert in_window(None, t, t)


def test_naive_bounds_are_local_time() -> None:
    """``torchx log --since 5m`` gives a naive local time: compared as the same instant."""
    now = datetime.now()
    stamp = now.astimezone(UTC)
    assert in_window(stamp, now - timedelta(seconds=1), now + timedelta(seconds=1))
    assert not in_window(stamp, now + timedelta(seconds=1), None)
    assert in_window(stamp.timestamp(), now - timedelta(seconds=1), None)


@pytest.mark.parametrize(
    "bad", ["2026-13-01T00:00:00Z x", "2026-01-01 x", "x 2026-01-01T00:00:00Z"]
)
def test_not_a_timestamp(bad: str) -> None:
    assert split_timestamp(bad) == (None, bad)
