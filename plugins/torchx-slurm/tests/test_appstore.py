"""describe gives back the submitted AppDef, kept private with the job, loaded without running code."""

from __future__ import annotations

import os
import pickle
import stat
from pathlib import Path

import attrs
import pytest
from conftest import FakeSlurm
from torchx_slurm import appstore
from torchx_slurm.parse import SEP
from torchx_slurm.scheduler import SlurmScheduler, create_scheduler

from torchx.specs import AppDef, Resource, Role


def _app() -> AppDef:
    role = Role(
        "trainer",
        image="/nonexistent",
        entrypoint="python",
        args=["-m", "train", "--lr", "0.1"],
        env={"HF_TOKEN": "hf_secret", "PLAIN": "v"},
        num_replicas=2,
        max_retries=1,
        resource=Resource(cpu=1, gpu=0, memMB=128),
    )
    return AppDef("train", [role], metadata={"team": "ml"})


@pytest.fixture
def sched() -> SlurmScheduler:
    return create_scheduler("me")


def _squeue(job_dir: Path, job: str = "1234", name: str = "train-ab") -> str:
    return "".join(
        SEP.join([f"{job}+{k}", "RUNNING", "alice", f"n{k}", "None", f"{name}:trainer:{k}"])
        + SEP
        + str(job_dir)
        + "\n"
        for k in (0, 1)
    )


def test_describe_gives_back_the_submitted_appdef(
    fake_slurm: FakeSlurm, sched: SlurmScheduler, tmp_path: Path
) -> None:
    fake_slurm.answer("sbatch", stdout="1234\n")
    app = _app()
    assert sched.submit(app, {"job_dir": str(tmp_path)}) == "1234"
    fake_slurm.answer("squeue", stdout=_squeue(tmp_path))
    desc = create_scheduler("other").describe("1234")  # another process, same user
    assert desc is not None
    assert desc.name == "train"
    assert desc.roles == app.roles  # secrets included: the CLI masks them when it prints
    assert desc.metadata == {"team": "ml"}
    # readable by the user alone: the env may hold secrets
    kept = tmp_path / ".torchx-slurm" / "1234" / appstore.FILE
    assert stat.S_IMODE(kept.stat().st_mode) == 0o600
    assert stat.S_IMODE(kept.parent.stat().st_mode) == 0o700
    assert b"hf_secret" in kept.read_bytes()


def test_without_a_kept_appdef_describe_has_the_job_name_and_no_roles(
    fake_slurm: FakeSlurm, sched: SlurmScheduler, tmp_path: Path
) -> None:
    fake_slurm.answer("squeue", stdout=_squeue(tmp_path))
    desc = sched.describe("1234")
    assert desc is not None and desc.name == "train-ab" and desc.roles == []


def test_a_file_others_can_read_or_write_is_not_trusted(tmp_path: Path) -> None:
    appstore.save(str(tmp_path), _app())
    path = tmp_path / appstore.FILE
    assert appstore.load(str(tmp_path)) == _app()
    path.chmod(0o644)
    assert appstore.load(str(tmp_path)) is None
    path.chmod(0o600)
    assert appstore.load(str(tmp_path)) == _app()
    if os.geteuid() == 0:  # only root can give a file away
        os.chown(path, 65534, 65534)
        assert appstore.load(str(tmp_path)) is None  # someone else's file


def test_a_link_is_not_followed(tmp_path: Path) -> None:
    real = tmp_path / "real"
    appstore.save(str(real), _app())
    planted = tmp_path / "planted"
    planted.mkdir()
    (planted / appstore.FILE).symlink_to(real / appstore.FILE)
    assert appstore.load(str(planted)) is None


class _Evil:
    def __reduce__(self) -> tuple[object, tuple[str]]:
        return (os.system, ("touch pwned",))


def test_a_crafted_pickle_runs_no_code(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    payload = {"apiVersion": appstore.API_VERSION, "kind": "SlurmAppDef", "app": _Evil()}
    path = tmp_path / appstore.FILE
    path.write_bytes(pickle.dumps(payload))
    path.chmod(0o600)
    assert appstore.load(str(tmp_path)) is None
    assert not (tmp_path / "pwned").exists()


def test_another_format_gives_no_appdef(tmp_path: Path) -> None:
    path = tmp_path / appstore.FILE
    path.write_bytes(pickle.dumps({"apiVersion": "torchx-slurm/v999", "app": _app()}))
    path.chmod(0o600)
    assert appstore.load(str(tmp_path)) is None
    path.write_bytes(b"not a pickle")
    assert appstore.load(str(tmp_path)) is None


@attrs.define
class MyRole(Role):
    """A Role subclass of the user's code: stored as the spec types it round-trips to."""


def test_an_appdef_of_user_classes_is_kept_as_spec_types(tmp_path: Path) -> None:
    role = MyRole("r", image="/x", entrypoint="echo", args=["hi"])
    appstore.save(str(tmp_path), AppDef("mine", [role]))
    kept = appstore.load(str(tmp_path))
    assert kept is not None and type(kept.roles[0]) is Role
    assert (kept.roles[0].name, kept.roles[0].args) == ("r", ["hi"])
