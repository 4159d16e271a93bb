"""torchx-slurm through the real ``torchx`` command, against the real cluster.

Each command is a new process (as a user's shell runs it), so every ``status`` or
``log`` here also shows that a job is followed from a new shell, by its handle alone.
"""

from __future__ import annotations

import re
import time
from pathlib import Path

from slurmcmd import sacct_state, slurm

from torchx.schedulers.testing.cli import TorchxCli, replicas
from torchx.schedulers.testing.cli import app_id as job_id

APPS = str(Path(__file__).resolve().parent / "apps.py")
MET = re.compile(r"meet/(\d) rank (\d)/2 met \[0, 1\] on (n\d) via (n\d)")
FINAL = {"SUCCEEDED", "FAILED", "CANCELLED"}


def test_two_replicas_on_two_nodes_meet_over_tcp(cli: TorchxCli, port: int) -> None:
    proc = cli("run", "-s", "slurm", "--log", f"{APPS}:meet", "--port", str(port), timeout=180)
    met = {m.group(1): m.groups()[1:] for m in MET.finditer(proc.stdout)}
    assert set(met) == {"0", "1"}, proc.stdout + proc.stderr
    (rank0, node0, via0), (rank1, node1, via1) = met["0"], met["1"]
    assert (rank0, rank1) == ("0", "1")
    # each replica had its own node, and rank 1 reached rank 0 by that node's name
    assert node0 != node1 and via0 == via1 == node0
    assert "SUCCEEDED" in proc.stderr


def test_two_roles_each_replica_with_its_logs(cli: TorchxCli) -> None:
    handle = cli.start(f"{APPS}:two_roles")
    status = cli.wait_state(handle, FINAL)
    assert status["state"] == "SUCCEEDED", status
    reps = replicas(status)
    assert sorted(reps) == ["ps/0", "worker/0", "worker/1"], status
    assert all(r["state"] == "SUCCEEDED" and r["exit_code"] == 0 for r in reps.values()), reps
    nodes = set()
    app_id = job_id(handle)
    for name in reps:
        role, rid = name.split("/")
        out = cli("log", "--streams", "stdout", f"{handle}/{role}/{rid}").stdout
        err = cli("log", "--streams", "stderr", f"{handle}/{role}/{rid}").stdout
        line = re.search(rf"out {role}/{rid} app=(\S+) node=(n\d)", out)
        assert line, out
        # the app_id macro became the Slurm job id; each replica ran on a node of its own
        assert line.group(1) == app_id, out
        nodes.add(line.group(2))
        assert f"err {role}/{rid}" in err and "out " not in err, err
        assert "err " not in out, out
    assert len(nodes) == 3, nodes
    # the whole app's logs, combined: every replica's lines
    both = cli("log", handle).stdout
    assert all(f"out {name}" in both and f"err {name}" in both for name in reps), both


def test_failing_app_is_failed_with_its_exit_code(cli: TorchxCli) -> None:
    proc = cli(
        "run",
        "-s",
        "slurm",
        "--wait",
        "utils.sh",
        "sh",
        "-c",
        "echo bye; exit 3",
        rc=1,
        timeout=120,
    )
    handle = proc.stdout.strip().splitlines()[-1]
    assert handle.startswith("slurm://"), proc.stdout
    status = cli.status(handle)
    assert status["state"] == "FAILED", status
    (rep,) = replicas(status).values()
    assert rep["state"] == "FAILED" and rep["exit_code"] == 3, status
    assert sacct_state(job_id(handle)) == ("FAILED", "3:0")


