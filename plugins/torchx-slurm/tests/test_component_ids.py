"""A later component's own job id (1235 of job 1234+1) is named for what it is, not an app."""

from __future__ import annotations

from pathlib import Path

import pytest
from torchx_slurm.parse import SEP
from torchx_slurm.scheduler import SlurmScheduler, create_scheduler

from torchx.schedulers.contract.errors import SchedulerError
from torchx.schedulers.testing.fake_tools import FakeTools

COMPONENT = (
    "Slurm job 1235 is component 1 of heterogeneous job 1234 (replica trainer/1 of its app), "
    "not an app of its own: use its app, slurm://me/1234"
)


@pytest.fixture
def sched() -> SlurmScheduler:
    return create_scheduler("me")


def _sacct(job: str, name: str, work_dir: Path) -> str:
    return SEP.join([job, "COMPLETED", "0:0", "alice(0)", "n1", "None", name, str(work_dir)]) + "\n"


def test_a_queued_component_id_names_its_app(
    fake_slurm: FakeTools, sched: SlurmScheduler, tmp_path: Path
) -> None:
    # squeue -j 1235 answers with the component under its leader's id
    line = SEP.join(["1234+1", "RUNNING", "alice", "n2", "None", "train-ab:trainer:1", "/j"])
    fake_slurm.answer("squeue", stdout=line + "\n")
    with pytest.raises(SchedulerError) as err:
        sched.describe("1235")
    assert str(err.value) == COMPONENT
    assert fake_slurm.calls("sacct") == []


def test_an_accounted_component_id_names_its_app(
    fake_slurm: FakeTools, sched: SlurmScheduler, tmp_path: Path
) -> None:
    fake_slurm.answer(
        "squeue", stderr="slurm_load_jobs error: Invalid job id specified\n", returncode=1
    )
    fake_slurm.answer("sacct", stdout=_sacct("1234+1", "train-ab:trainer:1", tmp_path))
    with pytest.raises(SchedulerError) as err:
        sched.describe("1235")
    assert str(err.value) == COMPONENT


def test_a_component_in_the_completion_file_names_its_app(
    fake_slurm: FakeTools, sched: SlurmScheduler, tmp_path: Path
) -> None:
    # without accounting, the completion file holds each component under its own id
    (tmp_path / ".torchx-slurm" / "1234").mkdir(parents=True)  # the leader's, by its script
    fake_slurm.answer("squeue", stderr="Invalid job id specified\n", returncode=1)
    fake_slurm.answer(
        "sacct",
        stderr="sacct: error: Slurm accounting storage is disabled\n",
        returncode=1,
        then=[
            {"stdout": _sacct("1235", "train-ab:trainer:1", tmp_path)},
            {
                "stdout": _sacct("1234", "train-ab:trainer:0", tmp_path)
                + _sacct("1233", "other-cd:main:0", tmp_path)
            },
        ],
    )
    with pytest.raises(SchedulerError) as err:
        sched.describe("1235")
    assert str(err.value) == COMPONENT
    asked = fake_slurm.calls("sacct")[-1]
    assert asked[-2:] == ["-j", ",".join(str(i) for i in range(1234, 978, -1))]


def test_a_leader_in_the_completion_file_costs_no_more_calls(
    fake_slurm: FakeTools, sched: SlurmScheduler, tmp_path: Path
) -> None:
    (tmp_path / ".torchx-slurm" / "1234").mkdir(parents=True)
    fake_slurm.answer("squeue", stderr="Invalid job id specified\n", returncode=1)
    fake_slurm.answer(
        "sacct",
        stderr="sacct: error: Slurm accounting storage is disabled\n",
        returncode=1,
        then=[{"stdout": _sacct("1234", "train-ab:trainer:0", tmp_path)}],
    )
    desc = sched.describe("1234")
    assert desc is not None and desc.app_id == "1234"
    assert len(fake_slurm.calls("sacct")) == 2
