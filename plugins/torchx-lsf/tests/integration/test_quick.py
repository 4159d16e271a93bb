"""The quick path of ``torchx status|log|cancel lsf://...`` against the full one, on the stand-in.

Each command runs on the full path (``TORCHX_NO_PLUGIN_CACHE=1``) and on the quick one
(a first run in this test's private cache remembers that the plugin's quick handler may
answer; the next one does). Output and exit status must be the same. Which path ran is
told by what the process imported (``PYTHONPROFILEIMPORTTIME``): the quick one never
imports attrs or pluggy.
"""

from __future__ import annotations

import subprocess
import time

from torchx.schedulers.testing.cli import TorchxCli

FINAL = {"SUCCEEDED", "FAILED", "CANCELLED"}
HEAVY = {"attr", "attrs", "pluggy", "argparse", "typing"}


def _imported(stderr: str) -> set[str]:
    return {
        line.rsplit("|", 1)[1].strip()
        for line in stderr.splitlines()
        if line.startswith("import time:") and "|" in line
    }


def _said(proc: subprocess.CompletedProcess[str]) -> tuple[int, str, str]:
    err = "".join(
        x for x in proc.stderr.splitlines(keepends=True) if not x.startswith("import time:")
    )
    return proc.returncode, proc.stdout, err


def _same(cli: TorchxCli, *args: str, taken: bool = True) -> subprocess.CompletedProcess[str]:
    env = {"XDG_CACHE_HOME": str(cli.home / "cache"), "PYTHONPROFILEIMPORTTIME": "1"}
    full = cli(*args, rc=None, env={**env, "TORCHX_NO_PLUGIN_CACHE": "1"})
    cli(*args, rc=None, env=env)  # remembers, or quick already
    quick = cli(*args, rc=None, env=env)
    heavy = _imported(quick.stderr) & HEAVY
    assert (not heavy) if taken else ("pluggy" in heavy), (args, sorted(heavy))
    assert _said(quick) == _said(full), f"torchx {' '.join(args)}"
    return quick


def test_an_app_that_succeeded(cli: TorchxCli) -> None:
    handle = cli.start(
        "utils.sh", "--num_replicas", "2", "--image", str(cli.work),
        "sh", "-c", 'echo "out $TORCHX_REPLICA_ID"; echo "err $TORCHX_REPLICA_ID" >&2',
    )  # fmt: skip
    assert cli.wait_state(handle, FINAL, timeout=60)["state"] == "SUCCEEDED"
    out = _same(cli, "status", handle).stdout
    assert "State: SUCCEEDED" in out and "sh/1  SUCCEEDED  exit=0" in out, out
    assert "out 1" in _same(cli, "log", f"{handle}/sh/1").stdout
    assert _same(cli, "log", "--streams", "stderr", f"{handle}/sh/0").stdout.endswith("err 0\n")
    assert "nothing to cancel" in _same(cli, "cancel", handle).stdout


def test_a_running_app_is_quick_and_its_cancel_is_the_schedulers(cli: TorchxCli) -> None:
    handle = cli.start("utils.sh", "--image", str(cli.work), "sh", "-c", "echo up; sleep 120")
    cli.wait_output(handle, "up")
    assert "State: RUNNING" in _same(cli, "status", handle).stdout
    started = time.monotonic()
    proc = cli("cancel", handle, env={"PYTHONPROFILEIMPORTTIME": "1"})
    assert proc.stdout.startswith(f"cancelled {handle}") and "pluggy" in _imported(proc.stderr)
    assert cli.wait_state(handle, FINAL, timeout=30)["state"] == "CANCELLED"
    assert time.monotonic() - started < 30
    _same(cli, "status", handle, taken=False)  # cancelled: the scheduler settles its state


def test_an_app_lsf_does_not_know_is_the_full_commands(cli: TorchxCli) -> None:
    proc = _same(cli, "status", "lsf://torchx/nope-1a2b3c4d5e", taken=False)
    assert proc.returncode != 0 and "torchx status: error: " in proc.stderr
