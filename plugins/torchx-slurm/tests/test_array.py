"""A role as one native job array (``-cfg array_parallelism=K``): the request, the array
task ids squeue and sacct print, and describe/cancel against scripted Slurm tools."""

from __future__ import annotations

from pathlib import Path

import pytest
from torchx_slurm.parse import SEP, parse_sacct_text, parse_squeue_text, split_array_id
from torchx_slurm.scheduler import SlurmScheduler, create_scheduler

from torchx.schedulers.testing.fake_tools import FakeTools
from torchx.specs import AppDef, AppState, Resource, Role, macros
from torchx.specs.errors import InvalidRunConfigException


@pytest.fixture
def sched(fake_slurm: FakeTools) -> SlurmScheduler:
    return create_scheduler("me")


def _app(replicas: int = 10, **role_kw: object) -> AppDef:
    role = Role(
        "fn",
        image="/nonexistent",
        entrypoint="python",
        args=["-m", "worker", f"/calls/{macros.replica_id}", macros.app_id],
        num_replicas=replicas,
        resource=Resource(cpu=1, gpu=0, memMB=256),
        env={"ITEM": f"item-{macros.replica_id}"},
        **role_kw,  # type: ignore[arg-type]
    )
    return AppDef("sq", [role])


def _line(job: str, state: str, work_dir: str, nodes: str = "n1", reason: str = "None") -> str:
    return SEP.join([job, state, "alice", nodes, reason, "sq-1:fn:0", work_dir]) + "\n"


# -- the request ---------------------------------------------------------------------------


def test_an_array_is_one_job_of_one_group_with_array_and_no_hetjob(sched: SlurmScheduler) -> None:
    info = sched.submit_dryrun(_app(), {"job_dir": "/jobs", "array_parallelism": 2})
    script = info.request.script
    assert info.request.array == "0-9%2"
    assert "#SBATCH --array=0-9%2" in script.splitlines()
    assert "hetjob" not in script and "--het-group" not in script
    assert script.count("#SBATCH --job-name=") == 1
    assert script.count("_run fn") == 1  # one replica per task, the task's own
    # every task writes under the array's id, the replica id is the task's index
    assert "_job=$SLURM_ARRAY_JOB_ID\n_task=$SLURM_ARRAY_TASK_ID" in script
    assert 'TORCHX_REPLICA_ID="$_task"' in script
    assert 'ITEM=item-"$_task"' in script
    assert '/calls/"$_task" "$_job"' in script
    # a task clears only its own exit code: the others' are of tasks that ran
    assert 'rm -f -- "$_state"/fn."$_task".exit' in script
    assert '"$_state"/*.exit' not in script
    assert "slurm-%A_%a.out" in script
    # each task forks as little as it can: no scontrol, no port probe, no log links
    assert "scontrol" not in script and "python3" not in script and '"$_ln" -sT' not in script
    assert 'TORCHX_RANK0_HOST="$SLURMD_NODENAME"' in script
    # the structured replicas say what each task runs
    assert [r.argv[3] for r in info.request.replicas] == [f"/calls/{k}" for k in range(10)]


def test_without_the_option_the_app_stays_a_heterogeneous_job(sched: SlurmScheduler) -> None:
    info = sched.submit_dryrun(_app(3), {"job_dir": "/jobs", "allow_pending": True})
    assert info.request.array is None
    assert info.request.script.count("#SBATCH hetjob") == 2
    assert "scontrol show hostnames" in info.request.script and '"$_ln" -sT' in info.request.script


def test_an_array_needs_no_node_per_replica(fake_slurm: FakeTools, sched: SlurmScheduler) -> None:
    # a 1-node partition refuses a gang of 10, not an array of 10 run one after the other
    fake_slurm.answer("sinfo", stdout="n1 debug*\n")
    sched.submit_dryrun(_app(10), {"job_dir": "/jobs", "array_parallelism": 1})
    assert fake_slurm.calls("sinfo") == []


@pytest.mark.parametrize(
    ("app", "cfg", "said"),
    [
        (
            AppDef(
                "two",
                [Role("a", image="/x", entrypoint="e"), Role("b", image="/x", entrypoint="e")],
            ),
            {"array_parallelism": 2},
            "app 'two' has 2 roles (a, b)",
        ),
        (_app(max_retries=2), {"array_parallelism": 2}, "max_retries=2"),
        (_app(), {"array_parallelism": 0}, "'array_parallelism'=0 must be a whole number"),
        (_app(), {"array_parallelism": 2, "sbatch_args": ["--array=0-3"]}, "--array"),
    ],
)
def test_what_contradicts_an_array_is_refused_in_one_line(
    sched: SlurmScheduler, app: AppDef, cfg: dict[str, object], said: str
) -> None:
    with pytest.raises(InvalidRunConfigException, match="array") as info:
        sched.submit_dryrun(app, {"job_dir": "/jobs", **cfg})  # type: ignore[arg-type]
    assert said in str(info.value) and "\n" not in str(info.value)