def test_a_replica_that_raises_shows_the_exception_as_the_cause(cli: TorchxCli) -> None:
    # the Runner reads the failed replica's stderr through the plugin's log_iter
    program = "import sys; print('step 1'); raise ValueError('bad batch on rank 1')"
    proc = cli(
        "run", "-s", "slurm", "--wait", "utils.sh", "python3", "-c", program, rc=1, timeout=120
    )
    handle = proc.stdout.strip().splitlines()[-1]
    assert "Error: ValueError: bad batch on rank 1" in proc.stderr.splitlines(), proc.stderr
    hint = f"See its log: torchx log {handle}/sh/0"
    assert hint in proc.stderr.splitlines(), proc.stderr
    assert "error=ValueError: bad batch on rank 1" in cli("status", handle).stdout
    status = cli.status(handle)
    (rep,) = replicas(status).values()
    assert rep["structured_error_msg"]["message"]["message"] == ("ValueError: bad batch on rank 1")
    assert "Traceback (most recent call last):" in cli(*hint.split()[4:]).stdout


def test_cancel_a_running_app(cli: TorchxCli) -> None:
    handle = cli.start("utils.sh", "sh", "-c", "echo started; sleep 300")
    cli.wait_state(handle, {"RUNNING"} | FINAL)
    t = time.monotonic()
    cli("cancel", handle)
    status = cli.wait_state(handle, FINAL, timeout=30)
    assert status["state"] == "CANCELLED", status
    assert time.monotonic() - t < 30
    # Slurm itself agrees, and nothing of the job is left running
    assert sacct_state(job_id(handle))[0] == "CANCELLED"
    assert slurm("squeue", "-h", "-j", job_id(handle), "-t", "R,CG").strip() == ""


def test_retry_by_requeue(cli: TorchxCli) -> None:
    handle = cli.start(f"{APPS}:flaky", "--max_retries", "1")
    status = cli.wait_state(handle, FINAL, timeout=180)
    assert status["state"] == "SUCCEEDED", status
    assert status["num_restarts"] == 1, status
    out = cli("log", handle).stdout
    # the last attempt's log by default; the first attempt's is kept beside it
    assert "attempt 1" in out and "attempt 0" not in out, out
    jid = job_id(handle)
    first = cli.work / ".torchx-slurm" / jid / f"slurm-{jid}-flaky-0.try0.out"
    assert first.read_text() == "attempt 0\n"


def test_status_after_the_job_left_squeue_from_another_directory(
    cli: TorchxCli, tmp_path: Path
) -> None:
    handle = cli.start("utils.echo", "--msg", "still here")
    assert cli.wait_state(handle, FINAL)["state"] == "SUCCEEDED"
    jid = job_id(handle)
    # MinJobAge is 10 s on this cluster; slurmctld forgets the job at its next purge
    deadline = time.monotonic() + 150
    while slurm("squeue", "-h", "-t", "all", "-o", "%A").split().count(jid):
        assert time.monotonic() < deadline, f"job {jid} still in squeue"
        time.sleep(1)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    status = cli.status(handle, cwd=elsewhere)
    assert status["state"] == "SUCCEEDED", status
    assert [r["exit_code"] for r in replicas(status).values()] == [0], status
    assert "still here" in cli("log", handle, cwd=elsewhere).stdout


def test_hostile_arguments_and_env_reach_the_program_verbatim(
    cli: TorchxCli, tmp_path: Path
) -> None:
    """Through sbatch's script, srun and bash: nothing is expanded, split or run."""
    canary = tmp_path / "pwned"
    hostile = [
        '"; rm -rf ~',
        f"$(touch {canary})",
        f"`touch {canary}`",
        "it's",
        "a\\b",
        "*",
        "${HOME}",
        "x;y|z&w",
        "  spaced  out  ",
        "#SBATCH --comment=injected",
        "%j %N",
    ]
    env_value = f"$(touch {canary}) 'q' \"dq\" ;"
    printer = 'for a in "$@" "$HOSTILE"; do printf "[%s]\\n" "$a"; done'
    proc = cli(
        "run", "-s", "slurm", "--log", "utils.sh", "--env", f"HOSTILE={env_value}",
        "bash", "-c", printer, "bash", *hostile, timeout=120,
    )  # fmt: skip
    printed = re.findall(r"^sh/0 \[(.*)\]$", proc.stdout, flags=re.M)
    assert printed == [*hostile, env_value], proc.stdout
    assert not canary.exists()
