"""The Runner against a small scheduler defined here.

``FakeScheduler`` keeps its apps in a JSON file (so a fresh Runner, or a fresh
process, finds them by handle), records every call, walks each app through a
scripted list of states (one step per ``describe``), and can be told to fail
transiently a number of times or to fail while submitting.
"""

from __future__ import annotations

import copy
import importlib.util
import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterable, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from torchx.runner import (
    AppWaitTimeout,
    Backoff,
    InvalidAppError,
    RetriesExhaustedError,
    Runner,
    UnknownAppError,
    UnknownSchedulerError,
    get_runner,
)
from torchx.runner.api import ENV_TORCHX_PARENT_RUN_ID
from torchx.schedulers.contract.api import (
    DescribeAppResponse,
    ListAppResponse,
    Scheduler,
    Stream,
    filter_regex,
)
from torchx.schedulers.contract.errors import SchedulerError, TransientSchedulerError
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
from torchx.specs.errors import SpecError
from torchx.specs.handles import ENV_TORCHX_JOB_ID
from torchx.specs.secrets import masked_run_options
from torchx.workspace.api import WorkspaceMixin

HERE = Path(__file__).resolve()


class FakeScheduler(Scheduler[Mapping[str, CfgVal]]):
    """An in-process scheduler whose apps live in ``state_file`` (JSON)."""

    def __init__(
        self,
        session_name: str,
        state_file: str,
        script: Iterable[str] = ("PENDING", "RUNNING", "SUCCEEDED"),
        required: bool = False,
        **kwargs: Any,
    ) -> None:
        super().__init__("fake", session_name)
        self.state_file = Path(state_file)
        self.script = list(script)
        self.required = required
        self.kwargs = kwargs
        self.calls: list[tuple[str, tuple[Any, ...]]] = []
        #: what describe says the replicas run with beyond their roles' env
        self.run_env: dict[str, str] = {}
        self.transient: dict[str, list[BaseException]] = {}
        self.fail_schedule: BaseException | None = None
        self.bad_app_id: str | None = None
        self.closed = 0

    # -- storage
    def _load(self) -> dict[str, Any]:
        if not self.state_file.exists():
            return {}
        data: dict[str, Any] = json.loads(self.state_file.read_text())
        return data

    def _save(self, data: dict[str, Any]) -> None:
        self.state_file.write_text(json.dumps(data))

    def _maybe_fail(self, method: str) -> None:
        pending = self.transient.get(method)
        if pending:
            raise pending.pop(0)

    def close(self) -> None:
        self.closed += 1

    # -- contract
    def _run_opts(self) -> runopts:
        opts = runopts()
        opts.add("queue", type_=str, default="default", help="the queue")
        opts.add("priority", type_=int, default=0, help="job priority")
        opts.add("tags", type_=list[str], default=[], help="job tags")
        if self.required:
            opts.add("cluster_id", type_=int, required=True, help="the cluster")
        return opts

    def _submit_dryrun(self, app: AppDef, cfg: Mapping[str, CfgVal]) -> AppDryRunInfo[Any]:
        self.calls.append(("submit_dryrun", (app.name,)))
        app.roles[0].args.append("--scheduler-mutated-its-copy")
        request = {
            "name": app.name,
            "roles": [
                {
                    "name": r.name,
                    "image": r.image,
                    "entrypoint": r.entrypoint,
                    "args": list(r.args),
                    "env": dict(r.env),
                    "replicas": r.num_replicas,
                }
                for r in app.roles
            ],
            "cfg": dict(cfg),
        }
        return AppDryRunInfo(request, lambda r: json.dumps(r, sort_keys=True))

    def schedule(self, dryrun_info: AppDryRunInfo[Any]) -> str:
        self.calls.append(("schedule", (dryrun_info.request["name"],)))
        data = self._load()
        app_id = self.bad_app_id or f"{dryrun_info.request['name']}-{len(data)}"
        data[app_id] = {"step": 0, "request": dryrun_info.request, "logs": ["a\n", "b\n"]}
        self._save(data)
        if self.fail_schedule is not None:
            del data[app_id]  # the contract: remove what was created, then raise
            self._save(data)
            raise self.fail_schedule
        return app_id

    def describe(self, app_id: str) -> DescribeAppResponse | None:
        self.calls.append(("describe", (app_id,)))
        self._maybe_fail("describe")
        data = self._load()
        rec = data.get(app_id)
        if rec is None:
            return None
        state = rec.get("state") or self.script[min(rec["step"], len(self.script) - 1)]
        rec["step"] += 1
        self._save(data)
        roles = [
            Role(
                name=r["name"],
                image=r["image"],
                entrypoint=r["entrypoint"],
                args=r["args"],
                # as a plugin's kept AppDef (appdef_json.encode): without the handle the
                # submit pipeline gave every replica
                env={k: v for k, v in r["env"].items() if k != ENV_TORCHX_JOB_ID},
            )
            for r in rec["request"]["roles"]
        ]
        return DescribeAppResponse(
            app_id=app_id,
            state=AppState[state],
            msg=f"step {rec['step']}",
            ui_url="http://ui/" + app_id,
            roles=roles if rec["request"].get("keep_roles", True) else [],
            metadata={"k": "v"},
            env=dict(self.run_env),
            # as a plugin keeps them (appdef_json.encode): masked when written
            run_options=masked_run_options(rec["request"]["cfg"]),
        )

    def list(self, cfg: Mapping[str, CfgVal] | None = None) -> list[ListAppResponse]:
        self.calls.append(("list", (cfg,)))
        self._maybe_fail("list")
        return [
            ListAppResponse(app_id=k, state=AppState.RUNNING, name=v["request"]["name"])
            for k, v in self._load().items()
        ]

    def _cancel_existing(self, app_id: str) -> None:
        self.calls.append(("cancel", (app_id,)))
        self._maybe_fail("cancel")
        data = self._load()
        data[app_id]["state"] = "CANCELLED"
        self._save(data)

    def _delete_existing(self, app_id: str) -> None:
        self.calls.append(("delete", (app_id,)))
        data = self._load()
        del data[app_id]
        self._save(data)

    def log_iter(
        self,
        app_id: str,
        role_name: str,
        k: int = 0,
        regex: str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        should_tail: bool = False,
        streams: Stream | None = None,
    ) -> Iterable[str]:
        kwargs = {"regex": regex, "since": since, "until": until, "should_tail": should_tail}
        self.calls.append(("log_iter", (app_id, role_name, k, kwargs)))
        self._maybe_fail("log_iter")
        lines = self._load()[app_id]["logs"]
        return iter(filter_regex(regex, lines) if regex else lines)