# -- array task ids as squeue and sacct print them -----------------------------------------


@pytest.mark.parametrize(
    ("raw", "parsed"),
    [
        ("12_3", ("12", [3])),
        ("12_[3-9%2]", ("12", [3, 4, 5, 6, 7, 8, 9])),
        ("12_[1,4-5]", ("12", [1, 4, 5])),
        ("12_[7]", ("12", [7])),
        ("12", None),
        ("12+1", None),
        ("12_[a-3]", None),
        ("12_[3-]", None),
        ("x_3", None),
    ],
)
def test_split_array_id(raw: str, parsed: tuple[str, list[int]] | None) -> None:
    assert split_array_id(raw) == parsed


def test_squeue_pending_range_becomes_one_record_per_task() -> None:
    out = _line("12_[2-4%2]", "PENDING", "/j", nodes="", reason="JobArrayTaskLimit")
    out += _line("12_0", "RUNNING", "/j") + _line("12_1", "COMPLETED", "/j")
    records = parse_squeue_text(out)
    assert [(r.job_id, r.array_task, r.state) for r in records] == [
        ("12", 2, "PENDING"),
        ("12", 3, "PENDING"),
        ("12", 4, "PENDING"),
        ("12", 0, "RUNNING"),
        ("12", 1, "COMPLETED"),
    ]
    assert records[0].reason == "JobArrayTaskLimit"


def test_sacct_array_tasks_carry_their_exit_codes() -> None:
    row = [
        "12_1",
        "FAILED",
        "3:0",
        "alice",
        "n2",
        "NonZeroExitCode",
        "sq-1:fn:0",
        "2026-11-29T10:00:00",
        "2026-11-29T10:00:05",
        "/j",
    ]
    pending = [
        "12_[2-3]",
        "PENDING",
        "0:0",
        "alice",
        "None",
        "None",
        "sq-1:fn:0",
        "Unknown",
        "Unknown",
        "/j",
    ]
    records = parse_sacct_text(SEP.join(row) + "\n" + SEP.join(pending) + "\n")
    assert [(r.job_id, r.array_task, r.exit_code) for r in records] == [
        ("12", 1, 3),
        ("12", 2, 0),
        ("12", 3, 0),
    ]
    assert records[0].end_time is not None and records[0].start_time is not None


# -- describe and cancel -------------------------------------------------------------------


def test_describe_maps_tasks_to_replicas_each_in_its_own_state(
    fake_slurm: FakeTools, sched: SlurmScheduler, tmp_path: Path
) -> None:
    state = tmp_path / ".torchx-slurm" / "12"
    state.mkdir(parents=True)
    (state / "fn.0.exit").write_text("0\n")
    (state / "fn.1.exit").write_text("3\n")
    out = _line("12_[3-4%2]", "PENDING", str(tmp_path), nodes="", reason="JobArrayTaskLimit")
    out += _line("12_0", "COMPLETED", str(tmp_path)) + _line("12_1", "FAILED", str(tmp_path))
    out += _line("12_2", "RUNNING", str(tmp_path), nodes="n2")
    fake_slurm.answer("squeue", stdout=out)
    desc = sched.describe("12")
    assert desc is not None
    # a failed task fails no other: the array runs on until every task has ended
    assert desc.state == AppState.RUNNING
    (role,) = desc.roles_statuses
    got = {r.id: (r.state, r.exit_code, r.hostname) for r in role.replicas}
    assert got == {
        0: (AppState.SUCCEEDED, 0, "n1"),
        1: (AppState.FAILED, 3, "n1"),
        2: (AppState.RUNNING, None, "n2"),
        3: (AppState.PENDING, None, ""),
        4: (AppState.PENDING, None, ""),
    }
    assert len(fake_slurm.calls("squeue")) == 1  # one call for the whole array


def test_an_array_ends_failed_when_one_task_failed(
    fake_slurm: FakeTools, sched: SlurmScheduler, tmp_path: Path
) -> None:
    out = _line("12_0", "COMPLETED", str(tmp_path)) + _line("12_1", "FAILED", str(tmp_path))
    fake_slurm.answer("squeue", stdout=out)
    desc = sched.describe("12")
    assert desc is not None and desc.state == AppState.FAILED


