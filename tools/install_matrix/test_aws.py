"""Row: torchx-cli + torchx-aws. boto3 comes along, and stays unimported.

No AWS endpoint here (``nox -s integration_aws`` uses an emulator on loopback): the row
checks what the install gives, that ``torchx --help``, ``torchx plugins``, a local run,
``torchx runopts aws_batch`` and an aws_batch dry run never import boto3, and that the
README's dry run prints the multi-node job.
"""

from __future__ import annotations

import json
import re
import shlex

import pytest
from conftest import ECHO, REPO, Env, MakeEnv, loaded

#: boto3 and botocore: never imported by what these tests run
SDK = ("boto3", "botocore")


@pytest.fixture(scope="module")
def env(make_env: MakeEnv) -> Env:
    return make_env("aws", "torchx-cli", "torchx-aws")


def _loaded(env: Env, *argv: str) -> str:
    """Which of :data:`SDK` ``torchx *argv`` imported; the command must succeed."""
    return loaded(env, SDK, *argv)


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


def test_runopts_and_dry_runs_never_import_boto3(env: Env) -> None:
    assert _loaded(env, "runopts", "aws_batch") == ""
    dry = ["run", "-s", "aws_batch", "--dryrun", "-cfg", "queue=q", *ECHO]
    assert _loaded(env, *dry) == ""


def test_the_readmes_dry_run(env: Env) -> None:
    text = (REPO / "plugins" / "torchx-aws" / "README.md").read_text()
    [line] = [x for x in text.splitlines() if x.startswith("torchx run -s aws_batch --dryrun")]
    argv = shlex.split(re.sub(r"\s+#.*$", "", line))[1:]
    proc = env.torchx(*argv)
    assert proc.returncode == 0, proc.stderr
    # the AppDef comes first, then the request (JSON, from its first line "{")
    request = json.loads(proc.stdout[proc.stdout.index('{\n  "region"') :])
    assert request["queue"] == "gpu"
    props = request["register_job_definition"]["nodeProperties"]
    assert props["numNodes"] == 2 and props["mainNode"] == 0
    [node_range] = props["nodeRangeProperties"]
    assert node_range["targetNodes"] == "0:1"
    assert node_range["container"]["image"] == "my/torch:1"