class FakeWorkspaceScheduler(FakeScheduler, WorkspaceMixin[Mapping[str, CfgVal]]):
    """Builds a workspace by renaming the image (and records each build)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.builds: list[tuple[str, dict[str, str]]] = []

    def build_workspace_and_update_role(
        self, role: Role, workspace: Workspace, cfg: Mapping[str, CfgVal]
    ) -> None:
        self.builds.append((role.name, dict(workspace.projects)))
        role.image = f"built/{role.image}"


class Factories:
    """Scheduler factories that remember what they created."""

    def __init__(self, state_file: Path, cls: type[FakeScheduler] = FakeScheduler) -> None:
        self.state_file = state_file
        self.cls = cls
        self.created: list[FakeScheduler] = []

    def make(self, **fixed: Any) -> Any:
        def factory(session_name: str, **kwargs: Any) -> FakeScheduler:
            sched = self.cls(session_name, str(self.state_file), **{**fixed, **kwargs})
            self.created.append(sched)
            return sched

        return factory


FAST = Backoff(attempts=4, initial=0.001, multiplier=2.0, max_delay=0.01, jitter=0.0, deadline=None)


def app(name: str = "trainer", replicas: int = 2) -> AppDef:
    return AppDef(
        name=name,
        roles=[
            Role(
                name="train",
                image="img:1",
                entrypoint="python",
                args=["-m", "train"],
                env={"A": "1"},
                num_replicas=replicas,
                resource=resource(cpu=1, gpu=0, memMB=512),
            )
        ],
        metadata={"team": "ml"},
    )


@pytest.fixture
def factories(tmp_path: Path) -> Factories:
    return Factories(tmp_path / "apps.json")


@pytest.fixture
def runner(factories: Factories) -> Iterable[Runner]:
    with Runner(
        "sess",
        {
            "fake": factories.make(),
            "fake_alias": factories.make(),
            "needs": factories.make(required=True),
        },
        backoff=FAST,
    ) as r:
        yield r


def fake_clock(runner: Runner) -> list[float]:
    """Replace the runner's clock and sleep by a fake: sleeping advances the clock."""
    sleeps: list[float] = []
    now = [0.0]

    def sleep(s: float) -> None:
        sleeps.append(s)
        now[0] += s

    runner._sleep = sleep
    runner._clock = lambda: now[0]
    return sleeps


# --- get_runner and schedulers -------------------------------------------------------


def test_get_runner_is_lazy_in_a_fresh_process() -> None:
    code = textwrap.dedent(
        """
        import json, sys
        from torchx.runner import get_runner
        r = get_runner()
        backends = r.scheduler_backends()
        print(json.dumps({
            "backends": backends,
            "session": r.session_name,
            "local_imported": "torchx.schedulers.local.scheduler" in sys.modules,
            "sched_api_imported": "torchx.schedulers.contract.api" in sys.modules,
        }))
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=os.environ
    )
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert "local" in result["backends"]
    assert result["session"] == "torchx"
    assert result["local_imported"] is False
    assert result["sched_api_imported"] is False


def test_get_runner_passes_scheduler_params_and_name(tmp_path: Path) -> None:
    from torchx.specs.hookspecs import hookimpl
    from torchx.specs.plugins import register_builtin, reset_registry

    created: list[tuple[str, dict[str, Any]]] = []

    def create(session_name: str, **kwargs: Any) -> FakeScheduler:
        created.append((session_name, kwargs))
        return FakeScheduler(session_name, str(tmp_path / "s.json"))

    class Plugin:
        @hookimpl
        def torchx_schedulers(self) -> Mapping[str, Any]:
            return {"zzfake": f"{__name__}:_NOT_USED"}

    reset_registry()
    try:
        register_builtin(Plugin())
        with get_runner("mine", region="eu") as r:
            assert "zzfake" in r.scheduler_backends()
            r._factories["zzfake"] = create  # the registry entry names no real module
            r.scheduler_run_opts("zzfake")
        assert created == [("mine", {"region": "eu"})]
    finally:
        reset_registry()


def test_unknown_scheduler_names_nearest_and_installed(runner: Runner) -> None:
    with pytest.raises(UnknownSchedulerError) as e:
        runner.dryrun(app(), "fak")
    msg = str(e.value)
    assert "unknown scheduler 'fak'" in msg
    assert "did you mean 'fake'" in msg
    assert "installed: fake, fake_alias, needs" in msg
    assert isinstance(e.value, KeyError) and isinstance(e.value, SpecError)


def test_schedulers_are_created_lazily_once_and_closed(factories: Factories) -> None:
    r = Runner("s", {"fake": factories.make(), "other": factories.make()}, backoff=FAST)
    assert factories.created == []
    assert r.scheduler_backends() == ["fake", "other"]
    assert factories.created == []
    r.scheduler_run_opts("fake")
    r.dryrun(app(), "fake")
    assert len(factories.created) == 1
    assert factories.created[0].session_name == "s"
    with r:
        pass
    assert factories.created[0].closed == 1
    r.close()  # idempotent: nothing left to close
    assert factories.created[0].closed == 1
    assert set(r.run_opts()) == {"fake", "other"}  # a new instance per scheduler after close
    assert len(factories.created) == 3


def test_close_survives_a_failing_scheduler_close(factories: Factories) -> None:
    r = Runner("s", {"fake": factories.make()})
    sched = r._scheduler("fake")

    def boom() -> None:
        raise RuntimeError("boom")

    sched.close = boom  # type: ignore[method-assign]
    r.close()  # does not raise
    assert r._schedulers == {}


def test_invalid_session_name() -> None:
    with pytest.raises(SpecError, match="session name 'a/b'"):
        Runner("a/b", {})


# --- run and follow ------------------------------------------------------------------


def test_run_status_describe_list_logs_cancel_delete(runner: Runner, factories: Factories) -> None:
    handle = runner.run(app(), "fake", cfg={"queue": "gpu", "tags": ["x"]})
    assert handle == "fake://sess/trainer-0"
    sched = factories.created[0]
    assert [c[0] for c in sched.calls] == ["submit_dryrun", "schedule"]

    status = runner.status(handle)
    assert status is not None
    assert status.state == AppState.PENDING
    assert status.ui_url == "http://ui/trainer-0"
    assert status.msg == "step 1"

    described = runner.describe(handle)
    assert described is not None
    assert described.name == "trainer-0"
    assert described.roles[0].entrypoint == "python"
    assert described.metadata == {"k": "v"}

    listed = runner.list("fake")
    assert [(a.app_id, a.app_handle) for a in listed] == [("trainer-0", handle)]

    lines = list(runner.log_lines(handle, "train", k=1, regex="b", should_tail=True))
    assert lines == ["b\n"]
    log_call = next(c for c in sched.calls if c[0] == "log_iter")
    assert log_call[1][:3] == ("trainer-0", "train", 1)
    assert log_call[1][3]["should_tail"] is True

    runner.cancel(handle)
    status = runner.status(handle)
    assert status is not None and status.state == AppState.CANCELLED

    runner.delete(handle)
    assert runner.status(handle) is None
    assert runner.describe(handle) is None
    runner.cancel(handle)  # an unknown app: nothing to do
    assert ("cancel", ("trainer-0",)) in sched.calls


def test_request_carries_resolved_cfg(runner: Runner) -> None:
    info = runner.dryrun(app(), "fake", cfg={"priority": 3})
    assert info.request["cfg"] == {"queue": "default", "priority": 3, "tags": []}
    assert info.scheduler == "fake"


def test_alias_name_is_kept_in_the_handle(runner: Runner) -> None:
    info = runner.dryrun(app(), "fake_alias")
    assert info.scheduler == "fake_alias"
    assert runner.schedule(info).startswith("fake_alias://sess/")


def test_handle_works_from_a_fresh_runner(factories: Factories) -> None:
    with Runner("first", {"fake": factories.make()}) as r1:
        handle = r1.run(app(), "fake")
    with Runner("another-session", {"fake": factories.make()}) as r2:
        status = r2.status(handle)
        assert status is not None and status.state == AppState.PENDING
        described = r2.describe(handle)
        assert described is not None and described.roles[0].name == "train"


def test_handle_works_from_a_fresh_process(factories: Factories, tmp_path: Path) -> None:
    with Runner("torchx", {"fake": factories.make()}) as r:
        handle = r.run(app(), "fake")
    code = textwrap.dedent(
        f"""
        import importlib.util, json, sys
        spec = importlib.util.spec_from_file_location("runner_test_mod", {str(HERE)!r})
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        from torchx.runner import Runner
        f = mod.Factories(mod.Path({str(factories.state_file)!r}))
        with Runner("torchx", {{"fake": f.make()}}) as r:
            s1 = r.status({handle!r})
            s2 = r.wait({handle!r}, wait_interval=0.01, timeout=30)
            lines = list(r.log_lines({handle!r}, "train"))
        print(json.dumps([s1.state.name, s2.state.name, lines]))
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=os.environ, cwd=tmp_path
    )
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout.strip().splitlines()[-1]) == [
        "PENDING",
        "SUCCEEDED",
        ["a\n", "b\n"],
    ]


