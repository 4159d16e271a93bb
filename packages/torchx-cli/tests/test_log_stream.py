"""Printing many replicas' logs: polled in turn by one thread, or one thread each."""

from __future__ import annotations

import io
import threading
from collections.abc import Iterable, Iterator
from typing import Any

import pytest

from torchx.cli import logs


class Polled:
    """A log that can be polled: ``""`` in ``script`` stands for "nothing new yet"."""

    def __init__(self, script: list[str | Exception]) -> None:
        self.script = script
        self.threads: set[int] = set()

    def poll(self, size: int) -> Iterator[str]:
        for item in self.script:
            self.threads.add(threading.get_ident())
            if isinstance(item, Exception):
                raise item
            yield item

    def __iter__(self) -> Iterator[str]:
        return (x for x in self.poll(1 << 16) if x)  # type: ignore[misc]


class Plain:
    """A log of another scheduler: lines only."""

    def __init__(self, lines: list[str]) -> None:
        self.lines = lines

    def __iter__(self) -> Iterator[str]:
        return iter(self.lines)


class Source:
    def __init__(self, logs_by_replica: dict[int, Iterable[str] | Exception]) -> None:
        self.logs = logs_by_replica

    def log_lines(self, app_handle: str, role_name: str, k: int = 0, **kw: Any) -> Iterable[str]:
        found = self.logs[k]
        if isinstance(found, Exception):
            raise found
        return found


def _print(source: Source, n: int) -> tuple[logs.Unread, list[str]]:
    out = io.StringIO()
    failed = logs.stream(source, "local://t/app", [("w", k) for k in range(n)], out=out)
    return failed, out.getvalue().splitlines()


def test_polled_logs_are_read_in_turn_by_the_calling_thread() -> None:
    scripts = {k: Polled(["", f"a{k}\n", "", "", f"b{k}\nc{k}\n", ""]) for k in range(50)}
    before = threading.active_count()
    failed, lines = _print(Source(dict(scripts)), 50)
    assert failed == 0
    assert threading.active_count() == before
    assert all(log.threads == {threading.get_ident()} for log in scripts.values())
    for k in range(50):
        mine = [line for line in lines if line.startswith(f"w/{k} ")]
        assert [line.split()[1] for line in mine] == [f"a{k}", f"b{k}", f"c{k}"]
    assert len(lines) == 150


def test_a_line_in_pieces_stays_whole_while_others_print() -> None:
    """A long line comes in pieces with quiet moments between them: nobody else's text
    gets between its pieces."""
    source = Source(
        {
            0: Polled(["x" * 10, "", "", "y" * 10, "", "z\n", "after\n"]),
            1: Polled([f"other {i}\n" for i in range(20)]),
        }
    )
    failed, lines = _print(source, 2)
    assert failed == 0
    assert f"w/0 {'x' * 10}{'y' * 10}z" in lines
    assert "w/0 after" in lines
    assert [line for line in lines if line.startswith("w/1")] == [
        f"w/1 other {i}" for i in range(20)
    ]


def test_a_log_that_fails_is_reported_on_stderr_and_the_others_go_on(
    capsys: pytest.CaptureFixture[str],
) -> None:
    source = Source(
        {
            0: Polled(["one\n", "", "half a line", OSError("disk gone")]),
            1: OSError("cannot open"),
            2: Polled(["", "two\n", "", "three\n"]),
        }
    )
    failed, lines = _print(source, 3)
    assert failed == 2
    assert "w/0 one" in lines
    assert "w/0 half a line" in lines  # ended where it broke; the error is on stderr
    err = capsys.readouterr().err.splitlines()
    assert "torchx log: error reading the log of w/0: OSError: disk gone" in err
    assert "torchx log: error reading the log of w/1: OSError: cannot open" in err
    assert not [line for line in lines if "error" in line]  # never among the log lines
    assert [line for line in lines if line.startswith("w/2")] == ["w/2 two", "w/2 three"]


def test_logs_unread_for_an_outage_exit_4_and_any_other_error_1(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Polled in turn or by a thread each: a log cut short because its backend could not
    be asked leaves the state unknown (4), unless another could not be read for another
    reason (1)."""
    from torchx.schedulers.contract.errors import TransientSchedulerError

    class Breaking(Plain):  # read by a thread (it cannot be polled)
        def __iter__(self) -> Iterator[str]:
            yield from self.lines
            raise TransientSchedulerError("backend down")

    for cut in (Polled(["a\n", TransientSchedulerError("backend down")]), Breaking(["a\n"])):
        down = TransientSchedulerError("backend down")
        failed, lines = _print(Source({0: cut, 1: down}), 2)
        assert failed == 2 and failed.exit_status == 4 and lines == ["w/0 a"]
        failed, _ = _print(Source({0: down, 1: OSError("disk gone")}), 2)
        assert failed == 2 and failed.exit_status == 1
    failed, _ = _print(Source({0: Plain(["a\n"]), 1: Plain(["b\n"])}), 2)
    assert failed == 0 and failed.exit_status == 0
    assert capsys.readouterr().err.count("TransientSchedulerError: backend down") == 6


def test_logs_that_cannot_be_polled_get_a_thread_each() -> None:
    seen: set[str] = set()

    class Watched(Plain):
        def __iter__(self) -> Iterator[str]:
            seen.add(threading.current_thread().name)
            return super().__iter__()

    failed, lines = _print(Source({k: Watched([f"l{k}\n"]) for k in range(4)}), 4)
    assert failed == 0
    assert sorted(lines) == [f"w/{k} l{k}" for k in range(4)]
    assert seen == {f"log-w-{k}" for k in range(4)}


def test_timestamps_of_logs_without_times_is_one_error_before_any_line() -> None:
    """Slurm's (or any scheduler's) logs without line times: one error, not one per replica."""
    import pytest

    from torchx.cli.errors import CliError

    source = Source({k: Plain([f"line {k}\n"]) for k in range(3)})
    out = io.StringIO()
    with pytest.raises(CliError, match=r"^--timestamps: the logs of slurm://t/9 carry no times"):
        logs.stream(source, "slurm://t/9", [("w", k) for k in range(3)], out=out, timestamps=True)
    assert out.getvalue() == ""
