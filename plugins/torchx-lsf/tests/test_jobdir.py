"""The job directory at submit: made or checked, and nothing left behind when that fails."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from torchx_lsf import jobdir

from torchx.schedulers.contract.errors import SchedulerError


def test_prepare_makes_the_jobdir_and_a_private_state_dir(tmp_path: Path) -> None:
    target = tmp_path / "jobs"
    assert jobdir.prepare(str(target)) is True
    assert stat.S_IMODE(os.lstat(target / ".torchx-lsf").st_mode) == 0o700
    assert jobdir.prepare(str(target)) is False  # there already: checked, not made


def test_a_jobdir_it_made_is_removed_when_the_state_dir_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "jobs"
    real_mkdir = os.mkdir

    def mkdir(path: str, mode: int = 0o777) -> None:
        if str(path).endswith(jobdir.STATE_DIR):
            raise PermissionError(13, "Permission denied")
        real_mkdir(path, mode)

    monkeypatch.setattr(os, "mkdir", mkdir)
    with pytest.raises(SchedulerError, match=r"cannot create .*Permission denied"):
        jobdir.prepare(str(target))
    assert not target.exists()


def test_a_jobdir_every_user_can_write_is_refused(tmp_path: Path) -> None:
    target = tmp_path / "open"
    target.mkdir()
    target.chmod(0o777)
    with pytest.raises(SchedulerError, match="not sticky"):
        jobdir.prepare(str(target))
    assert not (target / ".torchx-lsf").exists()
    target.chmod(0o1777)  # sticky, like /tmp: fine
    assert jobdir.prepare(str(target)) is False


def test_the_cancel_mark_is_written_only_in_a_private_dir(tmp_path: Path) -> None:
    private = tmp_path / "app"
    private.mkdir(mode=0o700)
    private.chmod(0o700)
    jobdir.mark_cancelled(str(private))
    jobdir.mark_cancelled(str(private))  # twice: no error
    assert (private / jobdir.CANCELLED).exists()
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o755)
    jobdir.mark_cancelled(str(shared))
    assert not (shared / jobdir.CANCELLED).exists()
    os.symlink(private, tmp_path / "link")
    assert jobdir.is_private_dir(str(private)) and not jobdir.is_private_dir(str(tmp_path / "link"))
