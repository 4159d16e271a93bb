"""Small helpers over the Slurm commands, for tests that check what Slurm itself says."""

from __future__ import annotations

import subprocess
import time


def slurm(*args: str, timeout: float = 30) -> str:
    """Run a Slurm command; its stdout, or an AssertionError naming the command and stderr."""
    proc = subprocess.run(args, capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, f"{' '.join(args)} exited {proc.returncode}: {proc.stderr}"
    return proc.stdout


def sacct_state(job_id: str, timeout: float = 30) -> tuple[str, str]:
    """(State, ExitCode) of the job's allocation as accounting recorded it, once it ended.

    slurmdbd receives the end of a job a moment after squeue shows it: poll until the
    record holds a final state. The state is its first word ("CANCELLED by 0" is
    "CANCELLED").
    """
    deadline = time.monotonic() + timeout
    while True:
        out = slurm("sacct", "-X", "-n", "-P", "-j", job_id, "--format=State,ExitCode")
        rows = [line.split("|") for line in out.splitlines() if line]
        state = rows[0][0].split()[0] if rows and rows[0][0] else ""
        if state and state not in {"PENDING", "RUNNING", "REQUEUED", "COMPLETING"}:
            return state, rows[0][1]
        assert time.monotonic() < deadline, f"sacct shows job {job_id} as {rows}"
        time.sleep(0.2)
