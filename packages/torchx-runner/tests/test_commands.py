"""torchx.schedulers.helpers.commands: timeouts from the environment, missing tools, runs that hang."""

from __future__ import annotations

import math
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from torchx.schedulers.contract.errors import SchedulerError, TransientSchedulerError
from torchx.schedulers.helpers import commands

ENV = "TORCHX_TEST_TOOL_TIMEOUT"


def test_the_timeout_is_the_default_unless_the_variable_says_otherwise(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(ENV, raising=False)
    assert commands.timeout_from_env(ENV, default=10.0, example=30) == 10.0
    monkeypatch.setenv(ENV, "")
    assert commands.timeout_from_env(ENV, default=10.0, example=30) == 10.0
    monkeypatch.setenv(ENV, "2.5")
    assert commands.timeout_from_env(ENV, default=10.0, example=30) == 2.5
    monkeypatch.setenv(ENV, "86400")
    assert commands.timeout_from_env(ENV, default=10.0, example=30) == commands.MAX_TIMEOUT


@pytest.mark.parametrize("raw", ["soon", "0", "-1", "inf", "nan", "1e400", "86401"])
def test_a_timeout_no_call_could_use_is_one_line_naming_the_variable(
    monkeypatch: pytest.MonkeyPatch, raw: str
) -> None:
    monkeypatch.setenv(ENV, raw)
    with pytest.raises(SchedulerError) as e:
        commands.timeout_from_env(ENV, default=10.0, example=30)
    assert str(e.value) == (
        f"{ENV}={raw!r} is not a number of seconds from 0 to 86400: "
        "set it to e.g. 30, or unset it for the default of 10"
    )


@given(st.text(min_size=1).filter(lambda s: "\x00" not in s))
def test_any_value_is_a_usable_timeout_or_a_one_line_error(raw: str) -> None:
    with pytest.MonkeyPatch.context() as m:
        try:
            m.setenv(ENV, raw)
        except ValueError:  # not representable in the environment (e.g. a lone surrogate)
            return
        try:
            value = commands.timeout_from_env(ENV, default=10.0, example=30)
        except SchedulerError as e:
            assert "\n" not in str(e) and ENV in str(e)
        else:
            assert math.isfinite(value) and 0 < value <= commands.MAX_TIMEOUT


def test_a_missing_tool_is_the_callers_line() -> None:
    with pytest.raises(SchedulerError, match=r"^Acme's nope-xyz is not on PATH: install it$"):
        commands.which("nope-xyz-torchx-test", missing="Acme's nope-xyz is not on PATH: install it")
    assert commands.which("sh", missing="unused").endswith("/sh")


def test_run_gives_back_what_the_tool_said_whatever_its_exit_status() -> None:
    code = "import sys; print(sys.stdin.read().upper()); print('bad', file=sys.stderr); sys.exit(3)"
    proc = commands.run(
        ["python", "-c", code], path=sys.executable, timeout=30, slow="unused", input="hi"
    )
    assert (proc.returncode, proc.stdout, proc.stderr) == (3, "HI\n", "bad\n")


def test_run_passes_the_given_environment() -> None:
    code = "import os; print(os.environ.get('TORCHX_TEST_X'))"
    proc = commands.run(
        ["python", "-c", code],
        path=sys.executable,
        timeout=30,
        slow="unused",
        env={"TORCHX_TEST_X": "y"},
    )
    assert proc.stdout == "y\n"


def test_a_tool_that_does_not_answer_in_time_is_transient() -> None:
    with pytest.raises(TransientSchedulerError) as e:
        commands.run(
            ["stuck", "-c", "import time; time.sleep(30)"],
            path=sys.executable,
            timeout=0.5,
            what="status of job 12",
            slow="Acme may be down (raise ACME_TIMEOUT to wait longer)",
        )
    assert str(e.value) == (
        "stuck did not answer within 0.5 s (status of job 12): "
        "Acme may be down (raise ACME_TIMEOUT to wait longer)"
    )


def test_a_tool_that_cannot_start_is_one_line() -> None:
    with pytest.raises(SchedulerError) as e:
        commands.run(["tool"], path="/nonexistent/tool", timeout=5, slow="unused")
    assert not isinstance(e.value, TransientSchedulerError)
    assert str(e.value) == "cannot run /nonexistent/tool: No such file or directory"


def test_a_command_error_keeps_what_the_tool_said() -> None:
    e = commands.CommandError("x failed", returncode=2, stderr="err\n", stdout="out\n")
    assert (e.returncode, e.stderr, e.stdout, e.output) == (2, "err\n", "out\n", "err\nout\n")
    assert isinstance(e, SchedulerError) and str(e) == "x failed"


def test_the_message_pieces() -> None:
    assert commands.failed_message("bjobs", "", "LSF is down") == "bjobs failed: LSF is down"
    assert commands.first_line("\n  \n  first \nsecond") == "first"
    assert commands.first_line(" \n") == ""
    assert commands.mentions("Unable to contact SLURM controller", ("unable to contact",))
    assert not commands.mentions("Invalid job id", ("unable to contact",))
