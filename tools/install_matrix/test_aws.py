"""Row: torchx-cli + torchx-aws. boto3 comes along, and stays unimported.

No AWS endpoint here (``nox -s integration_aws`` uses an emulator on loopback): the row
checks what the install gives, and that ``torchx --help``, ``torchx plugins`` and a
local run never import boto3.
"""

from __future__ import annotations

import pytest
from conftest import Env, MakeEnv

_LOADED = (
    "import sys, runpy; sys.argv = ['torchx', *{argv!r}];\n"
    "try:\n"
    "    runpy.run_module('torchx.cli.main', run_name='__main__')\n"
    "except SystemExit:\n"
    "    pass\n"
    "print('LOADED=' + ','.join(m for m in ('boto3', 'botocore') if m in sys.modules))\n"
)


@pytest.fixture(scope="module")
def env(make_env: MakeEnv) -> Env:
    return make_env("aws", "torchx-cli", "torchx-aws")


def _loaded(env: Env, *argv: str) -> str:
    proc = env.python_code(_LOADED.format(argv=list(argv)))
    [line] = [x for x in proc.stdout.splitlines() if x.startswith("LOADED=")]
    return line.removeprefix("LOADED=")


def test_boto3_is_installed_with_the_plugin(env: Env) -> None:
    installed = env.installed()
    assert {"torchx-aws", "boto3", "botocore", "torchx-cli"} <= installed, sorted(installed)
    assert not {"kubernetes", "docker", "torchx-docker"} & installed


def test_the_plugin_loads_cleanly(env: Env) -> None:
    proc = env.torchx("plugins")
    assert proc.returncode == 0, proc.stderr
    assert "torchx-aws" in proc.stdout or "aws" in proc.stdout, proc.stdout
    assert "error" not in (proc.stdout + proc.stderr).lower()


def test_help_and_local_runs_never_import_boto3(env: Env) -> None:
    assert _loaded(env, "--help") == ""
    assert _loaded(env, "plugins") == ""
    assert _loaded(env, "run", "-s", "local", "--wait", "utils.echo", "--msg", "hi") == ""
