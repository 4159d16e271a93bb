"""The scheduler against scripted Slurm tools: which commands run, with what, and what comes back.

The real cluster tests are in tests/integration (``nox -s integration_slurm``).
"""

from __future__ import annotations

import getpass
import os
import time
from pathlib import Path
from typing import Any

import pytest
from torchx_slurm import logs as slurm_logs
from torchx_slurm.parse import SEP
from torchx_slurm.scheduler import SlurmScheduler, create_scheduler

from torchx.schedulers.contract.api import Stream
from torchx.schedulers.contract.errors import SchedulerError, TransientSchedulerError
from torchx.schedulers.testing.fake_tools import FakeTools
from torchx.specs import AppDef, AppState, Resource, Role
from torchx.specs.errors import InvalidRunConfigException


def _app(replicas: int = 2) -> AppDef:
    role = Role(
        "trainer",
        image="/nonexistent",
        entrypoint="echo",
        args=["hi"],
        num_replicas=replicas,
        resource=Resource(cpu=1, gpu=0, memMB=128),
    )
    return AppDef("train", [role])


def _squeue_line(job: str, state: str, name: str, work_dir: str, nodes: str = "n1") -> str:
    return SEP.join([job, state, "alice", nodes, "None", name, work_dir]) + "\n"


def _sacct_line(job: str, state: str, exit_code: str, name: str, work_dir: str) -> str:
    return SEP.join([job, state, exit_code, "alice", "n1", "None", name, work_dir]) + "\n"


@pytest.fixture
def sched() -> SlurmScheduler:
    return create_scheduler("me")


def test_dryrun_runs_no_slurm_command_but_sinfo(
    fake_slurm: FakeTools, sched: SlurmScheduler
) -> None:
    info = sched.submit_dryrun(_app(1), {"job_dir": "/jobs/x", "partition": "debug"})
    assert "#SBATCH --partition=debug" in str(info)
    assert fake_slurm.all_calls() == []
    # several replicas: sinfo says whether the partition has a node for each, once
    for _ in range(2):
        sched.submit_dryrun(_app(2), {"job_dir": "/jobs/x", "partition": "debug"})
    assert [c["tool"] for c in fake_slurm.all_calls()] == ["sinfo"]


_SINFO = "n1 debug*\nn2 debug*\nn3 debug*\nn4 debug*\nn1 big\ng1 gpu\n"


def test_more_replicas_than_the_partition_has_nodes_is_refused_at_dryrun(
    fake_slurm: FakeTools, sched: SlurmScheduler
) -> None:
    fake_slurm.answer("sinfo", stdout=_SINFO)
    with pytest.raises(InvalidRunConfigException) as err:
        sched.submit_dryrun(_app(5), {"job_dir": "/jobs/x"})
    assert str(err.value) == (
        "app 'train' has 5 replicas, each on a node of its own, but the default partition "
        "has 4 node(s) (sinfo): it would stay PENDING forever. Use at most 4 replicas or "
        "another partition (-cfg partition=...), or submit it anyway with -cfg allow_pending=True"
    )
    with pytest.raises(InvalidRunConfigException, match="partition 'gpu' has 1 node"):
        sched.submit_dryrun(_app(2), {"job_dir": "/jobs/x", "partition": "gpu"})
    # enough nodes; a partition sinfo does not show (sbatch decides); the user insists
    sched.submit_dryrun(_app(4), {"job_dir": "/jobs/x"})
    sched.submit_dryrun(_app(5), {"job_dir": "/jobs/x", "partition": "other"})
    info = sched.submit_dryrun(_app(5), {"job_dir": "/jobs/x", "allow_pending": True})
    assert len(info.request.replicas) == 5
    assert len(fake_slurm.calls("sinfo")) == 1


