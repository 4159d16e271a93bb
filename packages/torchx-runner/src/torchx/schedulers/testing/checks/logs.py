"""Log checks: ``log_iter`` gives every line, in order, filtered as asked.

Streams apart and combined, a regex, ``since``/``until`` and ``should_tail`` (follow a
running app to its end, losing nothing). A backend that declares a log capability
missing is checked for the documented refusal instead.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime

import pytest

from torchx.schedulers.contract.api import Stream
from torchx.schedulers.contract.capabilities import Capability
from torchx.schedulers.testing.apps import (
    Err,
    Exit,
    Out,
    Sleep,
    Step,
)
from torchx.schedulers.testing.checks.base import (
    Checks,
    is_subsequence,
)
from torchx.schedulers.testing.kit import Kit
from torchx.specs import macros


class LogChecks(Checks):
    """The ``log_iter`` checks."""

    def test_log_iter_every_line_in_order(self, kit: Kit) -> None:
        n = self.replicas
        texts = [f"line {i} of replica {macros.replica_id}" for i in range(200)]
        texts += ["  spaces kept  ", "unicode: \u00fc\u00f1\u00ee \u2713", "x" * 5000]
        app_id = kit.run(kit.builder.role("main", [Out(t) for t in texts], n))
        kit.wait_terminal(app_id)
        for k in range(n):
            if kit.lacks(Capability.LOGS):
                with pytest.raises(NotImplementedError):
                    kit.logs(app_id, "main", k)
                continue
            expected = [t.replace(macros.replica_id, str(k)) + "\n" for t in texts]
            assert kit.logs(app_id, "main", k) == expected

    def test_log_iter_stdout_and_stderr(self, kit: Kit) -> None:
        steps: list[Step] = [Out("out 1"), Err("err 1"), Out("out 2"), Err("err 2")]
        app_id = kit.run(kit.builder.role("main", steps))
        kit.wait_terminal(app_id)
        for stream, expected in [
            (Stream.STDOUT, ["out 1\n", "out 2\n"]),
            (Stream.STDERR, ["err 1\n", "err 2\n"]),
        ]:
            if kit.lacks(Capability.LOGS):
                with pytest.raises(NotImplementedError):
                    kit.logs(app_id, "main", streams=stream)
            elif kit.lacks(Capability.SEPARATE_STREAMS):
                with pytest.raises(ValueError):
                    kit.logs(app_id, "main", streams=stream)
            else:
                assert kit.logs(app_id, "main", streams=stream) == expected

    def test_log_iter_combined(self, kit: Kit) -> None:
        steps: list[Step] = [Out("out 1"), Err("err 1"), Out("out 2"), Err("err 2")]
        app_id = kit.run(kit.builder.role("main", steps))
        kit.wait_terminal(app_id)
        if kit.lacks(Capability.LOGS):
            with pytest.raises(NotImplementedError):
                kit.logs(app_id, "main", streams=Stream.COMBINED)
        elif kit.lacks(Capability.COMBINED_STREAM):
            with pytest.raises(ValueError):
                kit.logs(app_id, "main", streams=Stream.COMBINED)
        else:
            lines = kit.logs(app_id, "main", streams=Stream.COMBINED)
            assert sorted(lines) == ["err 1\n", "err 2\n", "out 1\n", "out 2\n"], lines
            assert is_subsequence(["out 1\n", "out 2\n"], lines), lines
            assert is_subsequence(["err 1\n", "err 2\n"], lines), lines

    def test_log_iter_regex(self, kit: Kit) -> None:
        steps: list[Step] = [Out("keep 1"), Out("drop 2"), Out("keep 3"), Out("drop keep 4")]
        app_id = kit.run(kit.builder.role("main", steps))
        kit.wait_terminal(app_id)
        if kit.lacks(Capability.LOGS):
            with pytest.raises(NotImplementedError):
                kit.logs(app_id, "main", regex="^keep")
            return
        assert kit.logs(app_id, "main", regex="^keep") == ["keep 1\n", "keep 3\n"]
        assert kit.logs(app_id, "main", regex=re.escape("keep 4")) == ["drop keep 4\n"]

    def test_log_iter_should_tail_loses_nothing(self, kit: Kit) -> None:
        first = [f"before {i}" for i in range(50)]
        second = [f"after {i}" for i in range(50)]
        steps: list[Step] = [*map(Out, first), Sleep(1.5), *map(Out, second), Exit(0)]
        app_id = kit.run(kit.builder.role("main", steps))
        if kit.lacks(Capability.LOGS):
            with pytest.raises(NotImplementedError):
                kit.logs(app_id, "main", should_tail=True)
            return
        lines = kit.follow(app_id, "main")  # from right after submit, while it runs
        got: list[str] = []
        while not isinstance(item := kit.next_line(lines), BaseException):
            got.append(item)
        if not isinstance(item, StopIteration):
            raise item
        assert got == [f"{t}\n" for t in [*first, *second]]
        state = kit.describe(app_id).state
        assert state.is_terminal(), f"the followed log ended while the app was {state.name}"
        # following an app that has ended gives its whole log, then ends
        assert kit.logs(app_id, "main", should_tail=True) == got

    def test_log_iter_since_until(self, kit: Kit) -> None:
        app_id = kit.run(kit.builder.role("main", [Out("early"), Sleep(3), Out("late")]))
        if kit.lacks(Capability.LOGS):
            with pytest.raises(NotImplementedError):
                kit.logs(app_id, "main", since=datetime.now(UTC))
            return
        lines = kit.follow(app_id, "main")
        assert kit.next_line(lines) == "early\n"
        # "early" was written before it was read; "late" comes 3 s after it was written
        between = datetime.now(UTC)
        kit.wait_terminal(app_id)
        since = kit.logs(app_id, "main", since=between)
        until = kit.logs(app_id, "main", until=between)
        if kit.lacks(Capability.LOG_TIME_WINDOW):
            assert since == until == ["early\n", "late\n"], (since, until)
        else:
            assert since == ["late\n"]
            assert until == ["early\n"]
