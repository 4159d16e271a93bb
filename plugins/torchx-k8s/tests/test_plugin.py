"""torchx-k8s is found like any plugin, and nothing but an API call imports the client."""

from __future__ import annotations

import subprocess
import sys

import pytest
from torchx_k8s.mcad import McadScheduler
from torchx_k8s.scheduler import KubernetesScheduler

from torchx.schedulers.testing.registration import PluginRegistration, modules_after


class TestRegistration(PluginRegistration):
    name = "kubernetes"
    plugin_module = "torchx_k8s.plugin"
    schedulers = {
        "kubernetes": "torchx_k8s.scheduler:create_scheduler",
        "kubernetes_mcad": "torchx_k8s.mcad:create_scheduler",
    }
    scheduler_classes = {"kubernetes": KubernetesScheduler, "kubernetes_mcad": McadScheduler}
    heavy = ("kubernetes",)


def test_a_dry_run_and_its_yaml_never_import_the_client() -> None:
    code = """
import sys
from torchx.components.dist import ddp
from torchx_k8s.scheduler import create_scheduler
info = create_scheduler("s").submit_dryrun(ddp(script="t.py", j="4x2", image="img"), {})
assert "kind: Job" in str(info)
"""
    loaded = modules_after(code)
    assert "torchx_k8s.scheduler" in loaded and "yaml" not in loaded
    assert not [m for m in loaded if m == "kubernetes" or m.startswith(("kubernetes.", "urllib3"))]


def test_an_appwrapper_dry_run_never_imports_the_client() -> None:
    code = """
import sys
from torchx.components.dist import ddp
from torchx_k8s.mcad import create_scheduler
app = ddp(script="t.py", j="2x1", image="img")
info = create_scheduler("s").submit_dryrun(app, {"appwrapper_version": "v1beta2"})
assert "kind: AppWrapper" in str(info)
"""
    loaded = modules_after(code)
    assert "torchx_k8s.mcad" in loaded and "yaml" not in loaded
    assert not [m for m in loaded if m == "kubernetes" or m.startswith(("kubernetes.", "urllib3"))]


def test_rbac_prints_a_role() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "torchx_k8s", "rbac", "--namespace", "team-a"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    import yaml

    role = yaml.safe_load(out)
    assert role["kind"] == "Role" and role["metadata"]["namespace"] == "team-a"
    rules = {(r["apiGroups"][0], r["resources"][0]): r["verbs"] for r in role["rules"]}
    assert rules[("batch.volcano.sh", "jobs/status")] == ["patch"]
    assert rules[("", "pods/log")] == ["get"]
    assert "patch" in rules[("workload.codeflare.dev", "appwrappers")]
    assert "deletecollection" in rules[("", "pods")]
    # a failed app's status reads the Secrets of secret_env, to mask their values
    assert rules[("", "secrets")] == ["get"]


@pytest.mark.parametrize("scheduler", ["kubernetes", "kubernetes_mcad"])
def test_the_components_default_image_is_refused_at_dry_run(scheduler: str) -> None:
    """The built-ins' image ``"."`` (the launch directory) is no container image: one line."""
    from torchx.runner import InvalidAppError, get_runner

    with get_runner() as runner, pytest.raises(InvalidAppError) as caught:
        runner.dryrun_component("utils.echo", ["--msg", "hi"], scheduler)
    assert str(caught.value).endswith(
        f"but scheduler '{scheduler}' runs container images: pass one with --image "
        "(e.g. --image python:3.12)"
    )
