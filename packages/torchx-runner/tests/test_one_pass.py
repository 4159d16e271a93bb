"""One pass: what a dry run made is what is submitted; nothing is prepared or resolved twice.

Counted on the real local scheduler (a subclass that counts ``_submit_dryrun`` and
records what ``schedule`` got) and on ``runopts.resolve``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from torchx.runner import Runner
from torchx.schedulers.contract.api import DescribeAppResponse, ListAppResponse, Scheduler
from torchx.schedulers.local.scheduler import LocalScheduler
from torchx.specs import AppDef, AppDryRunInfo, AppState, CfgVal, Role, Workspace, resource
from torchx.specs.handles import parse_app_handle
from torchx.specs.options import runopts
from torchx.workspace.api import WorkspaceMixin
from torchx.workspace.dir_workspace import DirWorkspaceMixin


class Counting(LocalScheduler):
    """The local scheduler, counting the requests it makes and keeping what it scheduled."""

    def __init__(self, session_name: str, state_dir: str) -> None:
        super().__init__(session_name, state_dir=state_dir)
        self.dryruns = 0
        self.pre_build_validates = 0
        self.scheduled: list[AppDryRunInfo[Any]] = []

    def _submit_dryrun(self, app: AppDef, cfg: Mapping[str, CfgVal]) -> AppDryRunInfo[Any]:
        self.dryruns += 1
        return super()._submit_dryrun(app, cfg)

    def _pre_build_validate(self, app: AppDef, scheduler: str, cfg: Mapping[str, CfgVal]) -> None:
        self.pre_build_validates += 1

    def schedule(self, dryrun_info: AppDryRunInfo[Any]) -> str:
        self.scheduled.append(dryrun_info)
        return super().schedule(dryrun_info)


class CountingWithWorkspace(Counting, WorkspaceMixin[None]):
    """Builds a workspace by pointing the role at a directory (its image) that exists."""

    def __init__(self, session_name: str, state_dir: str, built: str) -> None:
        super().__init__(session_name, state_dir)
        self.built = built
        self.builds = 0

    def build_workspace_and_update_role(
        self, role: Role, workspace: Workspace, cfg: Mapping[str, CfgVal]
    ) -> None:
        self.builds += 1
        role.image = self.built


@pytest.fixture
def resolves(monkeypatch: pytest.MonkeyPatch) -> list[Mapping[str, CfgVal]]:
    """Every ``runopts.resolve`` call's cfg, in order."""
    calls: list[Mapping[str, CfgVal]] = []
    real = runopts.resolve

    def counted(self: runopts, cfg: Mapping[str, CfgVal], **kwargs: Any) -> Any:
        calls.append(dict(cfg))
        return real(self, cfg, **kwargs)

    monkeypatch.setattr(runopts, "resolve", counted)
    return calls


@pytest.fixture
def local(tmp_path: Path) -> Iterator[tuple[Runner, Counting]]:
    sched = Counting("test", str(tmp_path / "state"))
    runner = Runner("test", {"local": lambda session_name, **kw: sched})
    yield runner, sched
    for app in sched.list():
        sched.delete(app.app_id, force=True)


def _app(name: str = "one") -> AppDef:
    role = Role(
        "main",
        image="",
        entrypoint="true",
        args=["${app_id}"],
        num_replicas=2,
        resource=resource(cpu=1, gpu=0, memMB=64),
    )
    return AppDef(name, roles=[role])


def _wait(runner: Runner, handle: str) -> None:
    status = runner.wait(handle, wait_interval=0.05, timeout=60)
    assert status is not None and status.state == AppState.SUCCEEDED, status


def test_schedule_of_a_dryrun_submits_that_request_without_preparing_again(
    local: tuple[Runner, Counting], resolves: list[Mapping[str, CfgVal]]
) -> None:
    runner, sched = local
    info = runner.dryrun(_app(), "local", cfg={"grace_period": 1.0})
    assert (sched.dryruns, sched.pre_build_validates, len(resolves)) == (1, 1, 1)
    handle = runner.schedule(info)
    assert (sched.dryruns, sched.pre_build_validates, len(resolves)) == (1, 1, 1)
    assert sched.scheduled == [info]  # the dry run's own info, request and all
    assert sched.scheduled[0].request is info.request
    assert parse_app_handle(handle).app_id == info.request.app_id
    # the macro was filled in with that same id
    assert info.request.roles[0].replicas[0].args == [info.request.app_id]
    _wait(runner, handle)


