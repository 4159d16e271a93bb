"""The Scheduler contract's default behaviour, with a small in-memory scheduler."""

from __future__ import annotations

import doctest
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pytest

import torchx.schedulers.contract.api as api_module
from torchx.schedulers.contract.api import (
    DescribeAppResponse,
    ListAppResponse,
    Scheduler,
    Stream,
    StructuredOpts,
    filter_regex,
    split_lines,
    split_lines_iterator,
)
from torchx.schedulers.contract.errors import SchedulerError
from torchx.specs import (
    AppDef,
    AppDryRunInfo,
    AppState,
    CfgVal,
    InvalidRunConfigException,
    Role,
    Workspace,
    resource,
    runopts,
)
from torchx.specs.structured_opts import opt
from torchx.workspace.api import WorkspaceMixin


class MemoryScheduler(Scheduler[Mapping[str, CfgVal]]):  # upstream style: Scheduler[T] works
    def __init__(self) -> None:
        super().__init__("mem", "test")
        self.apps: dict[str, AppDef] = {}
        self.cancelled: list[str] = []

    def _run_opts(self) -> runopts:
        opts = runopts()
        opts.add("queue", type_=str, help="queue", required=True)
        return opts

    def _submit_dryrun(self, app: AppDef, cfg: Mapping[str, CfgVal]) -> AppDryRunInfo[Any]:
        app.roles[0].args.append("--mutated-copy")
        return AppDryRunInfo({"app": app, "queue": cfg["queue"]}, repr)

    def schedule(self, dryrun_info: AppDryRunInfo[Any]) -> str:
        app_id = f"app{len(self.apps)}"
        self.apps[app_id] = dryrun_info.request["app"]
        return app_id

    def describe(self, app_id: str) -> DescribeAppResponse | None:
        if app_id not in self.apps:
            return None
        return DescribeAppResponse(app_id=app_id, state=AppState.RUNNING)

    def list(self, cfg: Mapping[str, CfgVal] | None = None) -> list[ListAppResponse]:
        return [ListAppResponse(app_id=a, state=AppState.RUNNING) for a in self.apps]

    def _cancel_existing(self, app_id: str) -> None:
        self.cancelled.append(app_id)


class Tagger(Role):
    def pre_proc(self, scheduler: str, dryrun_info: AppDryRunInfo[Any]) -> AppDryRunInfo[Any]:
        dryrun_info.request["tagged_by"] = scheduler
        return dryrun_info


def _app() -> AppDef:
    return AppDef("a", [Tagger("r", "img", entrypoint="echo", args=["x"], resource=resource())])


def test_submit_dryrun_resolves_cfg_copies_app_and_runs_pre_proc() -> None:
    sched = MemoryScheduler()
    app = _app()
    info = sched.submit_dryrun(app, {"queue": "q"})
    assert app.roles[0].args == ["x"], "the caller's AppDef must not change"
    assert info.request["app"].roles[0].args == ["x", "--mutated-copy"]
    assert info.request["tagged_by"] == "mem"
    assert info.cfg == {"queue": "q"} and info.scheduler == "mem" and info.app is not app
    assert info.app.roles[0].args == ["x", "--mutated-copy"]
    with pytest.raises(InvalidRunConfigException, match="required run option 'queue'"):
        sched.submit_dryrun(app, {})


def test_submit_exists_cancel_delete() -> None:
    sched = MemoryScheduler()
    app_id = sched.submit(_app(), {"queue": "q"})
    assert sched.exists(app_id) and not sched.exists("nope")
    sched.cancel("nope")
    sched.cancel(app_id)
    sched.delete(app_id)
    assert sched.cancelled == [app_id, app_id]
    # a workspace is ignored by a scheduler that cannot build one (as by the Runner)
    ignored = sched.submit(_app(), {"queue": "q"}, workspace=".")
    assert sched.apps[ignored].roles[0].workspace is None
    with pytest.raises(NotImplementedError, match="'mem' does not support log"):
        sched.log_iter(app_id, "r")


def test_validate_rejects_roles_without_resource() -> None:
    sched = MemoryScheduler()
    sched._validate(_app(), "mem", {})
    with pytest.raises(ValueError, match="role 'r' has no resource"):
        sched._validate(AppDef("a", [Role("r", "img")]), "mem", {})


