"""The quick path of ``torchx status|log|cancel slurm://...`` against the full one, on the cluster.

Each command runs twice on the full path (``TORCHX_NO_PLUGIN_CACHE=1``) and on the
quick one (a first run in this test's private cache remembers that the plugin's quick
handler may answer; the next one does). Output and exit status must be the same, for an
app that succeeded, an app Slurm does not know, handles that are no handle, and an
outage (munged stopped). Which path ran is told by what the process imported
(``PYTHONPROFILEIMPORTTIME``): the quick one never imports attrs or pluggy.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
from test_outages import _munged_pidfile, _stop, _up

from torchx.schedulers.testing.cli import TorchxCli

APPS = str(Path(__file__).resolve().parent / "apps.py")
FINAL = {"SUCCEEDED", "FAILED", "CANCELLED"}
HEAVY = {"attr", "attrs", "pluggy", "argparse", "typing"}


def _imported(stderr: str) -> set[str]:
    return {
        line.rsplit("|", 1)[1].strip()
        for line in stderr.splitlines()
        if line.startswith("import time:") and "|" in line
    }


def _said(proc: subprocess.CompletedProcess[str]) -> tuple[int, str, str]:
    """Exit status, stdout, stderr without the import lines (and a retry's duration)."""
    err = "".join(
        line
        for line in proc.stderr.splitlines(keepends=True)
        if not line.startswith("import time:")
    )
    return proc.returncode, proc.stdout, re.sub(r"in [0-9.]+s", "in Ns", err)


class Both:
    def __init__(self, cli: TorchxCli) -> None:
        self.cli = cli
        self.env = {"XDG_CACHE_HOME": str(cli.home / "cache"), "PYTHONPROFILEIMPORTTIME": "1"}

    def same(self, *args: str, taken: bool = True) -> subprocess.CompletedProcess[str]:
        full = self.cli(
            *args, rc=None, timeout=120, env={**self.env, "TORCHX_NO_PLUGIN_CACHE": "1"}
        )
        self.cli(*args, rc=None, timeout=120, env=self.env)  # remembers, or quick already
        quick = self.cli(*args, rc=None, timeout=120, env=self.env)
        heavy = _imported(quick.stderr) & HEAVY
        assert (not heavy) if taken else ("pluggy" in heavy), (args, sorted(heavy))
        assert _said(quick) == _said(full), f"torchx {' '.join(args)}"
        return quick


@pytest.fixture
def both(cli: TorchxCli) -> Both:
    return Both(cli)


def test_an_app_that_succeeded(both: Both, cli: TorchxCli) -> None:
    handle = cli.start(f"{APPS}:two_roles")
    assert cli.wait_state(handle, FINAL)["state"] == "SUCCEEDED"
    out = both.same("status", handle).stdout
    assert "State: SUCCEEDED" in out and "worker/1  SUCCEEDED  exit=0  host=n" in out
    both.same("status", "--show-secrets", handle)
    assert "out worker/0" in both.same("log", handle).stdout
    both.same("log", "--streams", "stderr", f"{handle}/worker")
    both.same("log", f"{handle}/ps/0")
    assert "nothing to cancel" in both.same("cancel", handle).stdout


def test_a_running_app_and_its_cancel(both: Both, cli: TorchxCli) -> None:
    handle = cli.start("utils.sh", "sh", "-c", "echo started; sleep 600")
    cli.wait_state(handle, {"RUNNING"})
    cli.wait_output(handle, "started")
    assert "State: RUNNING" in both.same("status", handle).stdout
    # stopping a live app is the scheduler's (the quick path changes nothing)
    proc = both.cli("cancel", handle, env=both.env)
    assert proc.stdout.startswith(f"cancelled {handle}") and "pluggy" in _imported(proc.stderr)
    assert cli.wait_state(handle, FINAL)["state"] == "CANCELLED"


@pytest.mark.parametrize(
    "args",
    [
        ("status", "slurm://torchx/999999"),
        ("log", "slurm://torchx/999999"),
        ("cancel", "slurm://torchx/999999"),
        ("status", "slurm://torchx/abc"),
        ("status", "slurm://torchx"),
        ("log", "slurm://torchx/1/trainer/x"),
    ],
)
def test_errors_are_the_full_commands(both: Both, args: tuple[str, ...]) -> None:
    proc = both.same(*args, taken=False)
    assert proc.returncode == 2 and f"torchx {args[0]}: error: " in proc.stderr


def test_an_outage_is_the_full_commands(both: Both, cli: TorchxCli) -> None:
    handle = cli.start("utils.sh", "sh", "-c", "echo started; sleep 600")
    cli.wait_state(handle, {"RUNNING"})
    cli.wait_output(handle, "started")  # srun needs munge to start the step
    both.same("status", handle)  # the quick path answers in this world
    _stop(_munged_pidfile())
    try:
        proc = both.same("status", handle, taken=False)
    finally:
        _up()
    assert proc.returncode == 4 and "Munge encode failed" in proc.stderr