def test_describe_falls_back_to_the_submitted_app(runner: Runner, factories: Factories) -> None:
    info = runner.dryrun(app(), "fake")
    info.request["keep_roles"] = False  # this backend does not keep roles
    handle = runner.schedule(info)
    described = runner.describe(handle)
    assert described is not None
    assert described == info._app and described is not info._app  # what was submitted


def test_log_lines_of_unknown_app(runner: Runner) -> None:
    with pytest.raises(UnknownAppError, match=r"unknown app fake://sess/nope"):
        runner.log_lines("fake://sess/nope", "train")


def test_status_and_app_ask_the_scheduler_once(runner: Runner, factories: Factories) -> None:
    handle = runner.run(app(), "fake")
    sched = factories.created[0]
    sched.calls.clear()
    both = runner.status_and_app(handle)
    assert both is not None
    status, described = both
    assert status.state == AppState.PENDING and status.msg == "step 1"
    assert described.name == "trainer-0" and described.roles[0].entrypoint == "python"
    assert [c[0] for c in sched.calls] == ["describe"]
    runner.delete(handle)
    assert runner.status_and_app(handle) is None


def test_the_run_options_come_from_the_same_one_question(
    runner: Runner, factories: Factories
) -> None:
    handle = runner.run(app(), "fake", {"queue": "gpu", "tags": ["API_KEY=k3y", "team=ml"]})
    sched = factories.created[0]
    sched.calls.clear()
    found = runner.status_app_and_options(handle)
    assert found is not None
    status, described, options = found
    assert status.state == AppState.PENDING and described.roles[0].entrypoint == "python"
    want = {"priority": 0, "queue": "gpu", "tags": ["API_KEY=****", "team=ml"]}
    assert options == want
    assert [c[0] for c in sched.calls] == ["describe"]
    sched.calls.clear()
    assert runner.describe_with_options(handle) == (described, want)
    assert [c[0] for c in sched.calls] == ["describe"]
    runner.delete(handle)
    assert runner.status_app_and_options(handle) is None
    assert runner.describe_with_options(handle) is None


def test_status_and_envs_give_the_roles_and_the_backends_env_from_one_question(
    runner: Runner, factories: Factories
) -> None:
    """What torchx status masks with: each role's env, and the env the backend tells
    beyond them (a run option's, as docker's ``env``)."""
    handle = runner.run(app(), "fake")
    sched = factories.created[0]
    sched.run_env = {"DB_PASSWORD": "s3cret"}  # as a run option of docker's adds it
    sched.calls.clear()
    found = runner.status_and_envs(handle)
    assert found is not None
    status, envs = found
    assert status.state == AppState.PENDING and status.msg == "step 1"
    assert envs == [{"A": "1"}, {"DB_PASSWORD": "s3cret"}]
    assert [c[0] for c in sched.calls] == ["describe"]
    runner.delete(handle)
    assert runner.status_and_envs(handle) is None


def test_log_lines_right_after_status_asks_once(runner: Runner, factories: Factories) -> None:
    """What ``torchx log`` does: status, then the log, one describe (not two)."""
    fake_clock(runner)
    handle = runner.run(app(), "fake")
    sched = factories.created[0]
    sched.calls.clear()
    assert runner.status(handle) is not None
    assert list(runner.log_lines(handle, "train")) == ["a\n", "b\n"]
    assert [c[0] for c in sched.calls] == ["describe", "log_iter"]
    # later than a second after the status, the runner asks again whether the app exists
    runner._sleep(1.5)
    sched.calls.clear()
    assert list(runner.log_lines(handle, "train")) == ["a\n", "b\n"]
    assert [c[0] for c in sched.calls] == ["describe", "log_iter"]
    # an app found gone is not known any more: its logs are refused at once
    runner.delete(handle)
    assert runner.status(handle) is None
    with pytest.raises(UnknownAppError):
        runner.log_lines(handle, "train")