def test_workspace_mixin_adds_opts_and_builds() -> None:
    built: list[str] = []

    class WsScheduler(MemoryScheduler, WorkspaceMixin[Mapping[str, CfgVal]]):
        def workspace_opts(self) -> runopts:
            opts = runopts()
            opts.add("image_repo", type_=str, help="where images go")
            return opts

        def build_workspace_and_update_role(self, role: Role, workspace: Any, cfg: Any) -> None:
            built.append(str(workspace))
            role.image = "built"

    sched = WsScheduler()
    assert [name for name, _ in sched.run_opts()] == ["queue", "image_repo"]
    app = _app()
    app_id = sched.submit(app, {"queue": "q"}, workspace="/src")
    assert built == ["/src"] and sched.apps[app_id].roles[0].image == "built"
    assert app.roles[0].image == "img" and app.roles[0].workspace is None


class Recording(MemoryScheduler, WorkspaceMixin[None]):
    """Records the order in which prepare() calls the hooks."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[str] = []

    def _pre_build_validate(self, app: AppDef, scheduler: str, cfg: Mapping[str, CfgVal]) -> None:
        self.calls.append(f"pre_build_validate {scheduler} {cfg['queue']}")

    def build_workspace_and_update_role(
        self, role: Role, workspace: Workspace, cfg: Mapping[str, CfgVal]
    ) -> None:
        self.calls.append(f"build {workspace}")
        role.image = "built"

    def _validate(self, app: AppDef, scheduler: str, cfg: Mapping[str, CfgVal]) -> None:
        self.calls.append(f"validate {app.roles[0].image}")

    def _submit_dryrun(self, app: AppDef, cfg: Mapping[str, CfgVal]) -> AppDryRunInfo[Any]:
        self.calls.append("submit_dryrun")
        return super()._submit_dryrun(app, cfg)


def test_prepare_runs_the_one_pipeline_in_order() -> None:
    sched = Recording()
    app = _app()
    info = sched.prepare(app, {"queue": "q"}, workspace="/src")
    assert sched.calls == [
        "pre_build_validate mem q",
        "build /src",
        "validate built",
        "submit_dryrun",
    ]
    assert not info.needs_workspace_build
    assert info.app.roles[0].image == "built" and info.app.roles[0].workspace == Workspace(
        {"/src": ""}
    )
    assert app.roles[0].image == "img" and app.roles[0].workspace is None, "caller's app unchanged"
    assert info.cfg == {"queue": "q"} and info.scheduler == "mem"


def test_prepare_never_builds_on_a_dryrun() -> None:
    sched = Recording()
    info = sched.prepare(_app(), {"queue": "q"}, workspace="/src", dryrun=True)
    assert sched.calls == ["pre_build_validate mem q", "validate img", "submit_dryrun"]
    assert info.needs_workspace_build
    # the info is complete: scheduling it later builds first (what Runner.schedule does)
    built = sched.prepare(info.app, info.cfg)
    assert built.app.roles[0].image == "built" and not built.needs_workspace_build


def test_submit_is_schedule_of_prepare() -> None:
    sched = Recording()
    app_id = sched.submit(_app(), {"queue": "q"}, workspace="/src")
    assert sched.calls[-1] == "submit_dryrun" and "build /src" in sched.calls
    assert sched.apps[app_id].roles[0].image == "built"


def test_prepare_rejects_unknown_and_mistyped_options_in_one_line() -> None:
    sched = MemoryScheduler()
    with pytest.raises(InvalidRunConfigException) as e:
        sched.prepare(_app(), {"queue": "q", "queu": "x"})
    assert str(e.value).startswith("scheduler 'mem': ") and "queue" in str(e.value)
    assert "\n" not in str(e.value)
    with pytest.raises(InvalidRunConfigException, match="scheduler 'mem': run option 'queue'"):
        sched.prepare(_app(), {"queue": 3})


def test_structured_opts_read_from_the_mapping() -> None:
    """The path the contract documents: MyOpts.from_cfg(cfg) inside _submit_dryrun."""
    from dataclasses import dataclass

    @dataclass
    class Opts(StructuredOpts):
        queue: str = "default"
        priority: int = 0

    class Typed(MemoryScheduler):
        def _run_opts(self) -> runopts:
            return Opts.as_runopts()

        def _submit_dryrun(self, app: AppDef, cfg: Mapping[str, CfgVal]) -> AppDryRunInfo[Any]:
            opts = Opts.from_cfg(cfg)
            return AppDryRunInfo({"app": app, "queue": opts.queue, "p": opts.priority}, repr)

    info = Typed().prepare(_app(), {"priority": 2})
    assert info.request["queue"] == "default" and info.request["p"] == 2


def test_errors_are_reexported_from_the_cheap_module() -> None:
    import torchx.schedulers.contract.errors as errors

    assert SchedulerError is errors.SchedulerError
    assert api_module.TransientSchedulerError is errors.TransientSchedulerError
    assert issubclass(errors.TransientSchedulerError, errors.SchedulerError)


def test_responses() -> None:
    assert DescribeAppResponse().state == AppState.UNSUBMITTED
    a = ListAppResponse("x", AppState.RUNNING)
    assert len({a, ListAppResponse("x", AppState.RUNNING)}) == 1
    assert Stream("stderr") is Stream.STDERR


def test_line_helpers() -> None:
    assert split_lines("a\nb\n\nc") == ["a\n", "b\n", "\n", "c"]
    assert split_lines("") == [] and split_lines("a\n") == ["a\n"]
    assert split_lines("a\x0bb\n") == ["a\x0bb\n"]  # only \n splits
    assert list(split_lines_iterator(["a\nb", "c\n"])) == ["a\n", "b", "c\n"]
    assert list(filter_regex("^b", ["a", "bb", "cb"])) == ["bb"]


def test_structured_opts_is_re_exported_and_doctests_pass() -> None:
    from torchx.specs import StructuredOpts as Spec

    assert StructuredOpts is Spec
    result = doctest.testmod(api_module)
    assert result.attempted > 0 and result.failed == 0


def test_reference_structured_opts_example_runs_here() -> None:
    """Reference 003's ``MyOpts`` example, through ``torchx.schedulers.contract.api``."""
    from dataclasses import dataclass

    @dataclass
    class MyOpts(StructuredOpts):
        cluster_name: str
        """Name of the cluster to submit to."""

        num_retries: int = 3
        """Number of retry attempts."""

    opts = MyOpts.as_runopts()
    cluster = opts.get("cluster_name")
    assert cluster is not None and cluster.is_required
    assert cluster.help == "Name of the cluster to submit to."
    assert opts.get("clusterName") is cluster  # the camelCase alias
    typed = MyOpts.from_cfg(opts.resolve({"clusterName": "c1"}))
    assert (typed.cluster_name, typed.num_retries) == ("c1", 3)


