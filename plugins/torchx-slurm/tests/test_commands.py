"""Running Slurm tools: the checks made before any call, and the one-line errors."""

from __future__ import annotations

import pathlib

import pytest
from torchx_slurm import commands

from torchx.schedulers.contract.errors import SchedulerError
from torchx.schedulers.testing.fake_tools import FakeTools


def test_the_timeout_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(commands.TIMEOUT_ENV, raising=False)
    assert commands.timeout() == commands.DEFAULT_TIMEOUT
    monkeypatch.setenv(commands.TIMEOUT_ENV, "2.5")
    assert commands.timeout() == 2.5
    monkeypatch.setenv(commands.TIMEOUT_ENV, "86400")
    assert commands.timeout() == 86400


@pytest.mark.parametrize("raw", ["soon", "inf", "-inf", "nan", "1e400", "1e10", "0", "-5"])
def test_a_timeout_no_call_could_use_is_one_line(monkeypatch: pytest.MonkeyPatch, raw: str) -> None:
    """inf or 1e400 once reached subprocess as an OverflowError 'not caused by your input'."""
    monkeypatch.setenv(commands.TIMEOUT_ENV, raw)
    with pytest.raises(SchedulerError) as info:
        commands.timeout()
    assert str(info.value) == (
        f"TORCHX_SLURM_TIMEOUT={raw!r} is not a number of seconds from 0 to 86400: "
        "set it to e.g. 30, or unset it for the default of 10"
    )


def test_an_infinite_timeout_is_refused_before_any_call(
    fake_slurm: FakeTools, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(commands.TIMEOUT_ENV, "inf")
    with pytest.raises(SchedulerError, match="TORCHX_SLURM_TIMEOUT='inf'"):
        commands.run(["squeue"])
    assert fake_slurm.calls("squeue") == []


def test_the_telling_line_of_stderr() -> None:
    stderr = "sbatch: warning: x\nsbatch: error: Batch job submission failed: bad\n"
    assert commands.first_error_line(stderr) == "sbatch: error: Batch job submission failed: bad"
    assert commands.first_error_line("just this\n") == "just this"
    assert commands.first_error_line("") == ""


def test_a_failure_without_stderr_names_the_exit_status(fake_slurm: FakeTools) -> None:
    fake_slurm.answer("squeue", returncode=3)
    with pytest.raises(commands.SlurmCommandError) as err:
        commands.run(["squeue"], what="a test")
    assert str(err.value) == "squeue failed (a test): exit status 3"
    assert err.value.returncode == 3


def test_a_failure_without_any_slurm_conf_says_what_is_missing(
    fake_slurm: FakeTools, monkeypatch: pytest.MonkeyPatch
) -> None:
    # what Debian's sbatch prints with no SLURM_CONF and no /etc/slurm/slurm.conf
    stderr = "sbatch: error: resolve_ctls_from_dns_srv: res_nsearch error: Unknown host\n"
    monkeypatch.setattr(commands, "DEFAULT_CONF", "/nonexistent/slurm.conf")
    fake_slurm.answer("sbatch", stderr=stderr, returncode=1)
    with pytest.raises(commands.SlurmCommandError) as err:
        commands.run(["sbatch"], what="submit")
    message = str(err.value)
    assert "\n" not in message
    assert message.startswith("sbatch failed (submit): sbatch: error: resolve_ctls_from_dns_srv")
    assert "SLURM_CONF is unset and /nonexistent/slurm.conf does not exist" in message


def test_no_config_hint_when_a_slurm_conf_is_named(
    fake_slurm: FakeTools, monkeypatch: pytest.MonkeyPatch, tmp_path: pathlib.Path
) -> None:
    conf = tmp_path / "slurm.conf"
    conf.write_text("ClusterName=x\n")
    monkeypatch.setenv("SLURM_CONF", str(conf))
    fake_slurm.answer("squeue", stderr="squeue: error: Invalid user\n", returncode=1)
    with pytest.raises(commands.SlurmCommandError) as err:
        commands.run(["squeue"])
    assert str(err.value) == "squeue failed: squeue: error: Invalid user"