def test_malformed_handle(runner: Runner) -> None:
    with pytest.raises(SpecError, match="malformed app handle"):
        runner.status("fake:/nope")


# --- dryrun: no side effects ---------------------------------------------------------


def test_dryrun_never_mutates_the_app_nor_writes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cwd, home = tmp_path / "cwd", tmp_path / "home"
    cwd.mkdir()
    home.mkdir()
    monkeypatch.chdir(cwd)
    monkeypatch.setenv("HOME", str(home))
    state = tmp_path / "state" / "apps.json"
    f = Factories(state, FakeWorkspaceScheduler)
    original = app()
    original.roles[0].workspace = Workspace({"./lib": "lib"})
    before = copy.deepcopy(original)
    with Runner("s", {"ws": f.make(), "plain": f.make()}, use_config=True) as r:
        info = r.dryrun(original, "ws", workspace=str(cwd), parent_run_id="run-7")
        r.dryrun(original, "plain", workspace=str(cwd))
    assert original == before
    assert original.roles[0].args == ["-m", "train"]
    sched = f.created[0]
    assert isinstance(sched, FakeWorkspaceScheduler)
    assert sched.builds == []  # recorded, not built
    assert info.request["roles"][0]["image"] == "img:1"
    assert info.request["roles"][0]["env"][ENV_TORCHX_PARENT_RUN_ID] == "run-7"
    assert info._app is not None
    assert info._app.roles[0].workspace == Workspace({str(cwd): ""})
    assert list(cwd.iterdir()) == [] and list(home.iterdir()) == []
    assert not state.parent.exists()


class MeddlingScheduler(FakeScheduler):
    """A plugin whose validation hooks change the app they are given."""

    def _pre_build_validate(self, app: AppDef, scheduler: str, cfg: Any) -> None:
        app.roles[0].env["PRE"] = "meddled"

    def _validate(self, app: AppDef, scheduler: str, cfg: Any) -> None:
        app.roles[0].args.append("--validated")
        app.metadata["validated"] = "yes"


def test_dryrun_shields_the_app_from_the_schedulers_hooks(tmp_path: Path) -> None:
    f = Factories(tmp_path / "apps.json", MeddlingScheduler)
    original = app()
    before = copy.deepcopy(original)
    with Runner("s", {"m": f.make()}) as r:
        info = r.dryrun(original, "m")
        handle = r.run(original, "m")
        assert r.describe(handle) is not None
    assert original == before
    assert info.request["roles"][0]["env"]["PRE"] == "meddled"  # the copy was validated


def test_stop_is_a_deprecated_cancel_and_name_the_session(runner: Runner) -> None:
    handle = runner.run(app(), "fake")
    with pytest.warns(DeprecationWarning, match="use Runner.cancel"):
        runner.stop(handle)
    status = runner.status(handle)
    assert status is not None and status.state == AppState.CANCELLED
    assert runner.name() == runner.session_name == "sess"


def test_describe_uses_the_name_the_scheduler_kept(runner: Runner, factories: Factories) -> None:
    handle = runner.run(app(), "fake")
    sched = factories.created[0]
    original_describe = sched.describe

    def named(app_id: str) -> DescribeAppResponse | None:
        desc = original_describe(app_id)
        if desc is not None:
            desc.name = "trainer"
        return desc

    sched.describe = named  # type: ignore[method-assign]
    described = runner.describe(handle)
    assert described is not None and described.name == "trainer"


def test_status_carries_the_times_the_scheduler_reports(
    runner: Runner, factories: Factories
) -> None:
    handle = runner.run(app(), "fake")
    sched = factories.created[0]
    original_describe = sched.describe

    def timed(app_id: str) -> DescribeAppResponse | None:
        desc = original_describe(app_id)
        if desc is not None:
            desc.start_time, desc.end_time = 1000.0, 1090.5
        return desc

    status = runner.status(handle)
    assert status is not None and (status.start_time, status.end_time) == (None, None)
    sched.describe = timed  # type: ignore[method-assign]
    status = runner.status(handle)
    assert status is not None and (status.start_time, status.end_time) == (1000.0, 1090.5)
    assert status.duration == 90.5


def test_run_builds_the_workspace_into_the_request(factories: Factories, tmp_path: Path) -> None:
    f = Factories(tmp_path / "apps.json", FakeWorkspaceScheduler)
    original = app()
    before = copy.deepcopy(original)
    with Runner("s", {"ws": f.make()}) as r:
        handle = r.run(original, "ws", workspace="/src/proj")
        sched = f.created[0]
        assert isinstance(sched, FakeWorkspaceScheduler)
        assert sched.builds == [("train", {"/src/proj": ""})]
        stored = json.loads(f.state_file.read_text())[handle.rsplit("/", 1)[1]]
        assert stored["request"]["roles"][0]["image"] == "built/img:1"
    assert original == before


def test_schedule_builds_a_workspace_recorded_by_dryrun(tmp_path: Path) -> None:
    f = Factories(tmp_path / "apps.json", FakeWorkspaceScheduler)
    with Runner("s", {"ws": f.make()}) as r:
        info = r.dryrun(app(), "ws", workspace="/src/proj")
        shown = str(info)
        handle = r.schedule(info)
        sched = f.created[0]
        assert isinstance(sched, FakeWorkspaceScheduler)
        assert len(sched.builds) == 1
        stored = json.loads(f.state_file.read_text())[handle.rsplit("/", 1)[1]]
        assert stored["request"]["roles"][0]["image"] == "built/img:1"
        assert str(info) == shown  # the caller's dryrun info is unchanged


def test_workspace_ignored_by_a_scheduler_without_workspaces(runner: Runner) -> None:
    info = runner.dryrun(app(), "fake", workspace="/src/proj")
    assert info.app.roles[0].workspace is None


def test_schedule_needs_a_dryrun_info(runner: Runner) -> None:
    with pytest.raises(SpecError, match="dry-run the app first"):
        runner.schedule(AppDryRunInfo({}, repr))


