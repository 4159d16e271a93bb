"""dev/k8s without a server: its `env` contract, its bad-input line, and its CRD manifests.

Starting the real server needs root and a 6-to-20-minute build the first time, so this
stays with what runs anywhere in a second: the manifests must be ones a 1.20 API server
accepts (structural schemas, no schema features newer than 1.20), since `up` applies them
to exactly that server and a rejected manifest only shows there.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import REPO

SCRIPT = REPO / "dev" / "k8s"
CRDS = sorted((REPO / "dev" / "k8s-crds").glob("*.yaml"))

# The keys of apiextensions.k8s.io/v1 JSONSchemaProps a 1.20 server knows (no
# x-kubernetes-validations: that came in 1.23).
_KNOWN_1_20 = {
    "type", "format", "description", "properties", "additionalProperties", "items",
    "required", "enum", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
    "minLength", "maxLength", "pattern", "minItems", "maxItems", "uniqueItems",
    "minProperties", "maxProperties", "nullable", "default", "anyOf", "allOf", "oneOf",
    "not", "title", "example", "multipleOf", "externalDocs",
    "x-kubernetes-preserve-unknown-fields", "x-kubernetes-int-or-string",
    "x-kubernetes-embedded-resource", "x-kubernetes-list-type",
    "x-kubernetes-list-map-keys", "x-kubernetes-map-type",
}  # fmt: skip


def _run(*args: str, state: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "TORCHX_DEV_K8S_DIR": str(state)}
    return subprocess.run([str(SCRIPT), *args], env=env, capture_output=True, text=True, timeout=60)


def test_env_prints_only_the_export_lines_and_touches_nothing(tmp_path: Path) -> None:
    state = tmp_path / "state"
    done = _run("env", state=state)
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"export KUBECONFIG={state}/etc/kubeconfig\n"
    assert done.stderr == ""
    assert not state.exists()


def test_an_unknown_command_is_one_line_and_fails(tmp_path: Path) -> None:
    done = _run("upp", state=tmp_path / "state")
    assert done.returncode != 0
    assert done.stdout == ""
    assert done.stderr.splitlines() == [
        "dev/k8s: usage: dev/k8s up|down|status|env|build (got 'upp')"
    ]


def _nodes(schema: dict[str, Any], path: str) -> Iterator[tuple[str, dict[str, Any]]]:
    yield path, schema
    for name, sub in (schema.get("properties") or {}).items():
        yield from _nodes(sub, f"{path}.{name}")
    if isinstance(schema.get("additionalProperties"), dict):
        yield from _nodes(schema["additionalProperties"], f"{path}.*")
    if isinstance(schema.get("items"), dict):
        yield from _nodes(schema["items"], f"{path}[]")


def test_there_are_the_crds_the_stand_in_plays_controllers_for() -> None:
    kinds = set()
    for path in CRDS:
        crd = yaml.safe_load(path.read_text())
        spec = crd["spec"]
        for version in spec["versions"]:
            kinds.add((spec["group"], version["name"], spec["names"]["kind"]))
    assert kinds == {
        ("batch.volcano.sh", "v1alpha1", "Job"),
        ("jobset.x-k8s.io", "v1alpha2", "JobSet"),
        ("workload.codeflare.dev", "v1beta1", "AppWrapper"),
        ("workload.codeflare.dev", "v1beta2", "AppWrapper"),
        ("scheduling.sigs.k8s.io", "v1alpha1", "PodGroup"),
        ("scheduling.x-k8s.io", "v1alpha1", "PodGroup"),
    }


@pytest.mark.parametrize("path", CRDS, ids=[p.name for p in CRDS])
def test_the_crd_is_one_a_1_20_api_server_accepts(path: Path) -> None:
    crd = yaml.safe_load(path.read_text())
    assert crd["apiVersion"] == "apiextensions.k8s.io/v1"
    assert crd["kind"] == "CustomResourceDefinition"
    spec = crd["spec"]
    # the server requires the name <plural>.<group>; `up` reads it from the file
    assert crd["metadata"]["name"] == f"{spec['names']['plural']}.{spec['group']}"
    assert [v["storage"] for v in spec["versions"]].count(True) == 1
    problems = []
    for version in spec["versions"]:
        for where, node in _nodes(version["schema"]["openAPIV3Schema"], version["name"]):
            unknown = set(node) - _KNOWN_1_20
            if unknown:
                problems.append(f"{where}: keys a 1.20 server does not know: {sorted(unknown)}")
            # structural: every node has a type, unless it keeps unknown fields as given or
            # is an int-or-string (a quantity: anyOf integer/string, which has no type)
            if "type" not in node and not (
                node.get("x-kubernetes-preserve-unknown-fields")
                or node.get("x-kubernetes-int-or-string")
            ):
                problems.append(f"{where}: no type")
            if node.get("type") == "object" and not (
                "properties" in node
                or "additionalProperties" in node
                or node.get("x-kubernetes-preserve-unknown-fields")
                or where.endswith(".metadata")
            ):
                problems.append(f"{where}: an object that would be pruned to {{}}")
            if where.endswith(".template") and not node.get("x-kubernetes-preserve-unknown-fields"):
                problems.append(f"{where}: a template must be kept as given")
    assert not problems, "\n".join(problems)
