"""The scheduler against scripted LSF tools: what it runs, writes and reads back."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from torchx_lsf.parse import SEP
from torchx_lsf.scheduler import LsfScheduler, create_scheduler

from torchx.schedulers.contract.api import Stream
from torchx.schedulers.contract.errors import SchedulerError, TransientSchedulerError
from torchx.schedulers.testing.fake_tools import FakeTools
from torchx.specs import AppDef, AppState, Resource, Role


def _app(n: int = 2, env: dict[str, str] | None = None) -> AppDef:
    role = Role(
        "main",
        image="/tmp",
        entrypoint="echo",
        args=["hi"],
        num_replicas=n,
        env=env or {},
        resource=Resource(cpu=1, gpu=0, memMB=64),
    )
    return AppDef("demo", [role], metadata={"k": "v"})


def _submitted(n: int, first: int = 100) -> list[dict[str, object]]:
    return [
        {"stdout": f"Job <{first + i}> is submitted to default queue <normal>.\n"} for i in range(n)
    ]


def _line(job_id: int, state: str, app_id: str, k: int, app_dir: str, code: str = "-") -> str:
    start = "-" if state == "PEND" else "Nov 25 06:40"
    end = "Nov 25 06:41" if state in ("DONE", "EXIT") else "-"
    fields = [str(job_id), state, app_id, code, "hostA", f"{app_id}-main-{k}", start, end, app_dir]
    return SEP.join(fields)


@pytest.fixture
def sched() -> LsfScheduler:
    return create_scheduler("s")


def _submit(sched: LsfScheduler, fake: FakeTools, tmp_path: Path, app: AppDef) -> tuple[str, str]:
    replies = _submitted(app.roles[0].num_replicas)
    fake.answer("bsub", **replies[0], then=replies[1:])  # type: ignore[arg-type]
    jobs = tmp_path / "jobs"
    info = sched.submit_dryrun(app, {"jobdir": str(jobs)})
    app_id = sched.schedule(info)
    return app_id, str(jobs / ".torchx-lsf" / app_id)


def test_schedule_writes_private_files_then_bsubs_rank0_first(
    sched: LsfScheduler, fake_lsf: FakeTools, tmp_path: Path
) -> None:
    app_id, app_dir = _submit(sched, fake_lsf, tmp_path, _app(env={"TOKEN": "s3cret"}))
    assert app_id.startswith("demo-")
    calls = fake_lsf.calls("bsub")
    assert [c[c.index("-J") + 1] for c in calls] == [f"{app_id}-main-0", f"{app_id}-main-1"]
    assert "-w" not in calls[0] and calls[1][-2:] == ["-w", f"started({app_id}-main-0)"]
    assert all("s3cret" not in " ".join(c) for c in calls)
    assert all("s3cret" not in s for s in fake_lsf.stdin("bsub"))
    assert fake_lsf.stdin("bsub")[0].endswith(f"exec /bin/bash {app_dir}/main-0.sh\n")
    st = os.lstat(app_dir)
    assert stat.S_IMODE(st.st_mode) == 0o700
    names = sorted(os.listdir(app_dir))
    assert names == ["appdef.json", "main-0.env", "main-0.sh", "main-1.env", "main-1.sh"]
    for name in names:
        assert stat.S_IMODE(os.lstat(os.path.join(app_dir, name)).st_mode) == 0o600
    assert "TOKEN=s3cret\n" in Path(app_dir, "main-0.env").read_text()


def test_a_failed_bsub_kills_what_was_submitted_and_removes_the_files(
    sched: LsfScheduler, fake_lsf: FakeTools, tmp_path: Path
) -> None:
    fake_lsf.answer(
        "bsub",
        stdout="Job <7> is submitted to default queue <normal>.\n",
        then=[{"stderr": "bad: queue <x> does not exist. Job not submitted.\n", "returncode": 255}],
    )
    jobs = tmp_path / "jobs"
    info = sched.submit_dryrun(_app(), {"jobdir": str(jobs)})
    with pytest.raises(SchedulerError, match=r"does not exist\. Job not submitted.*1 job") as e:
        sched.schedule(info)
    assert "\n" not in str(e.value)
    assert fake_lsf.calls("bkill") == [["7"]]
    assert not jobs.exists()  # made by this submit: removed again


def test_a_timed_out_bsub_kills_its_job_by_name(
    sched: LsfScheduler, fake_lsf: FakeTools, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TORCHX_LSF_TIMEOUT", "0.5")
    fake_lsf.answer("bsub", sleep=3)
    (tmp_path / "jobs").mkdir()
    info = sched.submit_dryrun(_app(1), {"jobdir": str(tmp_path / "jobs")})
    with pytest.raises(SchedulerError, match=r"did not answer within 0\.5 s"):
        sched.schedule(info)
    [kill] = fake_lsf.calls("bkill")
    assert kill[:1] == ["-J"] and kill[1].endswith("-main-0")
    assert os.listdir(tmp_path / "jobs" / ".torchx-lsf") == []


def test_a_jobdir_others_can_write_is_refused(
    sched: LsfScheduler, fake_lsf: FakeTools, tmp_path: Path
) -> None:
    jobs = tmp_path / "jobs"
    (jobs / ".torchx-lsf").mkdir(parents=True)
    os.chmod(jobs / ".torchx-lsf", 0o777)
    info = sched.submit_dryrun(_app(1), {"jobdir": str(jobs)})
    with pytest.raises(SchedulerError, match="writable by others"):
        sched.schedule(info)
    assert fake_lsf.calls("bsub") == []
    os.rmdir(jobs / ".torchx-lsf")
    os.symlink(tmp_path, jobs / ".torchx-lsf")
    with pytest.raises(SchedulerError, match="is a link"):
        sched.schedule(info)


def test_describe_reads_states_exit_codes_and_the_appdef(
    sched: LsfScheduler, fake_lsf: FakeTools, tmp_path: Path
) -> None:
    app_id, app_dir = _submit(sched, fake_lsf, tmp_path, _app())
    fake_lsf.answer(
        "bjobs",
        stdout=_line(100, "DONE", app_id, 0, app_dir)
        + "\n"
        + _line(101, "EXIT", app_id, 1, app_dir, "3")
        + "\n",
    )
    desc = sched.describe(app_id)
    assert desc is not None and desc.state == AppState.FAILED
    [rs] = desc.roles_statuses
    assert [(r.id, r.state, r.exit_code, r.hostname) for r in rs.replicas] == [
        (0, AppState.SUCCEEDED, 0, "hostA"),
        (1, AppState.FAILED, 3, "hostA"),
    ]
    assert "main/1 (LSF job 101, exit code 3)" in desc.msg
    assert desc.name == "demo" and desc.metadata == {"k": "v"} and desc.roles[0].name == "main"
    assert desc.run_options["jobdir"] == str(tmp_path / "jobs")  # kept beside the AppDef
    assert desc.end_time is not None and desc.start_time is not None
    assert desc.end_time - desc.start_time == 60
    assert fake_lsf.calls("bjobs")[-1] == [
        "-noheader", "-a", "-P", app_id, "-o",
        "jobid stat proj_name exit_code exec_host job_name start_time finish_time output_dir delimiter='|'",
    ]  # fmt: skip


def test_describe_of_an_unknown_app_is_none(sched: LsfScheduler, fake_lsf: FakeTools) -> None:
    fake_lsf.answer("bjobs", stderr="No job found\n", returncode=255)
    assert sched.describe("nope-abc") is None
    assert sched.describe("../etc") is None  # never asked
    assert len(fake_lsf.calls("bjobs")) == 1


def test_lsf_down_is_transient(sched: LsfScheduler, fake_lsf: FakeTools) -> None:
    fake_lsf.answer("bjobs", stderr="LSF is down. Please wait ...\n", returncode=255)
    with pytest.raises(TransientSchedulerError, match="LSF is down"):
        sched.describe("demo-x")


def test_no_bjobs_on_path_is_one_line(
    sched: LsfScheduler, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(SchedulerError, match="LSF's bjobs is not on PATH"):
        sched.describe("demo-x")


def test_cancel_marks_then_kills_the_live_jobs(
    sched: LsfScheduler, fake_lsf: FakeTools, tmp_path: Path
) -> None:
    app_id, app_dir = _submit(sched, fake_lsf, tmp_path, _app())
    live = _line(100, "RUN", app_id, 0, app_dir) + "\n" + _line(101, "PEND", app_id, 1, app_dir)
    ended = (
        _line(100, "EXIT", app_id, 0, app_dir, "130") + "\n"
        + _line(101, "EXIT", app_id, 1, app_dir)
    )  # fmt: skip
    fake_lsf.answer("bjobs", stdout=live, then=[{"stdout": live}, {"stdout": ended}])
    fake_lsf.answer(
        "bkill", stdout="Job <100> is being terminated\nJob <101> is being terminated\n"
    )
    sched.cancel(app_id)
    assert fake_lsf.calls("bkill") == [["100", "101"]]
    assert os.path.exists(os.path.join(app_dir, "cancelled"))
    desc = sched.describe(app_id)
    assert desc is not None and desc.state == AppState.CANCELLED
    assert {r.state for r in desc.roles_statuses[0].replicas} == {AppState.CANCELLED}


def test_cancel_of_an_ended_app_leaves_it_as_it_ended(
    sched: LsfScheduler, fake_lsf: FakeTools, tmp_path: Path
) -> None:
    app_id, app_dir = _submit(sched, fake_lsf, tmp_path, _app())
    failed = (
        _line(100, "DONE", app_id, 0, app_dir) + "\n" + _line(101, "EXIT", app_id, 1, app_dir, "3")
    )
    fake_lsf.answer("bjobs", stdout=failed, then=[{"stdout": failed}] * 3)
    sched.cancel(app_id)
    assert fake_lsf.calls("bkill") == []
    assert not os.path.exists(os.path.join(app_dir, "cancelled"))
    desc = sched.describe(app_id)
    assert desc is not None and desc.state == AppState.FAILED


def test_delete_of_a_failed_app_removes_its_directory_and_the_app(
    sched: LsfScheduler, fake_lsf: FakeTools, tmp_path: Path
) -> None:
    app_id, app_dir = _submit(sched, fake_lsf, tmp_path, _app(env={"TOKEN": "s3cret"}))
    failed = (
        _line(100, "DONE", app_id, 0, app_dir) + "\n" + _line(101, "EXIT", app_id, 1, app_dir, "3")
    )
    fake_lsf.answer("bjobs", stdout=failed, then=[{"stdout": failed}] * 9)
    sched.delete(app_id)
    assert fake_lsf.calls("bkill") == []
    assert not os.path.lexists(app_dir)  # its env files (secrets) with it
    assert os.path.isdir(os.path.dirname(app_dir))
    # LSF still shows the jobs (until its CLEAN_PERIOD): the app is gone all the same
    assert sched.describe(app_id) is None and not sched.exists(app_id)
    assert app_id not in [a.app_id for a in sched.list()]
    sched.delete(app_id)  # again: nothing left to do


def test_delete_of_a_live_app_removes_its_directory_once_its_jobs_ended(
    sched: LsfScheduler, fake_lsf: FakeTools, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("torchx_lsf.scheduler.DELETE_POLL", 0.01)
    app_id, app_dir = _submit(sched, fake_lsf, tmp_path, _app())
    live = _line(100, "RUN", app_id, 0, app_dir) + "\n" + _line(101, "RUN", app_id, 1, app_dir)
    ended = (
        _line(100, "EXIT", app_id, 0, app_dir, "130") + "\n"
        + _line(101, "EXIT", app_id, 1, app_dir, "130")
    )  # fmt: skip
    # exists, cancel, then the waits: still running twice, then ended
    fake_lsf.answer(
        "bjobs",
        stdout=live,
        then=[{"stdout": live}] * 3 + [{"stdout": ended}] * 2,
    )
    fake_lsf.answer("bkill", stdout="Job <100> is being terminated\n")
    sched.delete(app_id)
    assert fake_lsf.calls("bkill") == [["100", "101"]]
    assert len(fake_lsf.calls("bjobs")) == 5
    assert not os.path.lexists(app_dir)


def test_delete_keeps_the_directory_of_jobs_that_do_not_end(
    sched: LsfScheduler, fake_lsf: FakeTools, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("torchx_lsf.scheduler.DELETE_POLL", 0.01)
    monkeypatch.setenv("TORCHX_LSF_TIMEOUT", "0.3")
    app_id, app_dir = _submit(sched, fake_lsf, tmp_path, _app(1))
    live = _line(100, "RUN", app_id, 0, app_dir)
    fake_lsf.answer("bjobs", stdout=live, then=[{"stdout": live}] * 200)
    fake_lsf.answer("bkill", stdout="Job <100> is being terminated\n")
    with pytest.raises(
        SchedulerError, match=r"have not ended within 0\.3 s: its directory is kept"
    ) as e:
        sched.delete(app_id)
    assert "\n" not in str(e.value)
    assert os.path.isdir(app_dir)


def test_a_cancelled_app_still_stopping_is_running(
    sched: LsfScheduler, fake_lsf: FakeTools, tmp_path: Path
) -> None:
    app_id, app_dir = _submit(sched, fake_lsf, tmp_path, _app())
    Path(app_dir, "cancelled").touch()
    fake_lsf.answer(
        "bjobs",
        stdout=_line(100, "EXIT", app_id, 0, app_dir, "130")
        + "\n"
        + _line(101, "RUN", app_id, 1, app_dir),
    )
    desc = sched.describe(app_id)
    assert desc is not None and desc.state == AppState.RUNNING


def test_list_groups_jobs_by_project(sched: LsfScheduler, fake_lsf: FakeTools) -> None:
    fake_lsf.answer(
        "bjobs",
        stdout="\n".join(
            [
                _line(10, "DONE", "a-1", 0, "-"),
                _line(11, "RUN", "a-1", 1, "-"),
                _line(12, "DONE", "b-2", 0, "-"),
                SEP.join(["13", "RUN", "default", "-", "h", "myjob", "Nov 25 06:40", "-", "-"]),
            ]
        ),
    )
    apps = sched.list()
    assert [(a.app_id, a.state) for a in apps] == [
        ("b-2", AppState.SUCCEEDED),
        ("a-1", AppState.RUNNING),
    ]
    assert fake_lsf.calls("bjobs") == [
        [
            "-noheader",
            "-a",
            "-o",
            "jobid stat proj_name exit_code exec_host job_name start_time finish_time output_dir delimiter='|'",
        ]
    ]


def test_list_names_each_app_by_its_appdef(
    sched: LsfScheduler, fake_lsf: FakeTools, tmp_path: Path
) -> None:
    app = _app(1)
    app.name = "My Trainer"  # the app id is made lower case: the name is the AppDef's
    app_id, app_dir = _submit(sched, fake_lsf, tmp_path, app)
    fake_lsf.answer("bjobs", stdout=_line(100, "RUN", app_id, 0, app_dir))
    [listed] = sched.list()
    assert (listed.app_id, listed.name, listed.state) == (app_id, "My Trainer", AppState.RUNNING)


def test_log_iter_reads_the_replica_files(
    sched: LsfScheduler, fake_lsf: FakeTools, tmp_path: Path
) -> None:
    app_id, app_dir = _submit(sched, fake_lsf, tmp_path, _app())
    Path(app_dir, "main-1.out").write_text("a\nb\n")
    Path(app_dir, "main-1.err").write_text("e\n")
    done = _line(100, "DONE", app_id, 0, app_dir) + "\n" + _line(101, "DONE", app_id, 1, app_dir)
    fake_lsf.answer("bjobs", stdout=done, then=[{"stdout": done}] * 5)
    assert list(sched.log_iter(app_id, "main", 1, streams=Stream.STDOUT)) == ["a\n", "b\n"]
    assert list(sched.log_iter(app_id, "main", 1, streams=Stream.STDERR)) == ["e\n"]
    assert sorted(sched.log_iter(app_id, "main", 1)) == ["a\n", "b\n", "e\n"]
    assert list(sched.log_iter(app_id, "main", 1, regex="^b")) == ["b\n"]
    with pytest.raises(SchedulerError, match=r"main-0\.out and .*main-0\.err are missing"):
        list(sched.log_iter(app_id, "main", 0))
    with pytest.raises(ValueError, match="has no role 'x'"):
        sched.log_iter(app_id, "x", 0)


def test_a_failed_replica_still_ending_the_others_reads_its_recorded_exit(
    sched: LsfScheduler, fake_lsf: FakeTools, tmp_path: Path
) -> None:
    """Its script recorded the exit code, then kills the others: LSF still says RUN."""
    app_id, app_dir = _submit(sched, fake_lsf, tmp_path, _app())
    Path(app_dir, "main-1.exit").write_text("7\n")
    fake_lsf.answer(
        "bjobs",
        stdout=_line(100, "EXIT", app_id, 0, app_dir, "130")
        + "\n"
        + _line(101, "RUN", app_id, 1, app_dir),
    )
    desc = sched.describe(app_id)
    assert desc is not None and desc.state == AppState.FAILED
    reps = desc.roles_statuses[0].replicas
    assert [(r.state, r.exit_code) for r in reps] == [
        (AppState.FAILED, 130),
        (AppState.FAILED, 7),
    ]


def test_retries_are_declared_and_the_restarts_counted(
    sched: LsfScheduler, fake_lsf: FakeTools, tmp_path: Path
) -> None:
    """The app's scripts count its reruns in ``restarts``; describe says how many, and a
    replica whose program exited with the requeue value reads its own code."""
    from torchx.schedulers.contract.capabilities import Capability, missing

    assert Capability.RETRIES not in missing(sched)
    app_id, app_dir = _submit(sched, fake_lsf, tmp_path, _app())
    Path(app_dir, "restarts").write_text("2\n")
    Path(app_dir, "main-1.exit").write_text("75\n")
    fake_lsf.answer(
        "bjobs",
        stdout=_line(100, "EXIT", app_id, 0, app_dir, "130")
        + "\n"
        + _line(101, "EXIT", app_id, 1, app_dir, "1"),
    )
    desc = sched.describe(app_id)
    assert desc is not None and desc.state == AppState.FAILED and desc.num_restarts == 2
    reps = desc.roles_statuses[0].replicas
    assert [(r.state, r.exit_code) for r in reps] == [
        (AppState.FAILED, 130),
        (AppState.FAILED, 75),
    ]
    Path(app_dir, "restarts").write_text("junk\n")
    desc = sched.describe(app_id)
    assert desc is not None and desc.num_restarts == 0


def test_every_replica_is_given_the_apps_handle_in_torchx_job_id(
    sched: LsfScheduler, tmp_path: Path
) -> None:
    info = sched.submit_dryrun(_app(2), {"jobdir": str(tmp_path / "jobs")})
    handle = f"lsf://s/{info.request.app_id}"
    assert [r.env["TORCHX_JOB_ID"] for r in info.request.replicas] == [handle, handle]
