"""torchx.schedulers.helpers.privatedir: a state directory nobody else can have planted or can write."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from torchx.schedulers.contract.errors import SchedulerError
from torchx.schedulers.helpers import privatedir

WHY = "acme keeps its logs there; use another job_dir"


def test_a_missing_job_dir_is_one_line(tmp_path: Path) -> None:
    missing = tmp_path / "nope"
    with pytest.raises(SchedulerError) as e:
        privatedir.check_job_dir(str(missing), option="job_dir", holds="the job")
    assert str(e.value) == f"cannot use the job directory {missing}: No such file or directory"


def test_a_job_dir_everyone_can_write_must_be_sticky(tmp_path: Path) -> None:
    shared = tmp_path / "scratch"
    shared.mkdir()
    shared.chmod(0o777)
    with pytest.raises(SchedulerError) as e:
        privatedir.check_job_dir(str(shared), option="jobdir", holds="the app")
    assert str(e.value) == (
        f"jobdir {shared} can be written by every user and is not sticky, so any of them "
        "could replace the files of the app: use a directory only you can write, "
        f"or make it sticky like /tmp (chmod +t {shared})"
    )
    shared.chmod(0o1777)
    privatedir.check_job_dir(str(shared), option="jobdir", holds="the app")


def test_the_state_dir_is_made_with_its_mode_whatever_the_umask(tmp_path: Path) -> None:
    old = os.umask(0o077)
    try:
        assert privatedir.make_private_dir(str(tmp_path / "a"), why=WHY, mode=0o755)
    finally:
        os.umask(old)
    assert (tmp_path / "a").stat().st_mode & 0o777 == 0o755
    # there already, the user's own and not writable by others: checked, not made
    assert not privatedir.make_private_dir(str(tmp_path / "a"), why=WHY)


def test_a_link_is_never_followed(tmp_path: Path) -> None:
    (tmp_path / "elsewhere").mkdir(mode=0o700)
    (tmp_path / "top").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(SchedulerError) as e:
        privatedir.make_private_dir(str(tmp_path / "top"), why=WHY)
    assert str(e.value) == (
        f"{tmp_path / 'top'} is a link, not a directory of yours that only you can write: {WHY}"
    )


def test_a_file_is_not_a_directory(tmp_path: Path) -> None:
    (tmp_path / "top").write_text("")
    with pytest.raises(SchedulerError, match=r" is not a directory, not a directory of yours"):
        privatedir.open_private_dir(str(tmp_path / "top"), why=WHY)


def test_a_state_dir_others_can_write_is_refused_with_the_fix(tmp_path: Path) -> None:
    top = tmp_path / "top"
    top.mkdir()
    top.chmod(0o775)
    with pytest.raises(SchedulerError) as e:
        privatedir.make_private_dir(str(top), why=WHY)
    assert str(e.value) == (
        f"{top} is writable by others (mode 775), not a directory of yours that only you "
        f"can write: {WHY}; or make it yours alone: chmod go-w {top}"
    )


@pytest.mark.ci_may_skip(reason="giving a directory away needs root")
@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to give a directory away")
def test_a_state_dir_of_another_user_is_refused(tmp_path: Path) -> None:
    top = tmp_path / "top"
    top.mkdir(mode=0o700)
    os.chown(top, 4242, -1)
    with pytest.raises(SchedulerError) as e:
        privatedir.make_private_dir(str(top), why=WHY)
    assert str(e.value) == (
        f"{top} is owned by uid 4242, not a directory of yours that only you can write: {WHY}"
    )


def test_a_state_dir_that_cannot_be_made_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(SchedulerError) as e:
        privatedir.make_private_dir(str(tmp_path / "no" / "top"), why=WHY)
    assert str(e.value) == f"cannot create {tmp_path / 'no' / 'top'}: No such file or directory"
