"""torchx.functions: where a call's job directory is made, per scheduler, and what is
refused (in one line, before anything is submitted)."""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path
from typing import Any

import pytest

from torchx.functions import JobDirError, map_array, submit
from torchx.functions import _jobdir as jobdir
from torchx.runner import get_runner
from torchx.specs.errors import UnknownSchedulerError

TIMEOUT = 60


#: the helpers module imports by name here, and so on the replica (it gets our sys.path)
pytestmark = pytest.mark.usefixtures("helpers_importable")


def local_apps() -> int:
    with get_runner() as runner:
        return len(runner.list("local"))


@pytest.mark.parametrize("scheduler", ["slurm", "lsf"])
def test_a_shared_disk_scheduler_defaults_to_a_folder_in_the_cwd(
    scheduler: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert jobdir.channel_parent(scheduler, None, None) == tmp_path / ".torchx-functions"


@pytest.mark.parametrize(("scheduler", "option"), [("slurm", "job_dir"), ("lsf", "jobdir")])
def test_the_schedulers_job_directory_option_moves_it(
    scheduler: str, option: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    cfg = {option: "jobs"}  # relative: to the current directory, as the plugins read it
    assert jobdir.channel_parent(scheduler, cfg, None) == tmp_path / "jobs" / ".torchx-functions"
    other = "jobdir" if option == "job_dir" else "job_dir"  # the other plugin's name
    assert jobdir.channel_parent(scheduler, {other: "x"}, None) == tmp_path / ".torchx-functions"


def test_channel_dir_wins_and_is_made_absolute(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    got = jobdir.channel_parent("slurm", {"job_dir": "/elsewhere"}, "calls")
    assert got == tmp_path / "calls"
    assert jobdir.channel_parent("local", None, Path("calls")) == tmp_path / "calls"


def test_local_defaults_to_the_temporary_directory() -> None:
    assert jobdir.channel_parent("local", None, None) == Path(tempfile.gettempdir())
    assert jobdir.channel_parent("local_cwd", {"job_dir": "x"}, None) == Path(tempfile.gettempdir())


def test_a_call_runs_in_a_private_directory_of_channel_dir(fh: Any, tmp_path: Path) -> None:
    channel = tmp_path / "made" / "calls"  # missing: made, with its parents
    future = submit(fh.own_job_dir, channel_dir=channel)
    path, mode = future.result(timeout=TIMEOUT)
    assert Path(path).parent == channel and Path(path).name.startswith("torchx-fn-")
    assert mode == 0o700
    assert stat.S_IMODE(channel.stat().st_mode) & 0o077 == 0
    assert not Path(path).exists() and channel.is_dir()  # the call's went, the parent stays


def test_a_directory_that_cannot_be_made_is_one_line_before_submitting(
    fh: Any, tmp_path: Path
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    before = local_apps()
    with pytest.raises(JobDirError, match="cannot make the job directory") as info:
        submit(fh.add, 1, 2, channel_dir=blocker / "calls")
    assert "\n" not in str(info.value) and str(blocker / "calls") in str(info.value)
    with pytest.raises(JobDirError, match="cannot make the job directory"):
        map_array(fh.add, [1], parallelism=1, channel_dir=blocker)
    assert local_apps() == before
    # on a shared-disk scheduler the line says where it must be
    with pytest.raises(JobDirError, match=r"channel_dir=DIR \(a disk the slurm nodes share\)"):
        jobdir.prepare(blocker / "calls", "slurm", own_folder=False)


def test_the_default_folder_is_made_private(tmp_path: Path) -> None:
    folder = tmp_path / ".torchx-functions"
    jobdir.prepare(folder, "slurm", own_folder=True)
    assert stat.S_IMODE(folder.stat().st_mode) & 0o077 == 0
    jobdir.prepare(folder, "slurm", own_folder=True)  # again: it is fine as it is


def test_a_default_folder_others_can_write_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / ".torchx-functions"
    folder.mkdir()
    folder.chmod(0o775)
    with pytest.raises(JobDirError, match="no one else can write") as info:
        jobdir.prepare(folder, "lsf", own_folder=True)
    assert "mode 775" in str(info.value) and "\n" not in str(info.value)


def test_a_default_folder_that_is_a_link_is_refused(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir(mode=0o700)
    (tmp_path / ".torchx-functions").symlink_to(real)
    with pytest.raises(JobDirError, match="is a link"):
        jobdir.prepare(tmp_path / ".torchx-functions", "slurm", own_folder=True)


def test_a_world_writable_channel_dir_must_be_sticky(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    with pytest.raises(JobDirError, match="writable by every user and not sticky"):
        jobdir.prepare(shared, "slurm", own_folder=False)
    shared.chmod(0o777 | stat.S_ISVTX)  # as /tmp and most scratch filesystems are
    jobdir.prepare(shared, "slurm", own_folder=False)


@pytest.mark.parametrize("scheduler", ["slurm", "lsf"])
def test_a_container_image_is_refused_before_anything(
    fh: Any, scheduler: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ValueError, match="'busybox' is not a directory") as info:
        submit(fh.add, 1, 2, scheduler=scheduler, image="busybox")
    assert "\n" not in str(info.value)
    with pytest.raises(ValueError, match="is not a directory"):
        map_array(fh.add, [1], parallelism=1, scheduler=scheduler, image="busybox")
    assert not (tmp_path / ".torchx-functions").exists()  # refused before it was made


def test_the_image_is_the_directory_the_replica_runs_in(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "code").mkdir()
    assert jobdir.role_image("slurm", "code") == str(tmp_path / "code")
    assert jobdir.role_image("lsf", None) == str(tmp_path)
    assert jobdir.role_image("local", "busybox") == os.getcwd()  # ignored on local


def test_a_failed_submit_removes_the_calls_directory(fh: Any, tmp_path: Path) -> None:
    """An unknown run option fails the submit after the job directory was written."""
    channel = tmp_path / "calls"
    with pytest.raises(Exception, match="log_dri"):
        submit(fh.add, 1, 2, cfg={"log_dri": "x"}, channel_dir=channel)
    assert channel.is_dir() and list(channel.iterdir()) == []


@pytest.mark.parametrize(
    ("scheduler", "package"), [("slurm", "torchx-slurm"), ("lsf", "torchx-lsf")]
)
def test_a_scheduler_whose_plugin_is_missing_is_one_line_before_anything(
    fh: Any, scheduler: str, package: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with get_runner() as runner:
        installed = runner.scheduler_backends()
    assert scheduler not in installed, "tests-torchx-runner installs no scheduler plugin"
    monkeypatch.chdir(tmp_path)
    with pytest.raises(UnknownSchedulerError, match=f"pip install {package}") as info:
        submit(fh.add, 1, 2, scheduler=scheduler)
    assert "\n" not in str(info.value)
    with pytest.raises(UnknownSchedulerError):
        map_array(fh.add, [1], parallelism=1, scheduler=scheduler)
    assert list(tmp_path.iterdir()) == []  # no .torchx-functions was made
