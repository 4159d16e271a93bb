"""The job's private directory at submit: made private, or refused when someone else could
have planted in it (links the job would write through, exit codes status would read)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from torchx_slurm import jobdir
from torchx_slurm.scheduler import create_scheduler

from torchx.schedulers.contract.errors import SchedulerError
from torchx.schedulers.testing.fake_tools import FakeTools
from torchx.specs import AppDef, Resource, Role

ROOT = os.geteuid() == 0


def _mode(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def test_it_is_made_private(tmp_path: Path) -> None:
    os.umask(0o022)
    assert jobdir.prepare(str(tmp_path)) is True
    assert _mode(tmp_path / ".torchx-slurm") == 0o700
    # a second job reuses it
    assert jobdir.prepare(str(tmp_path)) is False


def test_shared_logs_make_it_readable_never_writable(tmp_path: Path) -> None:
    old = os.umask(0o002)  # a group-writable umask, as on many clusters
    try:
        jobdir.prepare(str(tmp_path), shared_logs=True)
    finally:
        os.umask(old)
    assert _mode(tmp_path / ".torchx-slurm") == 0o755


@pytest.mark.parametrize("plant", ["link", "file", "writable"])
def test_what_someone_else_could_have_planted_is_refused(tmp_path: Path, plant: str) -> None:
    top = tmp_path / ".torchx-slurm"
    elsewhere = tmp_path / "attacker"
    elsewhere.mkdir()
    if plant == "link":
        top.symlink_to(elsewhere)
    elif plant == "file":
        top.write_text("")
    else:
        top.mkdir()
        top.chmod(0o777)
    with pytest.raises(SchedulerError) as info:
        jobdir.prepare(str(tmp_path))
    message = str(info.value)
    assert "\n" not in message
    assert f"{top} is " in message and "not a directory of yours that only you can write" in message
    assert {"link": "is a link", "file": "is not a directory,", "writable": "chmod go-w"}[
        plant
    ] in message


@pytest.mark.skipif(not ROOT, reason="needs root to give a directory to another user")
def test_a_state_dir_of_another_user_is_refused(tmp_path: Path) -> None:
    top = tmp_path / ".torchx-slurm"
    top.mkdir(mode=0o700)
    os.chown(top, 65534, 65534)
    with pytest.raises(SchedulerError, match="is owned by uid 65534, not a directory of yours"):
        jobdir.prepare(str(tmp_path))


def test_a_job_dir_everyone_can_write_must_be_sticky(tmp_path: Path) -> None:
    shared = tmp_path / "scratch"
    shared.mkdir()
    shared.chmod(0o777)
    with pytest.raises(SchedulerError, match=r"can be written by every user and is not sticky"):
        jobdir.prepare(str(shared))
    assert not (shared / ".torchx-slurm").exists()
    shared.chmod(0o1777)  # like /tmp: no one removes or renames what is not theirs
    assert jobdir.prepare(str(shared)) is True


def test_a_refused_state_dir_submits_nothing(fake_slurm: FakeTools, tmp_path: Path) -> None:
    (tmp_path / ".torchx-slurm").symlink_to("/")
    sched = create_scheduler("me")
    role = Role("t", image="/x", entrypoint="true", resource=Resource(cpu=1, gpu=0, memMB=8))
    info = sched.submit_dryrun(AppDef("a", [role]), {"job_dir": str(tmp_path)})
    with pytest.raises(SchedulerError, match="is a link"):
        sched.schedule(info)
    assert fake_slurm.calls("sbatch") == []


def test_a_failed_submit_removes_the_state_dir_it_made(
    fake_slurm: FakeTools, tmp_path: Path
) -> None:
    fake_slurm.answer("sbatch", returncode=1, stderr="sbatch: error: Invalid account\n")
    sched = create_scheduler("me")
    role = Role("t", image="/x", entrypoint="true", resource=Resource(cpu=1, gpu=0, memMB=8))
    job_dir = tmp_path / "job"
    info = sched.submit_dryrun(AppDef("a", [role]), {"job_dir": str(job_dir)})
    with pytest.raises(SchedulerError, match="Invalid account"):
        sched.schedule(info)
    assert not job_dir.exists()
