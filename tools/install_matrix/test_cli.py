"""Row: torchx-cli (with the runner and specs). `torchx plugins` and `torchx runopts` work."""

from __future__ import annotations

import json

import pytest
from conftest import Env, MakeEnv

ALLOWED = {"torchx-cli", "torchx-runner", "torchx-specs"} | {
    "attrs",
    "cattrs",
    "pluggy",
    "typing-extensions",
    "pyyaml",  # torchx-cli's: `torchx run app.yaml`
}


@pytest.fixture(scope="module")
def env(make_env: MakeEnv) -> Env:
    return make_env("cli", "torchx-cli")


def test_only_the_cli_its_siblings_and_their_dependencies_are_installed(env: Env) -> None:
    installed = env.installed()
    assert {"torchx-cli", "torchx-runner", "torchx-specs"} <= installed <= ALLOWED


def test_torchx_plugins(env: Env) -> None:
    proc = env.torchx("plugins")
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    for dist in ("torchx-cli", "torchx-runner", "torchx-specs"):
        assert f"{dist} 0." in proc.stdout
    assert "failed to load" not in proc.stdout and "clash" not in proc.stdout

    data = json.loads(env.torchx("plugins", "--json").stdout)["data"]
    assert data["failures"] == [] and data["clashes"] == []
    assert data["distributions"]["torchx-runner"]["schedulers"] == ["local", "local_cwd"]
    assert "plugins" in data["distributions"]["torchx-cli"]["cli_commands"]


def test_torchx_runopts(env: Env) -> None:
    proc = env.torchx("runopts")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("local:\n")
    assert "log_dir" in proc.stdout
    one = env.torchx("runopts", "local")
    assert one.returncode == 0 and one.stdout.startswith("local:\n")


def test_torchx_version_and_help(env: Env) -> None:
    proc = env.torchx("--version")
    assert proc.returncode == 0 and proc.stdout.startswith("torchx 0.")
    helped = env.torchx("--help")
    assert helped.returncode == 0 and "runopts" in helped.stdout


def test_an_appdef_yaml_file_runs_with_nothing_more_installed(env: Env) -> None:
    # what the Quickstart installs is enough for `torchx run app.yaml`
    (env.work / "app.yaml").write_text(
        "apiVersion: torchx.specs/v1\nkind: AppDef\nspec:\n  name: hi\n  roles:\n"
        "  - name: echo\n    image: .\n    entrypoint: echo\n    args: [hello]\n"
    )
    proc = env.torchx("run", "--wait", "--log", "app.yaml")
    assert proc.returncode == 0, proc.stderr
    assert "echo/0 hello" in proc.stdout.splitlines()