# --- strict run config ---------------------------------------------------------------


def test_unknown_cfg_key_names_the_nearest(runner: Runner, factories: Factories) -> None:
    with pytest.raises(InvalidRunConfigException) as e:
        runner.run(app(), "fake", cfg={"priorty": 1})
    msg = str(e.value)
    assert msg.startswith("scheduler 'fake': unknown run option 'priorty'")
    assert "did you mean 'priority'" in msg
    assert all(c[0] != "schedule" for s in factories.created for c in s.calls)


def test_wrong_cfg_type(runner: Runner) -> None:
    with pytest.raises(InvalidRunConfigException, match="run option 'priority' expects int"):
        runner.dryrun(app(), "fake", cfg={"priority": "high"})


def test_missing_required_cfg(runner: Runner) -> None:
    with pytest.raises(InvalidRunConfigException, match="required run option 'cluster_id'"):
        runner.dryrun(app(), "needs")
    assert runner.dryrun(app(), "needs", cfg={"clusterId": 3}).request["cfg"]["cluster_id"] == 3


def test_structured_opts_cfg(runner: Runner) -> None:
    from dataclasses import dataclass

    from torchx.specs import StructuredOpts

    @dataclass
    class Opts(StructuredOpts):
        queue: str = "q"
        priority: int = 1

    info = runner.dryrun(app(), "fake", cfg=Opts(priority=5))  # type: ignore[arg-type]
    assert info.request["cfg"]["priority"] == 5


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda a: a.roles.clear(), "app 'trainer' has no roles"),
        (lambda a: setattr(a.roles[0], "entrypoint", "<MISSING>"), "has no entrypoint"),
        (lambda a: setattr(a.roles[0], "num_replicas", 0), "num_replicas=0"),
    ],
)
def test_invalid_app(runner: Runner, mutate: Any, message: str) -> None:
    bad = app()
    mutate(bad)
    with pytest.raises(InvalidAppError, match=message):
        runner.dryrun(bad, "fake")


def test_role_without_resource_rejected_by_scheduler_validation(runner: Runner) -> None:
    bad = app()
    bad.roles[0] = Role(name="r", image="i", entrypoint="e")
    with pytest.raises(ValueError, match="has no resource"):
        runner.dryrun(bad, "fake")


# --- submit failures -----------------------------------------------------------------


def test_failed_submit_leaves_nothing(runner: Runner, factories: Factories) -> None:
    sched = runner._scheduler("fake")
    assert isinstance(sched, FakeScheduler)
    sched.fail_schedule = TransientSchedulerError("503 while creating")
    with pytest.raises(TransientSchedulerError):
        runner.run(app(), "fake")
    assert [c[0] for c in sched.calls].count("schedule") == 1  # never retried
    assert runner.list("fake") == []
    assert runner._apps == {}


@pytest.mark.parametrize("bad_id", ["has space", "queue/job-1"])
def test_app_id_that_no_handle_can_carry_is_removed(runner: Runner, bad_id: str) -> None:
    sched = runner._scheduler("fake")
    assert isinstance(sched, FakeScheduler)
    sched.bad_app_id = bad_id
    with pytest.raises(SchedulerError, match="the app was removed"):
        runner.run(app(), "fake")
    assert ("delete", (bad_id,)) in sched.calls
    assert runner.list("fake") == []


def test_listed_app_id_that_no_handle_can_carry_is_one_line(
    runner: Runner, factories: Factories
) -> None:
    factories.state_file.write_text(
        json.dumps({"queue/job-1": {"step": 0, "request": {"name": "x", "roles": []}}})
    )
    with pytest.raises(SchedulerError) as e:
        runner.list("fake")
    assert str(e.value).startswith(
        "scheduler 'fake' listed app id 'queue/job-1', which no handle can carry "
        "(a scheduler's app ids have no '/' and no whitespace): "
    )
    assert "\n" not in str(e.value)


# --- transient failures --------------------------------------------------------------


@pytest.mark.parametrize(
    "error", [TransientSchedulerError("429"), TimeoutError("slow"), ConnectionError("reset")]
)
def test_transient_failures_are_retried(runner: Runner, error: BaseException) -> None:
    sleeps = fake_clock(runner)
    handle = runner.run(app(), "fake")
    sched = runner._scheduler("fake")
    assert isinstance(sched, FakeScheduler)
    sched.transient["describe"] = [error, error]
    status = runner.status(handle)
    assert status is not None and status.state == AppState.PENDING
    assert [c[0] for c in sched.calls].count("describe") == 3
    assert sleeps == [0.001, 0.002]  # exponential backoff (no jitter here)


def test_exhausted_retries_are_not_a_failed_app(runner: Runner) -> None:
    fake_clock(runner)
    handle = runner.run(app(), "fake")
    sched = runner._scheduler("fake")
    assert isinstance(sched, FakeScheduler)
    sched.transient["describe"] = [TransientSchedulerError("503")] * 10
    with pytest.raises(RetriesExhaustedError) as e:
        runner.wait(handle, wait_interval=0.01)
    assert e.value.attempts == FAST.attempts
    assert f"status of {handle}" in str(e.value)
    assert "not failed" in str(e.value)
    assert isinstance(e.value.__cause__, TransientSchedulerError)
    assert not isinstance(e.value, TransientSchedulerError)  # never retried again
    assert [c[0] for c in sched.calls].count("describe") == FAST.attempts


def test_a_retry_is_said_once_at_warning(runner: Runner, caplog: pytest.LogCaptureFixture) -> None:
    """A slow answer is never silent: the first transient failure is a warning, once."""
    fake_clock(runner)
    handle = runner.run(app(), "fake")
    sched = runner._scheduler("fake")
    assert isinstance(sched, FakeScheduler)
    sched.transient["describe"] = [TransientSchedulerError("controller down")] * 3
    with caplog.at_level("DEBUG", logger="torchx.runner"):
        runner.status(handle)
    warnings = [r for r in caplog.records if r.levelname == "WARNING"]
    assert len(warnings) == 1, [r.getMessage() for r in warnings]
    assert warnings[0].getMessage().startswith(f"status of {handle}: controller down; retrying")
    assert len([r for r in caplog.records if r.levelname == "DEBUG"]) == 3