def test_the_schema_is_built_once_and_the_options_checked_once_into_one_typed_value(
    local: tuple[Runner, Counting], monkeypatch: pytest.MonkeyPatch
) -> None:
    from torchx.schedulers.local.options import LocalOpts

    runner, _ = local
    built: list[int] = []
    real_run_opts = LocalScheduler.run_opts
    monkeypatch.setattr(Counting, "run_opts", lambda self: built.append(1) or real_run_opts(self))
    checked: list[Mapping[str, CfgVal]] = []
    real_from_cfg = LocalOpts.from_cfg.__func__  # type: ignore[attr-defined]

    def from_cfg(cls: type[LocalOpts], cfg: Mapping[str, CfgVal], prefix: str = "") -> Any:
        checked.append(cfg)
        return real_from_cfg(cls, cfg, prefix)

    monkeypatch.setattr(LocalOpts, "from_cfg", classmethod(from_cfg))
    got: list[Mapping[str, CfgVal]] = []
    real_submit_dryrun = Counting._submit_dryrun
    monkeypatch.setattr(
        Counting,
        "_submit_dryrun",
        lambda self, app, cfg: got.append(cfg) or real_submit_dryrun(self, app, cfg),
    )
    # what `torchx run -cfg` parses with, then merges, resolves, checks and dry-runs
    cfg = runner.scheduler_run_opts("local").cfg_from_str("grace_period=1", strict=True)
    runner.dryrun(_app(), "local", cfg=cfg)
    runner.list("local")
    assert len(built) == 1 and len(checked) == 1
    assert got == [LocalOpts(grace_period=1.0)] and isinstance(got[0], LocalOpts)


def test_run_makes_the_request_once_and_resolves_the_options_once(
    local: tuple[Runner, Counting], resolves: list[Mapping[str, CfgVal]]
) -> None:
    runner, sched = local
    handle = runner.run(_app(), "local", cfg={"grace_period": 1.0})
    assert (sched.dryruns, sched.pre_build_validates, len(resolves)) == (1, 1, 1)
    assert parse_app_handle(handle).app_id == sched.scheduled[0].request.app_id
    _wait(runner, handle)


def test_a_dryrun_with_a_workspace_is_built_from_its_resolved_options(
    tmp_path: Path, resolves: list[Mapping[str, CfgVal]]
) -> None:
    # The request names what was built, so it is made again after the build; the run
    # options are not resolved again and the checks before the build do not run again.
    built = tmp_path / "built"
    built.mkdir()
    sched = CountingWithWorkspace("test", str(tmp_path / "state"), str(built))
    runner = Runner("test", {"local": lambda session_name, **kw: sched})
    try:
        info = runner.dryrun(_app(), "local", cfg={"grace_period": 1.0}, workspace=str(tmp_path))
        assert info.needs_workspace_build and sched.builds == 0
        handle = runner.schedule(info)
        assert (sched.builds, sched.pre_build_validates, len(resolves)) == (1, 1, 1)
        assert sched.dryruns == 2
        submitted = sched.scheduled[0]
        assert submitted.cfg == info.cfg and not submitted.needs_workspace_build
        assert submitted.request.roles[0].replicas[0].cwd == str(built)
        assert parse_app_handle(handle).app_id == submitted.request.app_id
        # the caller's dry run is as it was: unbuilt, still to build
        assert info.needs_workspace_build and info.app.roles[0].image == ""
        _wait(runner, handle)
    finally:
        for app in sched.list():
            sched.delete(app.app_id, force=True)


def test_build_workspaces_of_an_info_with_nothing_to_build_is_that_info(
    local: tuple[Runner, Counting],
) -> None:
    runner, sched = local
    info = runner.dryrun(_app(), "local")
    assert sched.build_workspaces_of(info) is info and sched.dryruns == 1


class JobDirScheduler(DirWorkspaceMixin, Scheduler[Mapping[str, CfgVal]]):
    """A scheduler with the directory workspace whose request names the role's directory."""

    def __init__(self) -> None:
        super().__init__("jobdir", "test")
        self.dryruns = 0
        self.scheduled: list[AppDryRunInfo[Any]] = []

    def _submit_dryrun(self, app: AppDef, cfg: Mapping[str, CfgVal]) -> AppDryRunInfo[Any]:
        self.dryruns += 1
        return AppDryRunInfo({"id": f"{app.name}-{self.dryruns}", "cwd": app.roles[0].image}, str)

    def schedule(self, dryrun_info: AppDryRunInfo[Any]) -> str:
        self.scheduled.append(dryrun_info)
        return str(dryrun_info.request["id"])

    def describe(self, app_id: str) -> DescribeAppResponse | None:
        return None

    def list(self, cfg: Mapping[str, CfgVal] | None = None) -> list[ListAppResponse]:
        return []

    def _cancel_existing(self, app_id: str) -> None:
        pass


def test_a_dryrun_with_a_planned_workspace_is_submitted_as_it_was_made(
    tmp_path: Path, resolves: list[Mapping[str, CfgVal]]
) -> None:
    # the directory workspace plans its job_dir on the dry run: schedule copies the
    # workspace there and submits the dry run's request (same app id), made once
    project = tmp_path / "project"
    project.mkdir()
    (project / "train.py").write_text("")
    job_dir = tmp_path / "job"
    sched = JobDirScheduler()
    runner = Runner("test", {"jobdir": lambda session_name, **kw: sched})
    info = runner.dryrun(_app(), "jobdir", cfg={"job_dir": str(job_dir)}, workspace=str(project))
    assert not job_dir.exists() and info.needs_workspace_build
    assert info.request == {"id": "one-1", "cwd": str(job_dir)}
    handle = runner.schedule(info)
    assert (job_dir / "train.py").exists()
    assert (sched.dryruns, len(resolves)) == (1, 1)
    assert sched.scheduled[0].request is info.request
    assert parse_app_handle(handle).app_id == "one-1"
    assert sched.scheduled[0].app.roles[0].image == str(job_dir)