def test_a_task_cancelled_alone_is_cancelled_not_failed(
    fake_slurm: FakeTools, sched: SlurmScheduler, tmp_path: Path
) -> None:
    state = tmp_path / ".torchx-slurm" / "12"
    state.mkdir(parents=True)
    (state / "fn.1.exit").write_text("143\n")
    out = _line("12_0", "COMPLETED", str(tmp_path)) + _line("12_1", "CANCELLED", str(tmp_path))
    fake_slurm.answer("squeue", stdout=out)
    desc = sched.describe("12")
    assert desc is not None and desc.state == AppState.CANCELLED
    states = {r.id: r.state for r in desc.roles_statuses[0].replicas}
    assert states == {0: AppState.SUCCEEDED, 1: AppState.CANCELLED}


def test_one_task_is_described_and_cancelled_by_its_jobid_task(
    fake_slurm: FakeTools, sched: SlurmScheduler, tmp_path: Path
) -> None:
    out = _line("12_[1-2]", "PENDING", str(tmp_path), nodes="") + _line(
        "12_0", "RUNNING", str(tmp_path)
    )
    fake_slurm.answer("squeue", stdout=out, then=[{"stdout": out}])
    desc = sched.describe("12_2")
    assert desc is not None and desc.state == AppState.PENDING
    assert [r.id for r in desc.roles_statuses[0].replicas] == [2]
    sched.cancel("12_2")
    assert fake_slurm.calls("scancel") == [["12_2"]]
    assert all(call[call.index("-j") + 1] == "12" for call in fake_slurm.calls("squeue"))


def test_a_task_the_array_does_not_have_is_no_app(
    fake_slurm: FakeTools, sched: SlurmScheduler, tmp_path: Path
) -> None:
    fake_slurm.answer("squeue", stdout=_line("12_0", "RUNNING", str(tmp_path)))
    fake_slurm.answer("sacct", stdout="")
    fake_slurm.answer("sdiag", stdout="DBD Agent queue size: 0\n")
    assert sched.describe("12_7") is None


def test_cancel_of_the_array_cancels_every_task(
    fake_slurm: FakeTools, sched: SlurmScheduler, tmp_path: Path
) -> None:
    fake_slurm.answer("squeue", stdout=_line("12_0", "RUNNING", str(tmp_path)))
    sched.cancel("12")
    assert fake_slurm.calls("scancel") == [["12"]]


def test_list_shows_an_array_once_in_its_tasks_rolled_up_state(
    fake_slurm: FakeTools, sched: SlurmScheduler, tmp_path: Path
) -> None:
    out = _line("12_0", "COMPLETED", str(tmp_path)) + _line("12_1", "FAILED", str(tmp_path))
    out += _line("12_[2-3%1]", "PENDING", str(tmp_path), nodes="")
    fake_slurm.answer("squeue", stdout=out)
    fake_slurm.answer("sacct", stdout="")
    apps = sched.list()
    assert [(a.app_id, a.state, a.name) for a in apps] == [("12", AppState.RUNNING, "sq-1")]


def test_an_ended_array_without_accounting_is_read_from_its_exit_codes(
    fake_slurm: FakeTools, sched: SlurmScheduler, tmp_path: Path
) -> None:
    # the job-completion file (sacct -c) names each task by its own job id, with no
    # array index: the array's id is one task's record, whichever task got it
    state = tmp_path / ".torchx-slurm" / "12"
    state.mkdir(parents=True)
    (state / "array").write_text("")  # left by the tasks' script
    for k, code in enumerate([3, 0, 0]):
        (state / f"fn.{k}.exit").write_text(f"{code}\n")
    fake_slurm.answer("squeue", returncode=1, stderr="Invalid job id specified\n")
    row = [
        "12", "COMPLETED", "0:0", "alice", "n1", "None", "sq-1:fn:0", str(tmp_path)
    ]  # fmt: skip
    fake_slurm.answer(
        "sacct",
        returncode=1,
        stderr="Slurm accounting storage is disabled\n",
        then=[{"stdout": SEP.join(row) + "\n"}],
    )
    desc = sched.describe("12")
    assert desc is not None and desc.state == AppState.FAILED  # task 0 failed
    got = [(r.id, r.state, r.exit_code) for r in desc.roles_statuses[0].replicas]
    assert got == [(0, AppState.FAILED, 3), (1, AppState.SUCCEEDED, 0), (2, AppState.SUCCEEDED, 0)]


def test_the_tasks_leave_the_array_mark(sched: SlurmScheduler) -> None:
    info = sched.submit_dryrun(_app(2), {"job_dir": "/jobs", "array_parallelism": 1})
    assert ': > "$_state/array"' in info.request.script
