"""torchx-k8s is found like any plugin, and nothing but an API call imports the client."""

from __future__ import annotations

import subprocess
import sys
from importlib.metadata import entry_points

from torchx_k8s.scheduler import KubernetesScheduler

from torchx.specs.plugins import get_registry


def test_the_entry_point_names_the_plugin_module() -> None:
    [ep] = [ep for ep in entry_points(group="torchx") if ep.name == "kubernetes"]
    assert ep.value == "torchx_k8s.plugin"


def test_kubernetes_creates_the_scheduler() -> None:
    sched = get_registry().scheduler_factory("kubernetes")("sess")
    assert isinstance(sched, KubernetesScheduler) and sched.session_name == "sess"


def _modules_after(code: str) -> list[str]:
    out = subprocess.run(
        [sys.executable, "-c", code + "\nprint(sorted(m for m in sys.modules))"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    return eval(out[-1])  # a list literal printed by the child


def test_importing_the_plugin_imports_nothing_heavy() -> None:
    loaded = _modules_after("import sys, torchx_k8s, torchx_k8s.plugin as p; p.torchx_schedulers()")
    assert [m for m in loaded if m.startswith("torchx_k8s")] == [
        "torchx_k8s",
        "torchx_k8s._version",
        "torchx_k8s.plugin",
    ]
    assert "kubernetes" not in loaded


def test_a_dry_run_and_its_yaml_never_import_the_client() -> None:
    code = """
import sys
from torchx.components.dist import ddp
from torchx_k8s.scheduler import create_scheduler
info = create_scheduler("s").submit_dryrun(ddp(script="t.py", j="4x2", image="img"), {})
assert "kind: Job" in str(info)
"""
    loaded = _modules_after(code)
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
    loaded = _modules_after(code)
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
