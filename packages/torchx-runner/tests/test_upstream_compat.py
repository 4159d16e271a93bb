"""Code written against upstream TorchX's documented runner-side API runs unchanged.

Each test uses the names as upstream's documentation does: ``torchx.schedulers``'
factories, a scheduler subclass wrapping ``submit_dryrun``, 0.7's workspace strings.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from torchx.specs import AppDef, AppDryRunInfo, CfgVal, Role, Workspace


def _fresh(code: str) -> str:
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return out.stdout.strip()


def test_scheduler_names_import_without_loading_any_scheduler() -> None:
    printed = _fresh(
        "import sys\n"
        "from torchx.schedulers import get_default_scheduler_name, get_scheduler_factories\n"
        "factories = get_scheduler_factories()\n"
        "loaded = sorted(m for m in sys.modules if m.startswith('torchx.schedulers.'))\n"
        "print(get_default_scheduler_name(), sorted(factories), loaded)\n"
    )
    assert printed == "local ['local', 'local_cwd'] []"


def test_scheduler_and_factory_are_the_contracts() -> None:
    from torchx.schedulers import Scheduler, SchedulerFactory, api

    assert Scheduler is api.Scheduler
    assert SchedulerFactory is api.SchedulerFactory


def test_factories_make_schedulers_and_skip_defaults_leaves_out_the_builtins() -> None:
    from torchx.schedulers import Scheduler, get_scheduler_factories

    scheduler = get_scheduler_factories()["local_cwd"]("compat-test")
    try:
        assert isinstance(scheduler, Scheduler) and scheduler.session_name == "compat-test"
    finally:
        scheduler.close()
    assert "local" not in get_scheduler_factories(skip_defaults=True)
    with pytest.raises(ValueError, match="leave group out"):
        get_scheduler_factories(group="my.group")


def test_runner_dryrun_goes_through_an_overridden_submit_dryrun(tmp_path: Path) -> None:
    from torchx.runner import Runner
    from torchx.schedulers.local_scheduler import LocalScheduler

    seen: list[tuple[AppDef, Mapping[str, CfgVal]]] = []

    class Wrapped(LocalScheduler):
        # what upstream users' wrappers do: add to the request the base class makes
        def submit_dryrun(self, app: AppDef, cfg: Mapping[str, CfgVal]) -> AppDryRunInfo[Any]:
            seen.append((app, cfg))
            info = super().submit_dryrun(app, cfg)
            return AppDryRunInfo(info.request, lambda request: f"wrapped: {request!r}")

    app = AppDef("hi", [Role("echo", image=str(tmp_path), entrypoint="echo", args=["hi"])])
    factory = lambda session_name, **kw: Wrapped(session_name, state_dir=str(tmp_path / "st"))  # noqa: E731
    with Runner("compat", {"wrapped": factory}) as runner:
        info = runner.dryrun(app, "wrapped", cfg={})
    assert len(seen) == 1
    assert seen[0][0] is not app  # the scheduler's copy, never the caller's
    assert str(info).startswith("wrapped: ")
    assert info.app.roles[0].args == ["hi"] and info.scheduler == "wrapped"


def test_dir_workspace_takes_a_plain_path_string(tmp_path: Path) -> None:
    from torchx.workspace.dir_workspace import DirWorkspaceMixin

    project = tmp_path / "proj"
    project.mkdir()
    (project / "train.py").write_text("print('hi')\n")
    job_dir = tmp_path / "job"
    role = Role("trainer", image="ignored", entrypoint="python")

    DirWorkspaceMixin().build_workspace_and_update_role(
        role, str(project), {"job_dir": str(job_dir)}
    )
    assert role.image == str(job_dir)
    assert (job_dir / "train.py").read_text() == "print('hi')\n"

    file_url = f"file://{project}"
    other = tmp_path / "job2"
    DirWorkspaceMixin().build_workspace_and_update_role(role, file_url, {"job_dir": str(other)})
    assert (other / "train.py").is_file()


def test_tmp_dir_workspace_copies_into_a_new_directory(tmp_path: Path) -> None:
    from torchx.workspace.dir_workspace import TmpDirWorkspaceMixin

    project = tmp_path / "proj"
    project.mkdir()
    (project / "a.txt").write_text("a")
    (project / "skip.log").write_text("no")
    (project / ".torchxignore").write_text("*.log\n")
    mixin = TmpDirWorkspaceMixin()
    first = Role("r", image="x", entrypoint="true")
    second = Role("r", image="x", entrypoint="true")
    mixin.build_workspace_and_update_role(first, Workspace(projects={str(project): ""}), {})
    mixin.build_workspace_and_update_role(second, str(project), {})
    try:
        assert first.image != second.image  # a new directory per build
        for image in (first.image, second.image):
            built = Path(image)
            assert built.name.startswith("torchx_workspace_")
            assert (built / "a.txt").read_text() == "a"
            assert not (built / "skip.log").exists()
    finally:
        import shutil

        shutil.rmtree(first.image, ignore_errors=True)
        shutil.rmtree(second.image, ignore_errors=True)


def test_a_component_with_optional_containers_runs_from_the_command_line(tmp_path: Path) -> None:
    from torchx.runner import get_runner

    comp = tmp_path / "comp.py"
    comp.write_text(
        "from typing import Dict, List, Optional\n"
        "from torchx.specs import AppDef, Role\n\n"
        "def paths(env: Optional[Dict[str, List[str]]] = None, n: Optional[int] = None) -> AppDef:\n"
        "    flat = {k: ':'.join(v) for k, v in (env or {}).items()}\n"
        "    return AppDef('paths', [Role('p', image='.', entrypoint='true', env=flat,\n"
        "                                 num_replicas=n or 1)])\n"
    )
    with get_runner("compat") as runner:
        app = runner.materialize(f"{comp}:paths", ["--env", "PATH=/a,/b,HOME=/h", "--n", "2"])
    assert app.roles[0].env == {"PATH": "/a:/b", "HOME": "/h"}
    assert app.roles[0].num_replicas == 2