def test_dryrun_without_slurm_skips_the_node_check(
    sched: SlurmScheduler, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    info = sched.submit_dryrun(_app(5), {"job_dir": "/jobs/x"})
    assert len(info.request.replicas) == 5


def test_schedule_submits_the_script_and_returns_the_job_id(
    fake_slurm: FakeTools, sched: SlurmScheduler, tmp_path: Path
) -> None:
    fake_slurm.answer("sbatch", stdout="1234\n")
    job_dir = tmp_path / "new" / "job"
    info = sched.submit_dryrun(_app(), {"job_dir": str(job_dir)})
    assert sched.schedule(info) == "1234"
    assert fake_slurm.calls("sbatch") == [["--parsable"]]
    assert fake_slurm.stdin("sbatch") == [info.request.script]
    assert job_dir.is_dir()


def test_a_federated_answer_gives_the_job_id(
    fake_slurm: FakeTools, sched: SlurmScheduler, tmp_path: Path
) -> None:
    fake_slurm.answer("sbatch", stdout="77;cluster2\n")
    assert sched.schedule(sched.submit_dryrun(_app(), {"job_dir": str(tmp_path)})) == "77"


def test_a_refused_submit_is_one_line_and_leaves_no_job_dir(
    fake_slurm: FakeTools, sched: SlurmScheduler, tmp_path: Path
) -> None:
    fake_slurm.answer(
        "sbatch",
        stderr="sbatch: error: Batch job submission failed: Invalid partition name specified\n",
        returncode=1,
    )
    job_dir = tmp_path / "job"
    info = sched.submit_dryrun(_app(), {"job_dir": str(job_dir), "partition": "nope"})
    with pytest.raises(SchedulerError) as err:
        sched.schedule(info)
    assert str(err.value) == (
        f"sbatch failed (submit {info.request.name}): sbatch: error: Batch job submission "
        "failed: Invalid partition name specified"
    )
    assert not job_dir.exists()


def test_a_submit_that_times_out_cancels_what_it_may_have_created(
    fake_slurm: FakeTools, sched: SlurmScheduler, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TORCHX_SLURM_TIMEOUT", "0.5")
    fake_slurm.answer("sbatch", stdout="1\n", sleep=5)
    info = sched.submit_dryrun(_app(), {"job_dir": str(tmp_path)})
    start = time.monotonic()
    with pytest.raises(SchedulerError, match=r"did not answer within 0\.5 s") as err:
        sched.schedule(info)
    assert time.monotonic() - start < 4
    assert not isinstance(err.value, TransientSchedulerError)
    assert fake_slurm.calls("scancel") == [
        [f"--name={info.request.name}:trainer:0", f"--user={getpass.getuser()}"]
    ]


def test_describe_a_running_job_is_one_squeue_call(
    fake_slurm: FakeTools, sched: SlurmScheduler, tmp_path: Path
) -> None:
    state = tmp_path / ".torchx-slurm" / "1234"
    state.mkdir(parents=True)
    (state / "trainer.1.exit").write_text("0\n")
    (state / "restarts").write_text("2\n")
    fake_slurm.answer(
        "squeue",
        stdout=_squeue_line("1234+0", "RUNNING", "train-ab:trainer:0", str(tmp_path), "n1")
        + _squeue_line("1234+1", "RUNNING", "train-ab:trainer:1", str(tmp_path), "n2"),
    )
    desc = sched.describe("1234")
    assert desc is not None
    assert fake_slurm.calls("squeue") == [
        [
            "-h",
            "-t",
            "all",
            "-j",
            "1234",
            "-o",
            "%i\x1f%T\x1f%u\x1f%N\x1f%r\x1f%j\x1f%S\x1f%e\x1f%Z",
        ]
    ]
    assert fake_slurm.calls("sacct") == []
    assert desc.app_id == "1234"
    assert desc.state == AppState.RUNNING
    assert desc.name == "train-ab"
    assert desc.num_restarts == 2
    [role] = desc.roles_statuses
    assert role.role == "trainer"
    assert [(r.id, r.state, r.hostname, r.exit_code) for r in role.replicas] == [
        (0, AppState.RUNNING, "n1", None),
        (1, AppState.SUCCEEDED, "n2", 0),
    ]


def _timed_squeue_line(job: str, state: str, start: str, end: str, work_dir: str) -> str:
    return SEP.join([job, state, "alice", "n1", "None", f"t-ab:r:{job[-1]}", start, end, work_dir])


@pytest.mark.parametrize(
    ("state", "start", "end", "want"),
    [
        # a pending job's start is Slurm's expectation, a running one's end its time limit
        ("PENDING", "2030-01-01T10:00:00", "2030-01-01T11:00:00", (None, None)),
        ("RUNNING", "2026-11-25T03:00:00", "2026-11-25T04:00:00", ("2026-11-25T03:00:00", None)),
        (
            "COMPLETED",
            "2026-11-25T03:00:00",
            "2026-11-25T03:05:00",
            ("2026-11-25T03:00:00", "2026-11-25T03:05:00"),
        ),
        ("COMPLETED", "Unknown", "N/A", (None, None)),
    ],
)
def test_times_of_an_app_are_only_those_that_happened(
    fake_slurm: FakeTools,
    sched: SlurmScheduler,
    tmp_path: Path,
    state: str,
    start: str,
    end: str,
    want: tuple[str | None, str | None],
) -> None:
    from datetime import datetime

    line = _timed_squeue_line("77+0", state, start, end, str(tmp_path)) + "\n"
    fake_slurm.answer("squeue", stdout=line, then=[{"stdout": line}])
    desc = sched.describe("77")
    assert desc is not None
    expected = tuple(None if t is None else datetime.fromisoformat(t).timestamp() for t in want)
    assert (desc.start_time, desc.end_time) == expected
    [listed] = sched.list({"list_since": "1h"})
    assert (listed.start_time, listed.end_time) == expected


def test_slurm_commands_print_standard_times(
    fake_slurm: FakeTools, sched: SlurmScheduler, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A user's own SLURM_TIME_FORMAT (relative, or a strftime format) would not parse."""
    monkeypatch.setenv("SLURM_TIME_FORMAT", "relative")
    sched.describe("78")
    calls = [c for c in fake_slurm.all_calls() if c["tool"] in ("squeue", "sacct")]
    assert calls and all(c["env"]["SLURM_TIME_FORMAT"] == "standard" for c in calls)


def test_describe_after_the_queue_asks_sacct(
    fake_slurm: FakeTools, sched: SlurmScheduler, tmp_path: Path
) -> None:
    state = tmp_path / ".torchx-slurm" / "55"
    state.mkdir(parents=True)
    (state / "trainer.0.exit").write_text("3\n")
    fake_slurm.answer(
        "squeue", stderr="slurm_load_jobs error: Invalid job id specified\n", returncode=1
    )
    fake_slurm.answer(
        "sacct",
        stdout=_sacct_line("55+0", "FAILED", "3:0", "t-1:trainer:0", str(tmp_path))
        + _sacct_line("55+1", "FAILED", "0:15", "t-1:trainer:1", str(tmp_path)),
    )
    desc = sched.describe("55")
    assert desc is not None
    assert desc.state == AppState.FAILED
    # replica 1 recorded nothing (here: its file is missing): said, with where it was looked for
    assert desc.msg == (
        f"exit code 3; no exit code recorded for trainer/1 in {state} (the job directory "
        "full, not writable or deleted?)"
    )
    assert [(r.state, r.exit_code) for r in desc.roles_statuses[0].replicas] == [
        (AppState.FAILED, 3),
        (AppState.FAILED, None),
    ]
    [sacct] = fake_slurm.calls("sacct")
    assert sacct[-2:] == ["-j", "55"] and "-c" not in sacct


def test_without_accounting_the_completion_file_is_read(
    fake_slurm: FakeTools, sched: SlurmScheduler, tmp_path: Path
) -> None:
    (tmp_path / ".torchx-slurm" / "9").mkdir(parents=True)  # made by the job's script
    fake_slurm.answer("squeue", returncode=1, stderr="Invalid job id specified\n")
    fake_slurm.answer(
        "sacct",
        returncode=1,
        stderr="Slurm accounting storage is disabled\n",
        then=[{"stdout": _sacct_line("9", "COMPLETED", "0:0", "a-1:echo:0", str(tmp_path))}],
    )
    desc = sched.describe("9")
    assert desc is not None and desc.state == AppState.SUCCEEDED
    first, second = fake_slurm.calls("sacct")
    assert "-c" not in first and "-c" in second
    # the scheduler remembers: the next status goes to the completion file at once
    fake_slurm.answer("squeue", returncode=1, stderr="Invalid job id specified\n")
    fake_slurm.answer("sacct", stdout="")
    assert sched.describe("10") is None
    assert "-c" in fake_slurm.calls("sacct")[-1]


def test_an_unknown_job_is_none(fake_slurm: FakeTools, sched: SlurmScheduler) -> None:
    fake_slurm.answer("squeue", stdout="")
    fake_slurm.answer("sacct", stdout="")
    assert sched.describe("31337") is None
    assert sched.describe("not-a-job-id") is None
    assert sched.exists("31337") is False


def test_a_status_poll_that_times_out_is_transient(
    fake_slurm: FakeTools, sched: SlurmScheduler, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TORCHX_SLURM_TIMEOUT", "0.5")
    fake_slurm.answer("squeue", sleep=5)
    start = time.monotonic()
    with pytest.raises(TransientSchedulerError, match=r"squeue did not answer within 0\.5 s"):
        sched.describe("1")
    assert time.monotonic() - start < 4


def test_a_controller_that_is_down_is_transient(
    fake_slurm: FakeTools, sched: SlurmScheduler
) -> None:
    fake_slurm.answer(
        "squeue",
        returncode=1,
        stderr="slurm_load_jobs error: Unable to contact slurm controller (connect failure)\n",
    )
    with pytest.raises(TransientSchedulerError, match="Unable to contact slurm controller"):
        sched.describe("1")


def test_a_missing_slurm_conf_is_refused_before_any_call(
    fake_slurm: FakeTools, sched: SlurmScheduler, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("SLURM_CONF", str(tmp_path / "nope.conf"))
    with pytest.raises(SchedulerError, match=r"SLURM_CONF=.*nope\.conf does not exist") as err:
        sched.describe("1")
    assert "\n" not in str(err.value)
    assert fake_slurm.all_calls() == []


def test_missing_tools_are_one_clear_line(
    sched: SlurmScheduler, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("SLURM_CONF", raising=False)
    with pytest.raises(SchedulerError, match="Slurm's squeue is not on PATH") as err:
        sched.list()
    assert "\n" not in str(err.value)


def test_list_groups_components_newest_first(fake_slurm: FakeTools, sched: SlurmScheduler) -> None:
    fake_slurm.answer(
        "squeue",
        stdout=_squeue_line("7+1", "RUNNING", "a-1:w:1", "/j")
        + _squeue_line("7+0", "RUNNING", "a-1:w:0", "/j")
        + _squeue_line("12", "COMPLETED", "b-2:echo:0", "/j")
        + _squeue_line("9", "PENDING", "my own job", "/j"),
    )
    apps = sched.list()
    assert [(a.app_id, a.state, a.name) for a in apps] == [
        ("12", AppState.SUCCEEDED, "b-2"),
        ("9", AppState.PENDING, "my own job"),
        ("7", AppState.RUNNING, "a-1"),
    ]
    [argv] = fake_slurm.calls("squeue")
    assert argv[:5] == ["-h", "-t", "all", "-u", getpass.getuser()]


def test_list_is_narrowed_by_the_run_options_given(
    fake_slurm: FakeTools, sched: SlurmScheduler
) -> None:
    fake_slurm.answer("squeue", stdout=_squeue_line("12", "COMPLETED", "b-2:echo:0", "/j"))
    assert [a.app_id for a in sched.list({"partition": "gpu", "qos": "high", "time": "1:00"})] == [
        "12"
    ]
    [argv] = fake_slurm.calls("squeue")
    assert argv[-2:] == ["--partition=gpu", "--qos=high"]  # time says nothing about where


def test_list_holds_an_option_given_to_the_check_a_submission_does(
    fake_slurm: FakeTools, sched: SlurmScheduler
) -> None:
    with pytest.raises(InvalidRunConfigException, match="'partition'='-gpu' cannot be passed"):
        sched.list({"partition": "-gpu"})
    assert fake_slurm.calls("squeue") == []


def test_list_with_the_partition_of_torchxconfig_through_the_runner(
    fake_slurm: FakeTools, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from torchx.runner import get_runner

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / ".torchxconfig").write_text("[slurm]\npartition = debug\naccount = ml\n")
    fake_slurm.answer("squeue", stdout="")
    with get_runner() as runner:
        assert runner.list("slurm") == []
        assert runner.list("slurm", {"partition": "gpu"}) == []
    first, second = fake_slurm.calls("squeue")
    assert first[-2:] == ["--partition=debug", "--account=ml"]
    assert second[-2:] == ["--partition=gpu", "--account=ml"]


def test_cancel_runs_scancel(fake_slurm: FakeTools, sched: SlurmScheduler) -> None:
    fake_slurm.answer("squeue", stdout=_squeue_line("5", "RUNNING", "a-1:w:0", "/j"))
    sched.cancel("5")
    assert fake_slurm.calls("scancel") == [["5"]]


def test_completion_file_replicas_come_from_the_job_dir(
    fake_slurm: FakeTools, sched: SlurmScheduler, tmp_path: Path
) -> None:
    # sacct -c has the leader's record only (real jobcomp/filetxt of a 2-replica job)
    state = tmp_path / ".torchx-slurm" / "48"
    state.mkdir(parents=True)
    (state / "main.0.exit").write_text("0\n")
    (state / "main.1.exit").write_text("0\n")
    fake_slurm.answer("squeue", returncode=1, stderr="Invalid job id specified\n")
    fake_slurm.answer(
        "sacct",
        returncode=1,
        stderr="Slurm accounting storage is disabled\n",
        then=[{"stdout": _sacct_line("48", "COMPLETED", "0:0", "k-1:main:0", str(tmp_path))}],
    )
    desc = sched.describe("48")
    assert desc is not None and desc.state == AppState.SUCCEEDED
    [role] = desc.roles_statuses
    assert [(r.id, r.state, r.exit_code) for r in role.replicas] == [
        (0, AppState.SUCCEEDED, 0),
        (1, AppState.SUCCEEDED, 0),
    ]


def test_replicas_stopped_by_a_cancel_are_cancelled(
    fake_slurm: FakeTools, sched: SlurmScheduler, tmp_path: Path
) -> None:
    state = tmp_path / ".torchx-slurm" / "8"
    state.mkdir(parents=True)
    (state / "w.0.exit").write_text("143\n")
    (state / "w.1.exit").write_text("0\n")
    fake_slurm.answer(
        "squeue",
        stdout=_squeue_line("8+0", "CANCELLED", "a-1:w:0", str(tmp_path))
        + _squeue_line("8+1", "CANCELLED", "a-1:w:1", str(tmp_path)),
    )
    desc = sched.describe("8")
    assert desc is not None and desc.state == AppState.CANCELLED
    assert [(r.state, r.exit_code) for r in desc.roles_statuses[0].replicas] == [
        (AppState.CANCELLED, 143),
        (AppState.SUCCEEDED, 0),
    ]


def test_workspace_is_copied_into_the_job_dir(
    fake_slurm: FakeTools, sched: SlurmScheduler, tmp_path: Path
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "train.py").write_text("print('hi')\n")
    (project / "big.bin").write_text("x")
    (project / ".torchxignore").write_text("*.bin\n")
    job_dir = tmp_path / "jobs" / "run1"
    fake_slurm.answer("sbatch", stdout="99\n")
    app = AppDef("ws", [Role("main", image="ignored", entrypoint="python", args=["train.py"])])
    app.roles[0].resource = Resource(cpu=1, gpu=0, memMB=64)
    assert sched.submit(app, {"job_dir": str(job_dir)}, workspace=str(project)) == "99"
    assert (job_dir / "train.py").read_text() == "print('hi')\n"
    assert not (job_dir / "big.bin").exists()
    [script] = fake_slurm.stdin("sbatch")
    assert f"#SBATCH --chdir={job_dir}" in script
    # the replica runs in the job dir (the role's image is now the job dir)
    [run] = [line for line in script.splitlines() if line.startswith("  _run main 0 ")]
    assert "--chdir" not in run and run.endswith(" -- python train.py; } &")


def test_a_failed_submit_removes_the_workspace_copy(
    fake_slurm: FakeTools, sched: SlurmScheduler, tmp_path: Path
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "train.py").write_text("")
    job_dir = tmp_path / "job"
    fake_slurm.answer("sbatch", returncode=1, stderr="sbatch: error: Invalid account\n")
    app = AppDef("ws", [Role("main", image="x", entrypoint="python", args=["train.py"])])
    app.roles[0].resource = Resource(cpu=1, gpu=0, memMB=64)
    with pytest.raises(SchedulerError, match="Invalid account"):
        sched.submit(app, {"job_dir": str(job_dir)}, workspace=str(project))
    assert not job_dir.exists()


def test_a_dryrun_with_a_workspace_is_the_script_submitted(
    fake_slurm: FakeTools, sched: SlurmScheduler, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the dry run already names the job dir the workspace will be copied into: the
    # Runner's schedule copies it and submits the dry run's own request, not a new one
    from torchx.runner import Runner

    project = tmp_path / "project"
    project.mkdir()
    (project / "train.py").write_text("print('hi')\n")
    job_dir = tmp_path / "jobs" / "run2"
    fake_slurm.answer("sbatch", stdout="77\n")
    app = AppDef("ws", [Role("main", image="x", entrypoint="python", args=["train.py"])])
    app.roles[0].resource = Resource(cpu=1, gpu=0, memMB=64)
    made: list[str] = []
    real = sched._submit_dryrun

    def counted(app: AppDef, cfg: Any) -> Any:
        made.append(app.name)
        return real(app, cfg)

    monkeypatch.setattr(sched, "_submit_dryrun", counted)
    runner = Runner("t", {"slurm": lambda session_name, **kw: sched})
    info = runner.dryrun(app, "slurm", {"job_dir": str(job_dir)}, workspace=str(project))
    assert not job_dir.exists() and info.needs_workspace_build
    assert runner.schedule(info) == "slurm://t/77"
    assert made == ["ws"]  # the request was made once
    assert (job_dir / "train.py").read_text() == "print('hi')\n"
    assert fake_slurm.stdin("sbatch") == [info.request.script]
    assert f"#SBATCH --chdir={job_dir}" in info.request.script


def test_schedule_of_a_dryrun_still_to_build_removes_no_files_on_failure(
    fake_slurm: FakeTools, sched: SlurmScheduler, tmp_path: Path
) -> None:
    # the dry run named the job dir, but nothing was built into it: a failed submit
    # must not take the directory (and files there) for its own copy
    job_dir = tmp_path / "mine"
    job_dir.mkdir()
    (job_dir / "notes.txt").write_text("keep")
    fake_slurm.answer("sbatch", returncode=1, stderr="sbatch: error: Invalid account\n")
    app = AppDef("ws", [Role("main", image="x", entrypoint="python", args=["train.py"])])
    app.roles[0].resource = Resource(cpu=1, gpu=0, memMB=64)
    info = sched.prepare(app, {"job_dir": str(job_dir)}, workspace=str(tmp_path), dryrun=True)
    assert info.app.roles[0].image == str(job_dir)
    with pytest.raises(SchedulerError, match="Invalid account"):
        sched.schedule(info)
    assert (job_dir / "notes.txt").read_text() == "keep"


# -- logs -----------------------------------------------------------------------------------


def _logs_setup(fake_slurm: FakeTools, tmp_path: Path, state: str = "COMPLETED") -> None:
    (tmp_path / "slurm-5-w-1.out").write_text("out 1\nout 2\n")
    (tmp_path / "slurm-5-w-1.err").write_text("err 1\n")
    lines = _squeue_line("5+0", state, "a-1:w:0", str(tmp_path)) + _squeue_line(
        "5+1", state, "a-1:w:1", str(tmp_path)
    )
    fake_slurm.answer("squeue", stdout=lines)


def test_log_iter_streams_and_regex(
    fake_slurm: FakeTools, sched: SlurmScheduler, tmp_path: Path
) -> None:
    _logs_setup(fake_slurm, tmp_path)
    assert list(sched.log_iter("5", "w", 1, streams=Stream.STDOUT)) == ["out 1\n", "out 2\n"]
    assert list(sched.log_iter("5", "w", 1, streams=Stream.STDERR)) == ["err 1\n"]
    assert sorted(sched.log_iter("5", "w", 1)) == ["err 1\n", "out 1\n", "out 2\n"]
    assert list(sched.log_iter("5", "w", 1, regex="2$", streams=Stream.STDOUT)) == ["out 2\n"]
    (tmp_path / "slurm-5-w-0.out").write_text("")
    (tmp_path / "slurm-5-w-0.err").write_text("")
    assert list(sched.log_iter("5", "w", 0)) == []  # replica 0 wrote nothing


def test_log_of_a_replica_without_log_files_says_what_is_missing_and_why(
    fake_slurm: FakeTools, sched: SlurmScheduler, tmp_path: Path
) -> None:
    """An ended job whose replica left no log: never an empty log and exit 0."""
    _logs_setup(fake_slurm, tmp_path, state="FAILED")
    (tmp_path / ".torchx-slurm").mkdir(exist_ok=True)
    (tmp_path / ".torchx-slurm" / "slurm-5.out").write_text(
        "srun: error: Could not open stdout file /gone/slurm-5-w-0.out: No such file or directory\n"
        "srun: error: n1: task 0: Exited with exit code 1\n"
    )
    with pytest.raises(SchedulerError) as err:
        list(sched.log_iter("5", "w", 0))
    logs = tmp_path / ".torchx-slurm" / "5"
    out, err_file = logs / "slurm-5-w-0.out", logs / "slurm-5-w-0.err"
    assert str(err.value) == (
        f"no log of replica w/0 of job 5: {out} and {err_file} are missing; Slurm said: "
        "srun: error: Could not open stdout file /gone/slurm-5-w-0.out: No such file or "
        "directory | srun: error: n1: task 0: Exited with exit code 1"
    )
    # the same errors are the failure's message in status
    desc = sched.describe("5")
    assert desc is not None and "Could not open stdout file" in desc.msg, desc.msg


def test_log_of_a_replica_that_has_not_started_is_empty(
    fake_slurm: FakeTools, sched: SlurmScheduler, tmp_path: Path
) -> None:
    _logs_setup(fake_slurm, tmp_path, state="RUNNING")
    assert list(sched.log_iter("5", "w", 0)) == []


def test_log_iter_names_what_does_not_exist(
    fake_slurm: FakeTools, sched: SlurmScheduler, tmp_path: Path
) -> None:
    _logs_setup(fake_slurm, tmp_path)
    with pytest.raises(ValueError, match="no role 'x'; its roles: w"):
        sched.log_iter("5", "x", 0)
    with pytest.raises(ValueError, match="has no replica 7; it has 0, 1"):
        sched.log_iter("5", "w", 7)


@pytest.fixture
def fast_status(monkeypatch: pytest.MonkeyPatch) -> float:
    """A followed log asks Slurm every 0.1 s instead of every second (quicker tests)."""
    monkeypatch.setattr(slurm_logs, "STATUS_INTERVAL", 0.1)
    return 0.1


def test_log_iter_tails_until_the_job_ends(
    fake_slurm: FakeTools, sched: SlurmScheduler, tmp_path: Path, fast_status: float
) -> None:
    (tmp_path / ".torchx-slurm" / "5").mkdir(parents=True)
    out = tmp_path / ".torchx-slurm" / "5" / "slurm-5-w-0.out"
    # what another user planted in the (shared) job directory is not the log
    (tmp_path / "slurm-5-w-0.out").symlink_to("/etc/hostname")
    running = _squeue_line("5", "RUNNING", "a-1:w:0", str(tmp_path))
    done = _squeue_line("5", "COMPLETED", "a-1:w:0", str(tmp_path))
    fake_slurm.answer(
        "squeue",
        stdout=running,
        then=[{"stdout": running}, {"stdout": running}, {"stdout": done}],
    )
    lines = iter(sched.log_iter("5", "w", 0, should_tail=True, streams=Stream.STDOUT))
    out.write_text("first\n")
    assert next(lines) == "first\n"
    with open(out, "a") as f:
        f.write("second\nno newline")
    assert list(lines) == ["second\n", "no newline\n"]
    assert len(fake_slurm.calls("squeue")) >= 2


def test_log_iter_tails_both_streams(
    fake_slurm: FakeTools, sched: SlurmScheduler, tmp_path: Path, fast_status: float
) -> None:
    # a job of an older torchx-slurm: its logs in the job directory itself
    (tmp_path / "slurm-5-w-0.out").write_text("o1\no2\n")
    (tmp_path / "slurm-5-w-0.err").write_text("e1\n")
    running = _squeue_line("5", "RUNNING", "a-1:w:0", str(tmp_path))
    done = _squeue_line("5", "FAILED", "a-1:w:0", str(tmp_path))
    fake_slurm.answer("squeue", stdout=running, then=[{"stdout": running}, {"stdout": done}])
    lines = list(sched.log_iter("5", "w", 0, should_tail=True))
    assert sorted(lines) == ["e1\n", "o1\n", "o2\n"]
    assert lines.index("o1\n") < lines.index("o2\n")


def test_tailing_asks_slurm_at_most_once_per_interval(
    fake_slurm: FakeTools, sched: SlurmScheduler, tmp_path: Path, fast_status: float
) -> None:
    running = _squeue_line("5", "RUNNING", "a-1:w:0", str(tmp_path))
    done = _squeue_line("5", "COMPLETED", "a-1:w:0", str(tmp_path))
    fake_slurm.answer("squeue", stdout=running, then=[{"stdout": running}] * 8 + [{"stdout": done}])
    (tmp_path / "slurm-5-w-0.out").write_text("")
    start = time.monotonic()
    assert list(sched.log_iter("5", "w", 0, should_tail=True, streams=Stream.STDOUT)) == []
    elapsed = time.monotonic() - start
    calls = len(fake_slurm.calls("squeue"))
    assert calls == 10  # the first describe, then one per interval until COMPLETED
    assert elapsed >= 8 * fast_status


def test_job_dir_is_expanded_like_the_workspace_build_does(
    fake_slurm: FakeTools, sched: SlurmScheduler, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    info = sched.submit_dryrun(_app(), {"job_dir": "~/jobs/a"})
    assert f"#SBATCH --chdir={tmp_path}/jobs/a" in str(info)
    info = sched.submit_dryrun(_app(), {"job_dir": "rel"})
    assert f"#SBATCH --chdir={tmp_path}/rel" in str(info)
    info = sched.submit_dryrun(_app(), {})
    assert f"#SBATCH --chdir={tmp_path}\n" in str(info)


def test_cancel_of_a_job_that_just_ended_is_no_error(
    fake_slurm: FakeTools, sched: SlurmScheduler
) -> None:
    fake_slurm.answer("squeue", stdout=_squeue_line("5", "COMPLETED", "a-1:w:0", "/j"))
    fake_slurm.answer(
        "scancel",
        returncode=1,
        stderr="scancel: error: Kill job error on job id 5: Job/step already completing or completed\n",
    )
    sched.cancel("5")
    assert fake_slurm.calls("scancel") == [["5"]]


def test_cancel_that_slurm_refuses_is_one_line(
    fake_slurm: FakeTools, sched: SlurmScheduler
) -> None:
    fake_slurm.answer("squeue", stdout=_squeue_line("5", "RUNNING", "a-1:w:0", "/j"))
    fake_slurm.answer(
        "scancel",
        returncode=1,
        stderr="scancel: error: Kill job error on job id 5: Access/permission denied\n",
    )
    with pytest.raises(SchedulerError) as err:
        sched.cancel("5")
    assert str(err.value) == (
        "scancel failed (cancel job 5): scancel: error: Kill job error on job id 5: "
        "Access/permission denied"
    )


def test_job_dir_says_what_it_means_here(sched: SlurmScheduler) -> None:
    opt = sched.run_opts().get("job_dir")
    assert opt is not None and opt.opt_type is str
    assert "default: the current directory" in opt.help and "--workspace" in opt.help


def test_a_requeued_job_shows_no_exit_codes_of_the_run_before(
    fake_slurm: FakeTools, sched: SlurmScheduler, tmp_path: Path
) -> None:
    state = tmp_path / ".torchx-slurm" / "3"
    state.mkdir(parents=True)
    (state / "w.0.exit").write_text("1\n")
    (state / "restarts").write_text("1\n")
    fake_slurm.answer("squeue", stdout=_squeue_line("3", "PENDING", "a-1:w:0", str(tmp_path), ""))
    desc = sched.describe("3")
    assert desc is not None and desc.state == AppState.PENDING
    assert desc.num_restarts == 1
    assert [(r.state, r.exit_code) for r in desc.roles_statuses[0].replicas] == [
        (AppState.PENDING, None)
    ]


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to make a file of another user")
def test_a_log_another_user_put_in_the_job_dir_is_never_read(
    fake_slurm: FakeTools, sched: SlurmScheduler, tmp_path: Path
) -> None:
    fake = tmp_path / "slurm-5-w-0.out"
    fake.write_text("forged\n")
    os.chown(fake, 65534, 65534)
    fake_slurm.answer("squeue", stdout=_squeue_line("5", "COMPLETED", "a-1:w:0", str(tmp_path)))
    # the job's own log is missing: said, and the forged one is not read instead
    with pytest.raises(SchedulerError, match="no log of replica w/0 of job 5") as err:
        list(sched.log_iter("5", "w", 0, streams=Stream.STDOUT))
    assert "forged" not in str(err.value)


# -- list: jobs that ended lately, from accounting ------------------------------------------


def test_list_shows_jobs_that_left_the_queue(fake_slurm: FakeTools, sched: SlurmScheduler) -> None:
    fake_slurm.answer("squeue", stdout=_squeue_line("21", "RUNNING", "new-1:w:0", "/j"))
    fake_slurm.answer(
        "sacct",
        stdout=_sacct_line("21", "PENDING", "0:0", "new-1:w:0", "/j")  # squeue knows better
        + _sacct_line("20+0", "COMPLETED", "0:0", "old-2:w:0", "/j")
        + _sacct_line("20+1", "COMPLETED", "0:0", "old-2:w:1", "/j")
        + _sacct_line("19", "FAILED", "3:0", "x-3:echo:0", "/j"),
    )
    apps = sched.list()
    assert [(a.app_id, a.state, a.name) for a in apps] == [
        ("21", AppState.RUNNING, "new-1"),
        ("20", AppState.SUCCEEDED, "old-2"),
        ("19", AppState.FAILED, "x-3"),
    ]
    [argv] = fake_slurm.calls("sacct")
    assert argv[-4:] == ["-u", getpass.getuser(), "-S", "now-1days"]


def test_list_since_bounds_what_accounting_gives(
    fake_slurm: FakeTools, sched: SlurmScheduler
) -> None:
    sched.list({"list_since": "2h", "partition": "gpu", "account": "ml"})
    [argv] = fake_slurm.calls("sacct")
    assert argv[-4:] == ["-S", "now-2hours", "--partition=gpu", "--accounts=ml"]
    sched.list({"list_since": "2026-01-31T08:00"})
    assert fake_slurm.calls("sacct")[-1][-2:] == ["-S", "2026-01-31T08:00"]


def test_a_bad_list_since_is_one_line_before_any_call(
    fake_slurm: FakeTools, sched: SlurmScheduler
) -> None:
    from torchx.specs.errors import InvalidRunConfigException

    with pytest.raises(InvalidRunConfigException) as err:
        sched.list({"list_since": "yesterday"})
    assert str(err.value) == (
        "run option 'list_since'='yesterday' is not a duration or a date: use e.g. 30m, 2h, "
        "7d, 2w or 2026-01-31 or 2026-01-31T08:00"
    )
    assert fake_slurm.all_calls() == []


def test_list_without_accounting_reads_the_completion_file_one_app_per_job(
    fake_slurm: FakeTools, sched: SlurmScheduler
) -> None:
    fake_slurm.answer(
        "sacct",
        returncode=1,
        stderr="sacct: error: Slurm accounting storage is disabled\n",
        # each component of job 30 under its own id, as the completion file has them
        then=[
            {
                "stdout": _sacct_line("30", "COMPLETED", "0:0", "het-1:w:0", "/j")
                + _sacct_line("31", "COMPLETED", "0:0", "het-1:w:1", "/j")
                + _sacct_line("32", "CANCELLED", "0:15", "mine", "/j")
            }
        ],
    )
    apps = sched.list()
    assert [(a.app_id, a.name) for a in apps] == [("32", "mine"), ("30", "het-1")]
    assert "-c" in fake_slurm.calls("sacct")[-1]


def test_replicas_run_where_the_app_is_submitted_from(
    sched: SlurmScheduler, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # with job_dir elsewhere (as in .torchxconfig), the command line's relative paths
    # still name files of the submit directory, as with sbatch itself
    submit = tmp_path / "project"
    submit.mkdir()
    monkeypatch.chdir(submit)
    app = AppDef("t", [Role("main", image="ignored", entrypoint="python", args=["a/train.py"])])
    info = sched.submit_dryrun(app, {"job_dir": str(tmp_path / "jobs")})
    script = info.request.script
    assert f"#SBATCH --chdir={tmp_path / 'jobs'}" in script
    [run] = [line for line in script.splitlines() if line.startswith("  _run main 0 ")]
    assert f"--chdir={submit}" in run and run.endswith(" python a/train.py; } &"), run
    assert [r.cwd for r in info.request.replicas] == [str(submit)]


def test_a_workspace_copy_leaves_out_job_directories_and_logs(
    fake_slurm: FakeTools, sched: SlurmScheduler, tmp_path: Path
) -> None:
    project = tmp_path / "project"
    (project / "src").mkdir(parents=True)
    (project / "src" / "train.py").write_text("")
    (project / "slurm-12.out").write_text("old batch log\n")
    (project / "slurm-12-main-0.err").write_text("old replica log\n")
    (project / ".torchx-slurm" / "12").mkdir(parents=True)  # jobs that ran in it
    (project / "runs" / "old" / ".torchx-slurm").mkdir(parents=True)  # an older job_dir
    (project / "runs" / "old" / "result.txt").write_text("")
    (project / "runs" / "notes.txt").write_text("kept\n")
    (project / "slurm-notes.out").write_text("not a job's log\n")
    fake_slurm.answer("sbatch", stdout="99\n")
    app = AppDef("ws", [Role("main", image="x", entrypoint="python", args=["src/train.py"])])
    app.roles[0].resource = Resource(cpu=1, gpu=0, memMB=64)
    job_dir = tmp_path / "jobs" / "run1"
    sched.submit(app, {"job_dir": str(job_dir)}, workspace=str(project))
    copied = sorted(str(p.relative_to(job_dir)) for p in job_dir.rglob("*"))
    assert copied == [
        ".torchx-slurm",  # this job's own (its kept AppDef)
        ".torchx-slurm/99",
        ".torchx-slurm/99/appdef.json",
        "runs",
        "runs/notes.txt",
        "slurm-notes.out",
        "src",
        "src/train.py",
    ]


def test_a_dryrun_with_a_workspace_runs_the_replicas_in_the_copy(
    sched: SlurmScheduler, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the job dir does not exist yet on the dry run, whose request is the one submitted:
    # the replicas must run in the copy it will hold, not in the submit directory
    project = tmp_path / "project"
    project.mkdir()
    monkeypatch.chdir(project)
    job_dir = tmp_path / "jobs" / "run3"
    app = AppDef("ws", [Role("main", image="x", entrypoint="python", args=["train.py"])])
    app.roles[0].resource = Resource(cpu=1, gpu=0, memMB=64)
    info = sched.prepare(app, {"job_dir": str(job_dir)}, workspace=str(project), dryrun=True)
    assert not job_dir.exists()
    assert [r.cwd for r in info.request.replicas] == [str(job_dir)]
    script = info.request.script
    [run] = [line for line in script.splitlines() if line.startswith("  _run main 0 ")]
    assert "--chdir" not in run, run


# What Slurm 22.05's squeue prints with munged stopped on the submit host (captured).
_MUNGE_DOWN = (
    "squeue: error: If munged is up, restart with --num-threads=10\n"
    'squeue: error: Munge encode failed: Failed to access "/run/munge/munge.socket.2": '
    "No such file or directory (Did you start munged?)\n"
    "squeue: error: slurm_send_node_msg: auth_g_create: REQUEST_JOB_INFO_SINGLE has "
    "authentication error\n"
    "slurm_load_jobs error: Protocol authentication error\n"
)


def test_munge_down_is_a_transient_error_not_no_such_job(
    fake_slurm: FakeTools, sched: SlurmScheduler
) -> None:
    fake_slurm.answer("squeue", stderr=_MUNGE_DOWN, returncode=1)
    fake_slurm.answer("sacct", stdout="")
    with pytest.raises(TransientSchedulerError) as err:
        sched.describe("384")
    assert str(err.value) == (
        'squeue failed (status of job 384): squeue: error: Munge encode failed: Failed to access "'
        '/run/munge/munge.socket.2": No such file or directory (Did you start munged?)'
    )
    assert fake_slurm.calls("sacct") == []


def test_a_slurm_conf_that_does_not_parse_is_its_parse_error(
    fake_slurm: FakeTools, sched: SlurmScheduler
) -> None:
    stderr = (
        'squeue: error: Parse error in file /x/slurm.conf line 1: "this is not"\n'
        "squeue: error: ClusterName needs to be specified\n"
        "squeue: fatal: Unable to process configuration file\n"
    )
    fake_slurm.answer("squeue", stderr=stderr, returncode=1)
    with pytest.raises(SchedulerError, match=r"Parse error in file /x/slurm\.conf line 1") as err:
        sched.describe("5")
    assert not isinstance(err.value, TransientSchedulerError)


def test_accounting_down_after_the_queue_is_transient(
    fake_slurm: FakeTools, sched: SlurmScheduler
) -> None:
    fake_slurm.answer(
        "squeue", stderr="slurm_load_jobs error: Invalid job id specified\n", returncode=1
    )
    fake_slurm.answer(
        "sacct",
        returncode=1,
        stderr="sacct: error: slurm_persist_conn_open_without_init: failed to open persistent "
        "connection to host:localhost:16819: Connection refused\n"
        "sacct: error: Problem talking to the database: Connection refused\n",
    )
    with pytest.raises(TransientSchedulerError, match="persistent connection"):
        sched.describe("7")


def test_a_job_accounting_has_not_received_yet_is_not_gone(
    fake_slurm: FakeTools, sched: SlurmScheduler
) -> None:
    """slurmdbd restarted: the job's end waits in the controller's queue for it."""
    fake_slurm.answer(
        "squeue", stderr="slurm_load_jobs error: Invalid job id specified\n", returncode=1
    )
    fake_slurm.answer("sacct", stdout="")
    fake_slurm.answer("sdiag", stdout="Agent queue size:     0\nDBD Agent queue size: 3\n")
    with pytest.raises(TransientSchedulerError, match=r"3 record.* for accounting"):
        sched.describe("8")
    # once accounting has caught up, a job no one knows is none
    fake_slurm.answer(
        "squeue", stderr="slurm_load_jobs error: Invalid job id specified\n", returncode=1
    )
    fake_slurm.answer("sacct", stdout="")
    fake_slurm.answer("sdiag", stdout="DBD Agent queue size: 0\n")
    assert sched.describe("8") is None


def test_other_failures_of_sacct_are_errors_not_no_such_job(
    fake_slurm: FakeTools, sched: SlurmScheduler
) -> None:
    fake_slurm.answer(
        "squeue", stderr="slurm_load_jobs error: Invalid job id specified\n", returncode=1
    )
    fake_slurm.answer("sacct", stderr="sacct: error: Invalid user id\n", returncode=1)
    with pytest.raises(SchedulerError, match=r"sacct failed .*Invalid user id"):
        sched.describe("9")


def test_a_cancelled_pending_job_shows_no_pending_reason(
    fake_slurm: FakeTools, sched: SlurmScheduler, tmp_path: Path
) -> None:
    """squeue keeps the reason it waited for ("Resources"): meaningless once cancelled."""
    line = SEP.join(["12", "CANCELLED", "alice", "", "Resources", "a-1:w:0", str(tmp_path)])
    fake_slurm.answer("squeue", stdout=line + "\n")
    desc = sched.describe("12")
    assert desc is not None and desc.state == AppState.CANCELLED
    assert desc.msg == ""
    pending = SEP.join(["12", "PENDING", "alice", "", "Resources", "a-1:w:0", str(tmp_path)])
    fake_slurm.answer("squeue", stdout=pending + "\n")
    desc = sched.describe("12")
    assert desc is not None and desc.msg == "Resources"


def test_every_replica_is_given_the_apps_handle_in_torchx_job_id(sched: SlurmScheduler) -> None:
    info = sched.submit_dryrun(_app(2), {"job_dir": "/jobs/x"})
    # the job's id is Slurm's, known when it runs: the script exports it (test_script.py)
    assert [r.env["TORCHX_JOB_ID"] for r in info.request.replicas] == [
        "slurm://me/\x00app_id\x00"
    ] * 2
