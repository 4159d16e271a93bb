"""What a user sees when Slurm is not there to answer: one clear line, never a hang, and
never an app called FAILED because the controller could not be asked.

The last test stops the real controller (slurmctld) while a job runs, then starts it
again with ``dev/slurm up`` (which starts only what is not running): the job is still
there, still running.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

from torchx.schedulers.testing.cli import TORCHX, TorchxCli

REPO = Path(os.environ.get("TORCHX_REPO_ROOT") or Path(__file__).resolve().parents[4])


def one_line(proc: subprocess.CompletedProcess[str]) -> str:
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    return lines[0]


def test_a_slurm_conf_naming_no_file_is_one_line_at_once(cli: TorchxCli, tmp_path: Path) -> None:
    """Each Slurm command would wait 60 s for a missing SLURM_CONF: refused before that."""
    bad = {"SLURM_CONF": str(tmp_path / "missing.conf")}
    for args in (["status", "slurm://torchx/1"], ["run", "-s", "slurm", "utils.echo"]):
        t = time.monotonic()
        proc = cli(*args, rc=1, env=bad)
        assert time.monotonic() - t < 10
        assert "missing.conf" in one_line(proc), proc.stderr


def test_slurm_tools_not_installed_is_one_line(cli: TorchxCli) -> None:
    only_torchx = {"PATH": str(Path(TORCHX).parent)}
    for args, tool in (
        (["run", "-s", "slurm", "utils.echo"], "sbatch"),
        (["list", "-s", "slurm"], "squeue"),
    ):
        proc = cli(*args, rc=1, env=only_torchx)
        assert tool in one_line(proc) and "PATH" in proc.stderr, proc.stderr


def _stop_controller() -> None:
    pidfile = Path(os.environ["TORCHX_DEV_SLURM_DIR"]) / "run" / "slurmctld.pid"
    pid = int(pidfile.read_text().split()[0])
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + 30
    while Path(f"/proc/{pid}").exists() and "Z" not in _state(pid):
        assert time.monotonic() < deadline, "slurmctld did not stop"
        time.sleep(0.1)


def _slurm_says(handle: str) -> str:
    """What Slurm itself says of the job (for a failure's message)."""
    job = handle.rsplit("/", 1)[1]
    out = []
    for argv in (
        ["squeue", "-t", "all", "-j", job],
        ["sacct", "-j", job, "-o", "JobID,State,ExitCode,Reason%40"],
    ):
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=30, check=False)
        out.append(proc.stdout + proc.stderr)
    return "\n".join(out)


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return "gone"


def test_controller_down_status_is_unknown_not_failed(cli: TorchxCli) -> None:
    handle = cli.start("utils.sh", "sh", "-c", "echo started; sleep 600")
    cli.wait_state(handle, {"RUNNING"})
    cli.wait_output(handle, "started")  # else srun, without a controller, fails the step
    _stop_controller()
    try:
        t = time.monotonic()
        proc = cli("status", handle, rc=4, timeout=180)
        took = time.monotonic() - t
        line = one_line(proc)
        # given up on with the state unknown, never a verdict, within the CLI's one-shot
        # budget (10 s): here one squeue that timed out after 10 s (TORCHX_SLURM_TIMEOUT)
        assert "not failed" in line and "FAILED" not in proc.stdout, line
        assert "squeue did not answer within 10 s" in line, line
        assert took < 25, f"{took:.1f}s: {line}"
    finally:
        subprocess.run(
            [str(REPO / "dev" / "slurm"), "up"], check=True, timeout=120, stdout=subprocess.DEVNULL
        )
    # the controller is back with its saved state: the job never stopped
    back = cli.wait_state(handle, {"RUNNING", "SUCCEEDED", "FAILED", "CANCELLED"})
    assert back["state"] == "RUNNING", (back, _slurm_says(handle))
    cli("cancel", handle)
    assert (
        cli.wait_state(handle, {"CANCELLED", "SUCCEEDED", "FAILED"}, timeout=30)["state"]
        == "CANCELLED"
    )