def test_retry_deadline(runner: Runner) -> None:
    fake_clock(runner)
    runner._backoff = Backoff(attempts=100, initial=1.0, max_delay=1.0, jitter=0.0, deadline=3.5)
    handle = runner.run(app(), "fake")
    sched = runner._scheduler("fake")
    assert isinstance(sched, FakeScheduler)
    sched.transient["describe"] = [TimeoutError()] * 100
    with pytest.raises(RetriesExhaustedError) as e:
        runner.status(handle)
    assert e.value.attempts == 4  # 0s, 1s, 2s, 3s: the next retry would start after 3.5s


def test_other_errors_are_not_retried(runner: Runner) -> None:
    handle = runner.run(app(), "fake")
    sched = runner._scheduler("fake")
    assert isinstance(sched, FakeScheduler)
    sched.transient["describe"] = [RuntimeError("bug")]
    with pytest.raises(RuntimeError, match="bug"):
        runner.status(handle)
    assert [c[0] for c in sched.calls].count("describe") == 1


class SdkThrottled(Exception):
    """An SDK's own exception, which only the scheduler's classify_error knows."""


class SdkForbidden(Exception):
    pass


def classify_sdk(e: BaseException) -> SchedulerError | None:
    if isinstance(e, SdkThrottled):
        return TransientSchedulerError("throttled", retry_after=0.5)
    if isinstance(e, SdkForbidden):
        return SchedulerError("the backend refused: forbidden")
    return None


def test_the_scheduler_classifies_its_sdk_errors_for_the_runner(runner: Runner) -> None:
    """classify_error is the one map: a transient SDK error is retried (waiting at least
    its retry_after), a permanent one is one SchedulerError, chained to the SDK's."""
    sleeps = fake_clock(runner)
    handle = runner.run(app(), "fake")
    sched = runner._scheduler("fake")
    assert isinstance(sched, FakeScheduler)
    sched.classify_error = classify_sdk  # type: ignore[method-assign]
    sched.transient["describe"] = [SdkThrottled(), SdkThrottled()]
    status = runner.status(handle)
    assert status is not None and status.state == AppState.PENDING
    assert sleeps == [0.5, 0.5]
    sched.transient["cancel"] = [SdkForbidden()]
    with pytest.raises(SchedulerError, match="refused: forbidden") as e:
        runner.cancel(handle)
    assert isinstance(e.value.__cause__, SdkForbidden)
    assert [c[0] for c in sched.calls].count("cancel") == 1


@pytest.mark.parametrize("method", ["list", "cancel", "log_iter"])
def test_list_cancel_logs_retry_too(runner: Runner, method: str) -> None:
    fake_clock(runner)
    handle = runner.run(app(), "fake")
    sched = runner._scheduler("fake")
    assert isinstance(sched, FakeScheduler)
    sched.transient[method] = [ConnectionError("reset")]
    if method == "list":
        assert len(runner.list("fake")) == 1
    elif method == "cancel":
        runner.cancel(handle)
    else:
        assert list(runner.log_lines(handle, "train")) == ["a\n", "b\n"]
    assert [c[0] for c in sched.calls].count(method) == 2


def test_backoff_validation() -> None:
    with pytest.raises(ValueError, match="attempts must be >= 1"):
        Backoff(attempts=0)
    with pytest.raises(ValueError, match="initial must be >= 0"):
        Backoff(initial=-1)
    b = Backoff(initial=1, multiplier=3, max_delay=100, jitter=0.5)
    assert b.delay(2, 0.0) == 4.5 and b.delay(2, 1.0) == pytest.approx(13.5)


# --- wait ----------------------------------------------------------------------------


def test_wait_polls_soon_then_at_the_interval(factories: Factories) -> None:
    script = ["PENDING"] * 8 + ["SUCCEEDED"]
    with Runner("s", {"fake": factories.make(script=script)}) as r:
        sleeps = fake_clock(r)
        handle = r.run(app(), "fake")
        status = r.wait(handle, wait_interval=1.0)
    assert status is not None and status.state == AppState.SUCCEEDED
    assert sleeps == [0.1, 0.2, 0.4, 0.8, 1.0, 1.0, 1.0, 1.0]


def test_wait_returns_at_once_for_a_terminal_app(factories: Factories) -> None:
    with Runner("s", {"fake": factories.make(script=["FAILED"])}) as r:
        sleeps = fake_clock(r)
        status = r.wait(r.run(app(), "fake"), wait_interval=10)
    assert status is not None and status.state == AppState.FAILED
    assert sleeps == []


def test_wait_timeout(factories: Factories) -> None:
    with Runner("s", {"fake": factories.make(script=["RUNNING"])}) as r:
        sleeps = fake_clock(r)
        handle = r.run(app(), "fake")
        with pytest.raises(AppWaitTimeout) as e:
            r.wait(handle, wait_interval=2, timeout=5)
    assert e.value.app_handle == handle
    assert e.value.elapsed == pytest.approx(5.0)
    assert e.value.last_status.state == AppState.RUNNING
    assert str(e.value).startswith(f"app {handle} did not reach a terminal state within 5.0s")
    assert sum(sleeps) == pytest.approx(5.0)  # never sleeps past the timeout
    assert isinstance(e.value, TimeoutError)


