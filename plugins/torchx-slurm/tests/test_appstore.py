"""describe gives back the submitted AppDef, kept private with the job (torchx.schedulers.helpers.appstore)."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest
from torchx_slurm.parse import SEP
from torchx_slurm.scheduler import SlurmScheduler, create_scheduler

from torchx.schedulers.helpers import appstore
from torchx.schedulers.testing.fake_tools import FakeTools
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
    fake_slurm: FakeTools, sched: SlurmScheduler, tmp_path: Path
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
    assert desc.run_options["job_dir"] == str(tmp_path)


def test_describe_gives_back_the_run_options_masked(
    fake_slurm: FakeTools, sched: SlurmScheduler, tmp_path: Path
) -> None:
    fake_slurm.answer("sbatch", stdout="1234\n")
    cfg = {"job_dir": str(tmp_path), "comment": "run 7,API_TOKEN=tok-987"}
    sched.submit(_app(), cfg)
    fake_slurm.answer("squeue", stdout=_squeue(tmp_path))
    desc = create_scheduler("other").describe("1234")
    assert desc is not None
    assert desc.run_options["job_dir"] == str(tmp_path)
    assert desc.run_options["comment"] == "run 7,API_TOKEN=****"
    assert b"tok-987" not in (tmp_path / ".torchx-slurm" / "1234" / appstore.FILE).read_bytes()


def test_without_a_kept_appdef_describe_has_the_job_name_and_no_roles(
    fake_slurm: FakeTools, sched: SlurmScheduler, tmp_path: Path
) -> None:
    fake_slurm.answer("squeue", stdout=_squeue(tmp_path))
    desc = sched.describe("1234")
    assert desc is not None and desc.name == "train-ab" and desc.roles == []
