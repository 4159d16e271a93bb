"""Row: torchx-runner alone (with torchx-specs). A Runner runs a real local app; no CLI."""

from __future__ import annotations

import json

import pytest
from conftest import Env, MakeEnv

ALLOWED = {"torchx-specs", "torchx-runner", "attrs", "cattrs", "pluggy", "typing-extensions"}


@pytest.fixture(scope="module")
def env(make_env: MakeEnv) -> Env:
    return make_env("runner", "torchx-runner")


def test_only_runner_specs_and_their_dependencies_are_installed(env: Env) -> None:
    installed = env.installed()
    assert {"torchx-runner", "torchx-specs"} <= installed <= ALLOWED, sorted(installed)


def test_there_is_no_torchx_command(env: Env) -> None:
    assert not (env.bin / "torchx").exists()
    proc = env.python_code("import torchx.cli")
    assert "No module named 'torchx.cli'" in proc.stderr


def test_a_runner_runs_a_local_app(env: Env) -> None:
    code = """
import json
from torchx.runner import get_runner
with get_runner() as runner:
    handle = runner.run_component(
        "utils.echo", ["--msg", "hello from the install matrix", "--num_replicas", "2"], "local"
    )
    status = runner.wait(handle, wait_interval=0.2, timeout=60)
    logs = [list(runner.log_lines(handle, "echo", k)) for k in (0, 1)]
    listed = [a.app_handle for a in runner.list("local")]
print(json.dumps({"handle": handle, "state": str(status.state), "logs": logs, "listed": listed}))
"""
    proc = env.python_code(code, timeout=90)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["handle"].startswith("local://torchx/echo-")
    assert result["state"] == "SUCCEEDED"
    assert result["logs"] == [["hello from the install matrix\n"]] * 2
    assert result["handle"] in result["listed"]
    # the app's records live in the environment's private state directory
    assert any((env.work / "torchx-state").iterdir())