class BlockingScheduler(FakeScheduler):
    """A scheduler that can block until its apps change: records each wait's timeout."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.waits: list[float] = []
        self.wait_errors: list[BaseException] = []

    def wait_for_change(self, app_id: str, timeout: float) -> bool:
        self.waits.append(timeout)
        if self.wait_errors:
            raise self.wait_errors.pop(0)
        return True


def test_wait_blocks_in_the_scheduler_where_it_can_instead_of_sleeping(tmp_path: Path) -> None:
    factories = Factories(tmp_path / "state.json", BlockingScheduler)
    script = ["PENDING", "RUNNING", "RUNNING", "SUCCEEDED"]
    with Runner("s", {"fake": factories.make(script=script)}) as r:
        sleeps = fake_clock(r)
        status = r.wait(r.run(app(), "fake"), wait_interval=4.0)
    assert status is not None and status.state == AppState.SUCCEEDED
    (sched,) = factories.created
    assert isinstance(sched, BlockingScheduler)
    assert sleeps == []  # each pause was the scheduler's own wait, bounded by the interval
    assert sched.waits == [4.0, 4.0, 4.0]


def test_wait_bounds_the_schedulers_wait_by_its_timeout(tmp_path: Path) -> None:
    factories = Factories(tmp_path / "state.json", BlockingScheduler)
    with Runner("s", {"fake": factories.make(script=["RUNNING"])}) as r:
        now = [0.0]
        r._clock = lambda: now[0]
        handle = r.run(app(), "fake")
        (sched,) = factories.created
        assert isinstance(sched, BlockingScheduler)

        def wait_for_change(app_id: str, timeout: float) -> bool:
            sched.waits.append(timeout)
            now[0] += timeout
            return True

        sched.wait_for_change = wait_for_change  # type: ignore[method-assign]
        with pytest.raises(AppWaitTimeout):
            r.wait(handle, wait_interval=2, timeout=5)
    assert sched.waits == [2.0, 2.0, 1.0]  # never past the timeout


def test_a_failing_wait_of_the_scheduler_is_a_sleep(tmp_path: Path) -> None:
    factories = Factories(tmp_path / "state.json", BlockingScheduler)
    with Runner("s", {"fake": factories.make(script=["RUNNING", "SUCCEEDED"])}) as r:
        sleeps = fake_clock(r)
        handle = r.run(app(), "fake")
        (sched,) = factories.created
        assert isinstance(sched, BlockingScheduler)
        sched.wait_errors.append(ConnectionError("engine gone"))
        assert r.wait_for_change(handle, 3.0) is False
        sched.wait_errors.append(ConnectionError("engine gone"))
        status = r.wait(handle, wait_interval=1.0)
    assert status is not None and status.state == AppState.SUCCEEDED
    assert sleeps == [0.1]


def test_the_default_scheduler_cannot_wait(runner: Runner) -> None:
    handle = runner.run(app(), "fake")
    assert runner.wait_for_change(handle, 60.0) is False  # at once: the caller sleeps


def test_wait_for_unknown_app(runner: Runner) -> None:
    assert runner.wait("fake://sess/nope", wait_interval=0.01) is None


def test_wait_rejects_bad_interval(runner: Runner) -> None:
    with pytest.raises(ValueError, match="wait_interval"):
        runner.wait("fake://sess/x", wait_interval=0)


def test_wait_with_real_clock(factories: Factories) -> None:
    with Runner("s", {"fake": factories.make()}) as r:
        status = r.wait(r.run(app(), "fake"), wait_interval=0.01, timeout=30)
    assert status is not None and status.state == AppState.SUCCEEDED


# --- components ----------------------------------------------------------------------


def _fake_component_modules(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Stand-ins for torchx.components.finder/args that record what they were given."""
    import types

    seen: list[Any] = []

    def comp(j: str = "1x1", script: str = "x.py") -> AppDef:
        nnodes, nproc = (int(x) for x in j.split("x"))
        a = app(name=f"comp-{script}", replicas=nnodes)
        a.roles[0].args = [script, str(nproc)]
        return a

    class ComponentDef:
        def __init__(self, name: str) -> None:
            self.name, self.fn = name, comp

    def get_component(name: str) -> ComponentDef:
        seen.append(("get_component", name))
        return ComponentDef(name)

    def materialize_appdef(
        fn: Any, argv: list[str], defaults: dict[str, str] | None = None, prog: str | None = None
    ) -> AppDef:
        seen.append(("materialize", list(argv), defaults))
        kwargs = dict(defaults or {})
        it = iter(argv)
        for flag in it:
            kwargs[flag.lstrip("-")] = next(it)
        result: AppDef = fn(**kwargs)
        return result

    finder = types.ModuleType("torchx.components.finder")
    finder.get_component = get_component  # type: ignore[attr-defined]
    args = types.ModuleType("torchx.components.args")
    args.materialize_appdef = materialize_appdef  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "torchx.components.finder", finder)
    monkeypatch.setitem(sys.modules, "torchx.components.args", args)
    return seen


def test_run_component_with_defaults(
    factories: Factories, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    seen = _fake_component_modules(monkeypatch)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / ".torchxconfig").write_text(
        "[component:my.comp]\nj = 4x2\nscript = from_config.py\n"
    )
    with Runner(
        "s",
        {"fake": factories.make()},
        component_defaults={"my.comp": {"script": "explicit.py"}},
        use_config=True,
    ) as r:
        info = r.dryrun_component("my.comp", ["--j", "2x8"], "fake")
        assert seen[-1] == ("materialize", ["--j", "2x8"], {"j": "4x2", "script": "explicit.py"})
        assert info.request["roles"][0]["replicas"] == 2
        assert info.request["roles"][0]["args"][:2] == ["explicit.py", "8"]
        handle = r.run_component("my.comp", {"j": "3x1"}, "fake")
        assert handle == "fake://s/comp-x.py-0"


def test_component_must_return_an_appdef(
    factories: Factories, monkeypatch: pytest.MonkeyPatch
) -> None:
    _fake_component_modules(monkeypatch)
    finder = sys.modules["torchx.components.finder"]
    real = finder.get_component

    def get_component(name: str) -> Any:
        c = real(name)
        c.fn = lambda: "not an app"
        return c

    monkeypatch.setattr(finder, "get_component", get_component)
    with (
        Runner("s", {"fake": factories.make()}) as r,
        pytest.raises(InvalidAppError, match="returned str, expected an AppDef"),
    ):
        r.dryrun_component("c", {}, "fake")


# --- config integration --------------------------------------------------------------


def test_config_fills_cfg_under_explicit_values(
    factories: Factories, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path / "nohome"))
    (tmp_path / ".torchxconfig").write_text("[fake]\nqueue = from-file\npriority = 7\n")
    with Runner("s", {"fake": factories.make()}, use_config=True) as r:
        info = r.dryrun(app(), "fake", cfg={"priority": 1, "queue": None})
        assert info.request["cfg"] == {"queue": "from-file", "priority": 1, "tags": []}
    with Runner("s", {"fake": factories.make()}, use_config=False) as r:
        assert r.dryrun(app(), "fake").request["cfg"]["queue"] == "default"


def test_config_bad_key_fails_the_dryrun(
    factories: Factories, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from torchx.runner import ConfigError

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path / "nohome"))
    (tmp_path / ".torchxconfig").write_text("[fake]\nqeue = x\n")
    with (
        Runner("s", {"fake": factories.make()}, use_config=True) as r,
        pytest.raises(ConfigError, match=r"\[fake\] unknown key 'qeue' \(did you mean 'queue'\?\)"),
    ):
        r.dryrun(app(), "fake")


