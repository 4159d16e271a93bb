"""A job directory other users can write (a cluster's scratch filesystem), attacked for real.

An unprivileged user, ``torchx-attacker`` (made with useradd if missing), plants what it
can in the shared directory before the job starts, for the next few job ids: links named
like the job's log files pointing at a file of the victim's (the user running torchx),
or its own ``.torchx-slurm``. The job must not write through any of it, and ``status``
must not read what the attacker wrote. Also here: what every user sees of a job in
``ps`` (the command lines) and the strings Slurm's own tools would cut or expand.
"""

from __future__ import annotations

import os
import pwd
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from slurmcmd import slurm

from torchx.schedulers.testing.cli import TorchxCli
from torchx.schedulers.testing.cli import app_id as job_id

APPS = str(Path(__file__).resolve().parent / "apps.py")
FINAL = {"SUCCEEDED", "FAILED", "CANCELLED"}
ATTACKER = "torchx-attacker"


@pytest.fixture(scope="module")
def attacker() -> str:
    """An unprivileged user of this machine (the nodes are this machine too)."""
    try:
        pwd.getpwnam(ATTACKER)
    except KeyError:
        subprocess.run(
            ["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", ATTACKER],
            check=True,
            timeout=30,
        )
    return ATTACKER


def as_user(user: str, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["runuser", "-u", user, "--", *argv], capture_output=True, text=True, timeout=30
    )


@pytest.fixture
def world() -> Iterator[Path]:
    """A directory every user can reach (pytest's tmp_path is the victim's alone)."""
    base = Path(tempfile.mkdtemp(prefix="torchx-shared-"))
    base.chmod(0o755)
    yield base
    shutil.rmtree(base, ignore_errors=True)


def next_job_ids(n: int = 3) -> list[str]:
    """The ids the next jobs get (this session's tests run one at a time, under a lock)."""
    probe = slurm("sbatch", "--parsable", "--hold", "--output=/dev/null", "--wrap=true").strip()
    slurm("scancel", probe)
    return [str(int(probe) + k) for k in range(1, n + 1)]


def test_links_planted_in_a_sticky_scratch_dir_are_not_written_through(
    cli: TorchxCli, world: Path, attacker: str
) -> None:
    victim = world / "precious.txt"
    victim.write_text("the victim's own file\n")
    scratch = world / "scratch"
    scratch.mkdir()
    scratch.chmod(0o1777)  # like /tmp and most scratch filesystems
    for jid in next_job_ids():
        for name in (f"slurm-{jid}-sh-0.out", f"slurm-{jid}-sh-0.err", f"slurm-{jid}.out"):
            planted = as_user(attacker, "ln", "-s", str(victim), str(scratch / name))
            assert planted.returncode == 0, planted.stderr
    handle = cli.start("-cfg", f"job_dir={scratch}", "utils.sh", "echo", "job output")
    status = cli.wait_state(handle, FINAL)
    assert status["state"] == "SUCCEEDED", status
    assert victim.read_text() == "the victim's own file\n"
    assert cli("log", handle).stdout.strip() == "sh/0 job output"
    # the logs and exit codes are the victim's alone
    state = scratch / ".torchx-slurm" / job_id(handle)
    log = state / f"slurm-{job_id(handle)}-sh-0.out"
    assert oct(state.stat().st_mode & 0o777) == "0o700"
    assert oct((state / "sh.0.exit").stat().st_mode & 0o777) == "0o600"
    peek = as_user(attacker, "cat", str(log))
    assert peek.returncode != 0 and "job output" not in peek.stdout
    listing = as_user(attacker, "ls", str(state))
    assert listing.returncode != 0 and "exit" not in listing.stdout, listing


