"""Row: torchx-cli + torchx-docker. The docker SDK comes along, and stays unimported.

No engine here (``nox -s integration_docker`` uses a real one): the row checks what the
install gives, that ``torchx --help``, ``torchx run -s local`` and a docker dry run never
import the SDK, and that an engine that is not there is one line.
"""

from __future__ import annotations

import json

import pytest
from conftest import ECHO, Env, MakeEnv, loaded

#: the docker SDK and what it brings: never imported by what these tests run
SDK = ("docker", "requests")


@pytest.fixture(scope="module")
def env(make_env: MakeEnv) -> Env:
    return make_env("docker", "torchx-cli", "torchx-docker")


def _loaded(env: Env, *argv: str) -> str:
    """Which of :data:`SDK` ``torchx *argv`` imported; the command must succeed."""
    return loaded(env, SDK, *argv)


def test_the_sdk_is_installed_with_the_plugin(env: Env) -> None:
    installed = env.installed()
    assert {"torchx-docker", "docker", "torchx-cli"} <= installed, sorted(installed)
    assert not {"kubernetes", "boto3"} & installed


def test_both_names_are_schedulers(env: Env) -> None:
    proc = env.torchx("plugins")
    assert proc.returncode == 0, proc.stderr
    assert "docker" in proc.stdout and "local_docker" in proc.stdout


def test_help_local_runs_and_docker_dry_runs_never_import_the_sdk(env: Env) -> None:
    assert _loaded(env, "--help") == ""
    assert _loaded(env, "run", "-s", "local", "--wait", "utils.echo", "--msg", "hi") == ""
    assert _loaded(env, "runopts", "docker") == ""
    assert _loaded(env, "run", "-s", "docker", "--dryrun", *ECHO) == ""


def test_a_refused_command_fails_the_never_imports_check(env: Env) -> None:
    # refused (a mistyped option; the default image a container scheduler refuses):
    # nothing imported, which proves nothing
    with pytest.raises(AssertionError, match="exited 2"):
        _loaded(env, "run", "-s", "docker", "--no-such-option", *ECHO)
    with pytest.raises(AssertionError, match="exited 2"):
        _loaded(env, "run", "-s", "docker", "--dryrun", "utils.echo", "--msg", "hi")


def test_a_dry_run_prints_the_containers(env: Env) -> None:
    proc = env.torchx("run", "-s", "local_docker", "--dryrun", *ECHO)
    assert proc.returncode == 0, proc.stderr
    request = json.loads(proc.stdout[proc.stdout.index("{") :])
    [container] = request["containers"]
    assert container["config"]["command"] == ["hi"]


def test_no_engine_is_one_line(env: Env) -> None:
    engine = f"DOCKER_HOST=unix://{env.work}/no-such.sock"
    proc = env.run("env", engine, env.bin / "torchx", "run", "-s", "docker", *ECHO)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    [line] = proc.stderr.strip().splitlines()
    assert f"cannot reach the Docker engine at unix://{env.work}/no-such.sock" in line