def _listed_with(r: Runner, scheduler: str, cfg: Mapping[str, CfgVal] | None = None) -> Any:
    """The cfg the scheduler's ``list`` got from ``r.list(scheduler, cfg)``."""
    r.list(scheduler, cfg)
    sched = r._scheduler(scheduler)
    assert isinstance(sched, FakeScheduler)
    return [args[0] for name, args in sched.calls if name == "list"][-1]


def test_list_gets_the_options_given_over_the_config_and_no_default(
    factories: Factories, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path / "nohome"))
    factories_ = {"fake": factories.make(), "needs": factories.make(required=True)}
    with Runner("s", factories_, use_config=True) as r:
        assert _listed_with(r, "fake") is None  # no default queue narrows the listing
        # a required option is for submitting: listing does not ask for it
        assert _listed_with(r, "needs") is None
        assert _listed_with(r, "fake", {"priority": 3}) == {"priority": 3}
        (tmp_path / ".torchxconfig").write_text("[fake]\nqueue = from-file\npriority = 7\n")
        assert _listed_with(r, "fake") == {"queue": "from-file", "priority": 7}
        assert _listed_with(r, "fake", {"queue": "given", "priority": None}) == {
            "queue": "given",
            "priority": 7,
        }
    with Runner("s", {"fake": factories.make()}, use_config=False) as r:
        assert _listed_with(r, "fake") is None


@pytest.mark.parametrize(
    ("cfg", "message"),
    [
        ({"priorty": 1}, "scheduler 'fake': unknown run option 'priorty'"),
        ({"priority": "high"}, "scheduler 'fake': run option 'priority' expects int, got 'high'"),
    ],
)
def test_list_with_a_bad_option_is_one_line_and_asks_nothing(
    runner: Runner, factories: Factories, cfg: dict[str, Any], message: str
) -> None:
    with pytest.raises(InvalidRunConfigException) as e:
        runner.list("fake", cfg)
    assert str(e.value).startswith(message) and "\n" not in str(e.value)
    assert not any(name == "list" for s in factories.created for name, _ in s.calls)


def test_config_of_a_schedulers_other_name_applies_to_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # upstream's default scheduler is local_cwd: its section configures local too, below
    # local's own section; the real local scheduler, found through the plugin registry
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path / "nohome"))
    monkeypatch.setenv("TORCHX_HOME", str(tmp_path / "state"))
    monkeypatch.delenv("TORCHXCONFIG", raising=False)
    (tmp_path / ".torchxconfig").write_text("[local_cwd]\ngrace_period = 3\n")
    one = AppDef("a", [Role("r", image=str(tmp_path), entrypoint="true")])
    with get_runner() as r:
        assert r.dryrun(one, "local").request.grace_period == 3.0
        assert r.dryrun(one, "local_cwd").request.grace_period == 3.0
    (tmp_path / ".torchxconfig").write_text(
        "[local_cwd]\ngrace_period = 3\n[local]\ngrace_period = 4\n"
    )
    with get_runner() as r:
        assert r.dryrun(one, "local").request.grace_period == 4.0
        assert r.dryrun(one, "local_cwd").request.grace_period == 3.0
        assert r.dryrun(one, "local", cfg={"grace_period": 5.0}).request.grace_period == 5.0


def test_list_gives_each_local_app_the_name_it_was_submitted_under(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # local_cwd is another name of the local scheduler: each app's record keeps the name
    # it was submitted under, whichever name lists it; a record from before reads local
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path / "nohome"))
    monkeypatch.setenv("TORCHX_HOME", str(tmp_path / "state"))
    monkeypatch.delenv("TORCHXCONFIG", raising=False)
    one = AppDef("a", [Role("r", image=str(tmp_path), entrypoint="true")])
    with get_runner() as r:
        cwd = r.run(one, "local_cwd")
        local = r.run(one, "local")
        assert cwd.startswith("local_cwd://torchx/") and local.startswith("local://torchx/")
        for name in ("local", "local_cwd"):
            assert {a.app_handle for a in r.list(name)} == {cwd, local}
        state = tmp_path / "state" / "apps" / cwd.rsplit("/", 1)[1] / "state.json"
        record = json.loads(state.read_text())
        assert record["scheduler"] == "local_cwd"
        for older in (None, "../x", 3):  # written before the field, or not a name: local
            if older is None:
                record.pop("scheduler")
            else:
                record["scheduler"] = older
            state.write_text(json.dumps(record))
            handles = {a.app_handle for a in r.list("local_cwd")}
            assert handles == {local, cwd.replace("local_cwd://", "local://")}


class _OtherFake(FakeScheduler):
    """Another scheduler (another class), with the fake's backend name."""


def test_list_ignores_a_handle_a_scheduler_gives_of_another_scheduler(
    factories: Factories, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    other = Factories(tmp_path / "other.json", cls=_OtherFake).make()
    with Runner(
        "sess",
        {"fake": factories.make(), "fake_alias": factories.make(), "other": other},
        backoff=FAST,
    ) as runner:
        app_id = runner.run(app(), "fake").rsplit("/", 1)[1]
        reported = [ListAppResponse(app_id=app_id, state=AppState.RUNNING)]
        monkeypatch.setattr(FakeScheduler, "list", lambda self, cfg=None: reported)
        for given, listed in [
            ("fake_alias://x/y", "fake_alias"),  # another name of the same scheduler: kept
            ("other://x/y", "fake"),  # another scheduler: the name asked for
            ("nope://x/y", "fake"),  # no scheduler of that name
            ("<NOT_SET>", "fake"),
        ]:
            reported[0].app_handle = given
            assert [a.app_handle for a in runner.list("fake")] == [f"{listed}://sess/{app_id}"]


def test_module_importable_by_path() -> None:
    # the fresh-process test loads this file by path: keep that working
    spec = importlib.util.spec_from_file_location("runner_test_mod_check", HERE)
    assert spec is not None and spec.loader is not None


def test_real_component_dryrun(factories: Factories) -> None:
    with Runner(
        "s", {"fake": factories.make()}, component_defaults={"dist.ddp": {"j": "3x2"}}
    ) as r:
        info = r.dryrun_component("dist.ddp", ["-m", "train"], "fake")
        assert info.request["roles"][0]["replicas"] == 3
        info = r.dryrun_component("dist.ddp", ["-j", "128x8", "-m", "train"], "fake")
        assert info.request["roles"][0]["replicas"] == 128
        assert "--nproc_per_node 8" in " ".join(info.request["roles"][0]["args"])