# -- opts_class: the options declared once, resolved once into one typed value -------------


def _check_queue(value: str) -> str:
    if value.startswith("-"):
        raise InvalidRunConfigException(f"run option 'queue'={value!r} may not start with '-'")
    return value.lower()


@dataclass(frozen=True, kw_only=True)
class QueueOpts(StructuredOpts):
    queue: str = opt(required=True, help="queue", check=_check_queue)
    priority: int = opt(0, help="priority")


class DeclaredScheduler(MemoryScheduler, WorkspaceMixin[Mapping[str, CfgVal]]):
    opts_class = QueueOpts

    def __init__(self) -> None:
        super().__init__()
        self.got: list[Mapping[str, CfgVal]] = []
        self.built: list[str] = []

    def _run_opts(self) -> runopts:
        return Scheduler._run_opts(self)  # the contract's default: opts_class's options

    def _submit_dryrun(self, app: AppDef, cfg: Mapping[str, CfgVal]) -> AppDryRunInfo[Any]:
        self.got.append(cfg)
        return super()._submit_dryrun(app, cfg)

    def build_workspace_and_update_role(self, role: Role, workspace: Any, cfg: Any) -> None:
        self.built.append(str(workspace))


def test_run_opts_come_from_opts_class() -> None:
    assert DeclaredScheduler().run_opts() == QueueOpts.as_runopts()


def test_prepare_resolves_once_into_the_opts_class_instance() -> None:
    sched = DeclaredScheduler()
    info = sched.prepare(_app(), {"queue": "GPU"})
    (typed,) = sched.got
    assert isinstance(typed, QueueOpts) and typed.queue == "gpu" and typed.priority == 0
    # the dry run keeps the resolved options as the plain dict they were given as
    assert info.cfg == {"queue": "GPU", "priority": 0} and type(info.cfg) is dict
    # a plain resolved dict (a direct caller of submit_dryrun) is read the same way
    sched.submit_dryrun(_app(), {"queue": "CPU"})
    assert sched.got[-1] == QueueOpts(queue="cpu")


def test_a_check_refuses_before_the_workspace_is_built() -> None:
    sched = DeclaredScheduler()
    with pytest.raises(InvalidRunConfigException, match="'queue'='-x' may not start with '-'"):
        sched.submit(_app(), {"queue": "-x"}, workspace="/src")
    assert sched.built == [] and sched.got == []
