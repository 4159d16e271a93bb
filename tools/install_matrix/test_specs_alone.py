"""Row: torchx-specs alone. Its doctests pass with nothing but its declared dependencies."""

from __future__ import annotations

import json

import pytest
from conftest import Env, MakeEnv

#: What a torchx-specs install may hold: itself and its PyPI dependencies (cattrs brings
#: typing-extensions). Anything else means a dependency crept in.
ALLOWED = {"torchx-specs", "attrs", "cattrs", "pluggy", "typing-extensions"}


@pytest.fixture(scope="module")
def env(make_env: MakeEnv) -> Env:
    return make_env("specs", "torchx-specs")


def test_nothing_beyond_its_dependencies_is_installed(env: Env) -> None:
    installed = env.installed()
    assert "torchx-specs" in installed
    assert installed <= ALLOWED, f"unexpected distributions: {sorted(installed - ALLOWED)}"


@pytest.mark.parametrize(
    "module", ["torchx.runner", "torchx.schedulers", "torchx.components", "torchx.cli"]
)
def test_other_distributions_are_not_importable(env: Env, module: str) -> None:
    proc = env.python_code(f"import {module}")
    assert proc.returncode == 1
    assert f"No module named '{module}'" in proc.stderr


def test_its_doctests_pass(env: Env) -> None:
    code = """
import doctest, importlib, json, pkgutil
import torchx.specs
names = ["torchx.specs"] + sorted(
    m.name for m in pkgutil.walk_packages(torchx.specs.__path__, prefix="torchx.specs.")
)
attempted = failed = 0
for name in names:
    result = doctest.testmod(importlib.import_module(name))
    attempted += result.attempted
    failed += result.failed
print(json.dumps({"modules": len(names), "attempted": attempted, "failed": failed}))
"""
    proc = env.python_code(code)
    assert proc.returncode == 0, proc.stderr
    *report, summary = proc.stdout.strip().splitlines()
    result = json.loads(summary)
    assert result["failed"] == 0, "\n".join(report)
    assert result["modules"] >= 10 and result["attempted"] >= 50, result


def test_plugin_registry_sees_only_its_own_sizes(env: Env) -> None:
    code = """
from torchx.specs.plugins import get_registry
r = get_registry()
print(sorted(r.schedulers), len(r.named_resources), r.failures, r.clashes)
print(r.named_resource_factory("gpu.small")().gpu)
"""
    proc = env.python_code(code)
    assert proc.returncode == 0, proc.stderr
    first, second = proc.stdout.splitlines()
    assert first.startswith("[] ") and first.endswith(" () ()")
    assert int(second) >= 1


def test_aws_instance_types_resolve_from_the_built_wheel(env: Env) -> None:
    # the wheel carries the AWS table and its own plugin names it: no torchx-aws needed
    code = """
from torchx.specs import resource
r = resource(h="aws_p4d.24xlarge")
print(r.cpu, r.gpu, r.devices["vpc.amazonaws.com/efa"], r.capabilities)
"""
    proc = env.python_code(code)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "96 8 4 {'node.kubernetes.io/instance-type': 'p4d.24xlarge'}"
