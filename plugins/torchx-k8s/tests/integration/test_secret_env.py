"""``secret_env`` values an app printed are masked by ``torchx status`` (issue 35).

The pods read their variables from a real Secret (``secretKeyRef``, resolved by the real
kubelet); the app prints them to stderr and fails, so its status quotes them. A new
``torchx status`` process (it knows no run option) masks them, DB_URL's too although its
name does not look secret: the status of the FAILED app read the Secret (one GET).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from k8scmd import Made, image

from torchx.schedulers.testing.cli import TorchxCli
from torchx.specs import parse_app_handle

TOKEN = "hf_it-tok3n-8c1e"
URL = "postgres://svc:pw-it-5d20@db.example"


@pytest.fixture
def secret(kube: Any) -> Iterator[str]:
    """A Secret of ``default`` holding ``token`` and ``url``, deleted afterwards."""
    from kubernetes import client

    name = f"it-creds-{uuid.uuid4().hex[:8]}"
    core = client.CoreV1Api(kube)
    body = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name},
        "stringData": {"token": TOKEN, "url": URL},
    }
    core.create_namespaced_secret("default", body)
    yield name
    core.delete_namespaced_secret(name, "default")


@pytest.mark.parametrize("flavour", ["volcano", "jobset"])
def test_status_masks_the_secret_env_values_a_failed_app_printed(
    cli: TorchxCli, made: Made, secret: str, flavour: str
) -> None:
    handle, _ = cli.run(
        "-cfg", f"flavour={flavour}",
        "-cfg", f"secret_env=HF_TOKEN:{secret}/token,DB_URL:{secret}/url",
        "utils.sh", "--image", image(),
        "sh", "-c", 'echo "login to $DB_URL with $HF_TOKEN refused" >&2; exit 1',
    )  # fmt: skip
    made.add(parse_app_handle(handle).app_id)
    cli.wait_state(handle, {"FAILED"}, timeout=180)
    shown = cli("status", "--show-secrets", handle).stdout
    # the values reached the app (the kubelet read the Secret) and the status quotes them
    assert TOKEN in shown and URL in shown, shown
    for extra in ([], ["--json"]):
        out = cli("status", *extra, handle).stdout
        assert TOKEN not in out and URL not in out, out
        assert "login to **** with **** refused" in out, out
    doc = json.loads(cli("status", "--json", handle).stdout)
    [replica] = doc["data"]["status"]["roles"][0]["replicas"]
    assert replica["exit_code"] == 1, replica
