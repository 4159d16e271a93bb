"""Row: torchx-cli + torchx-k8s. The kubernetes client comes along, and stays unimported.

No cluster here (``nox -s integration_k8s`` uses a real API server): the row checks what
the install gives, that ``torchx --help``, ``torchx run -s local`` and a kubernetes (and
kubernetes_mcad) dry run never import the client, that the dry runs print the Volcano Job
and the AppWrapper, and that a missing kubeconfig is one line.
"""

from __future__ import annotations

import shlex

import pytest
from conftest import ECHO, Env, MakeEnv, loaded

#: the kubernetes client and what it brings: never imported by what these tests run
SDK = ("kubernetes", "urllib3")


@pytest.fixture(scope="module")
def env(make_env: MakeEnv) -> Env:
    return make_env("k8s", "torchx-cli", "torchx-k8s")


def _loaded(env: Env, *argv: str) -> str:
    """Which of :data:`SDK` ``torchx *argv`` imported; the command must succeed."""
    return loaded(env, SDK, *argv)


def test_the_client_is_installed_with_the_plugin(env: Env) -> None:
    installed = env.installed()
    assert {"torchx-k8s", "kubernetes", "torchx-cli"} <= installed, sorted(installed)
    assert not {"docker", "boto3", "torchx-docker"} & installed


def test_help_local_runs_and_dry_runs_never_import_the_client(env: Env) -> None:
    assert _loaded(env, "--help") == ""
    assert _loaded(env, "run", "-s", "local", "--wait", "utils.echo", "--msg", "hi") == ""
    assert _loaded(env, "runopts", "kubernetes") == ""
    assert _loaded(env, "run", "-s", "kubernetes", "--dryrun", *ECHO) == ""
    assert _loaded(env, "runopts", "kubernetes_mcad") == ""
    dry_run = ["run", "-s", "kubernetes_mcad", "--dryrun", *ECHO]
    assert _loaded(env, *dry_run) == ""


def test_a_dry_run_prints_the_volcano_job(env: Env) -> None:
    proc = env.torchx("run", "-s", "kubernetes", "--dryrun", *ECHO)
    assert proc.returncode == 0, proc.stderr
    assert "apiVersion: batch.volcano.sh/v1alpha1" in proc.stdout
    assert "kind: Job" in proc.stdout and "- hi" in proc.stdout


def test_the_readmes_appwrapper_dry_run(env: Env) -> None:
    line = "torchx run -s kubernetes_mcad --dryrun dist.ddp -j 2x1 --image my/torch:1 --script train.py"
    proc = env.torchx(*shlex.split(line)[1:])  # the README's line, verbatim
    assert proc.returncode == 0, proc.stderr
    assert "apiVersion: workload.codeflare.dev/v1beta1" in proc.stdout
    assert "kind: AppWrapper" in proc.stdout and "GenericItems:" in proc.stdout
    proc = env.torchx("runopts", "kubernetes_mcad")
    assert proc.returncode == 0 and "appwrapper_version" in proc.stdout, proc.stderr


def test_no_kubeconfig_is_one_line(env: Env) -> None:
    missing = f"KUBECONFIG={env.work}/no-such-kubeconfig"
    proc = env.run(
        "env",
        missing,
        "KUBERNETES_SERVICE_HOST=",
        env.bin / "torchx",
        "run",
        "-s",
        "kubernetes",
        "-cfg",
        "validate_spec=False",
        *ECHO,
    )
    assert proc.returncode == 1, proc.stdout + proc.stderr
    [line] = proc.stderr.strip().splitlines()
    assert "cannot use the kubeconfig" in line
