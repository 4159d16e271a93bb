"""A batch backend's per-stream log files: which files, followed together, done-checks rate-limited."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from torchx.schedulers.contract.api import Stream
from torchx.schedulers.helpers.follow import EveryInterval, follow_files, stream_files


@pytest.mark.parametrize(
    ("streams", "suffixes"),
    [
        (None, [".out", ".err"]),
        (Stream.COMBINED, [".out", ".err"]),
        (Stream.STDOUT, [".out"]),
        (Stream.STDERR, [".err"]),
        ("stderr", [".err"]),
    ],
)
def test_stream_files(streams: object, suffixes: list[str]) -> None:
    assert stream_files("/j/r-0", streams) == [f"/j/r-0{s}" for s in suffixes]


def test_follow_files_merges_both_and_leaves_out_a_directory(tmp_path: Path) -> None:
    (tmp_path / "r.out").write_text("o1\no2\n")
    (tmp_path / "r.err").write_text("e1\n")
    lines = follow_files(stream_files(str(tmp_path / "r")), should_tail=False, is_done=lambda: True)
    got = [line for line in lines if line]
    assert sorted(got) == ["e1\n", "o1\n", "o2\n"]
    assert [x for x in got if x.startswith("o")] == ["o1\n", "o2\n"]  # each file in order
    (tmp_path / "d.out").mkdir()  # there, but no file: a missing log, not read
    assert (
        list(follow_files([str(tmp_path / "d.out")], should_tail=False, is_done=lambda: True)) == []
    )


def test_follow_files_waits_for_a_file_while_tailing(tmp_path: Path) -> None:
    path = tmp_path / "late.out"
    done = [False]
    lines = follow_files([str(path)], should_tail=True, is_done=lambda: done[0])
    assert next(lines) == ""  # polled: nothing yet, never a sleep
    path.write_text("hi\n")
    done[0] = True
    assert [x for x in lines if x] == ["hi\n"]


def test_every_interval_asks_at_most_once_per_interval() -> None:
    asked: list[float] = []

    def check() -> bool:
        asked.append(time.monotonic())
        return len(asked) >= 2

    done = EveryInterval(0.05, check)
    deadline = time.monotonic() + 5
    while not done():
        assert time.monotonic() < deadline
    # (each check runs a moment after the time it was due is taken)
    assert len(asked) == 2 and asked[1] - asked[0] >= 0.045
    assert done() and done.ended and len(asked) == 2  # ended: never asked again


def test_every_interval_starts_ended_without_asking() -> None:
    done = EveryInterval(0.0, lambda: pytest.fail("asked"), ended=True)
    assert done() and done.ended