def test_a_state_dir_planted_by_another_user_is_refused(
    cli: TorchxCli, world: Path, attacker: str
) -> None:
    """A pre-made .torchx-slurm/<id>/ let its maker rewrite exit codes: FAILED as SUCCEEDED."""
    scratch = world / "scratch"
    scratch.mkdir()
    scratch.chmod(0o1777)
    top = scratch / ".torchx-slurm"
    assert as_user(attacker, "mkdir", "-m", "777", str(top)).returncode == 0
    for jid in next_job_ids():
        assert as_user(attacker, "mkdir", "-m", "777", str(top / jid)).returncode == 0
    proc = cli("run", "-s", "slurm", "-cfg", f"job_dir={scratch}", "utils.sh", "exit", "3", rc=1)
    line = proc.stderr.strip()
    assert "\n" not in line, line
    uid = pwd.getpwnam(attacker).pw_uid
    assert f"{top} is owned by uid {uid}, not a directory of yours" in line, line
    assert not proc.stdout.strip(), proc.stdout  # no handle: nothing was submitted


def test_a_job_dir_every_user_can_write_must_be_sticky(cli: TorchxCli, world: Path) -> None:
    shared = world / "open"
    shared.mkdir()
    shared.chmod(0o777)
    proc = cli("run", "-s", "slurm", "-cfg", f"job_dir={shared}", "utils.echo", rc=1)
    assert "can be written by every user and is not sticky" in proc.stderr, proc.stderr
    assert f"chmod +t {shared}" in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
    assert list(shared.iterdir()) == []


def _command_lines() -> list[str]:
    lines = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            lines.append(Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace"))
        except OSError:
            pass
    return lines


def test_env_values_are_on_no_command_line(cli: TorchxCli) -> None:
    """Every user sees every process's command line (ps): the values go by the environment."""
    secret = "tok-" + os.urandom(8).hex()
    handle = cli.start(
        "utils.sh", "--env", f"API_TOKEN={secret}", "sh", "-c",
        'echo "token=$API_TOKEN"; sleep 60',
    )  # fmt: skip
    deadline = time.monotonic() + 60
    while "token=" not in (out := cli("log", handle, rc=None).stdout):
        assert time.monotonic() < deadline, out
        time.sleep(0.3)
    assert f"token={secret}" in out  # it reached the program
    seen = [line for line in _command_lines() if secret in line]
    assert seen == [], seen
    cli("cancel", handle)


def test_an_entrypoint_with_an_equals_sign_is_the_program(cli: TorchxCli, world: Path) -> None:
    canary = world / "canary"
    handle = cli.start(f"{APPS}:equals_entrypoint", "--canary", str(canary))
    status = cli.wait_state(handle, FINAL)
    assert status["state"] == "FAILED", status  # there is no program named X=1
    assert not canary.exists()


def test_percent_and_hash_reach_slurm_as_written(cli: TorchxCli, tmp_path: Path) -> None:
    """srun expanded %j in the log names; sbatch cut job_dir and option values at '#'."""
    job_dir = tmp_path / "run %j #1"
    handle = cli.start(
        "-cfg", f"job_dir={job_dir},comment=hello#world", "utils.echo", "--msg", "made it"
    )  # fmt: skip
    status = cli.wait_state(handle, FINAL)
    assert status["state"] == "SUCCEEDED", status
    assert "made it" in cli("log", handle).stdout
    shown = slurm("scontrol", "show", "job", job_id(handle))
    assert f"WorkDir={job_dir}\n" in shown and "Comment=hello#world" in shown, shown
    assert (job_dir / f"slurm-{job_id(handle)}-echo-0.out").is_symlink()


def test_a_hash_in_a_partition_is_not_cut(cli: TorchxCli) -> None:
    proc = cli("run", "-s", "slurm", "-cfg", "partition=debug#nope", "utils.echo", rc=1)
    assert re.search(r"invalid partition", proc.stderr, re.I), proc.stderr


def test_carriage_returns_reach_the_program(cli: TorchxCli) -> None:
    """sbatch refused a script holding CR LF ("DOS line breaks")."""
    proc = cli(
        "run", "-s", "slurm", "--log", "utils.sh", "--env", "CRLF=x\r\ny",
        sys.executable, "-c", "import os, sys; print(repr(sys.argv[1:] + [os.environ['CRLF']]))",
        "a\r\nb", timeout=120,
    )  # fmt: skip
    assert "['a\\r\\nb', 'x\\r\\ny']" in proc.stdout, proc.stdout + proc.stderr
    assert "SUCCEEDED" in proc.stderr
