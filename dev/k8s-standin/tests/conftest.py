"""Tests of the stand-in and the cluster DNS against the real API server and node of `dev/k8s up`.

Collected only when TORCHX_K8S_STANDIN_INTEGRATION=1 (``nox -s integration_k8s`` sets it
after `dev/docker up` and `dev/k8s up`). They make JobSets, AppWrappers and pods as raw
API objects, as any client would, and watch what the stand-in's controllers (whose pods
run on the real node) and the cluster DNS do with them.
"""

from __future__ import annotations

import os
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).resolve().parent
if os.environ.get("TORCHX_K8S_STANDIN_INTEGRATION") != "1":
    collect_ignore_glob = ["test_*.py"]
sys.path.insert(0, str(HERE.parent))

from k8s_standin.api import Api, ApiError  # noqa: E402

Obj = dict[str, Any]
STATE = Path(os.environ.get("TORCHX_DEV_K8S_DIR", "/var/tmp/torchx-dev-k8s"))
BUSYBOX = os.environ.get("TORCHX_DEV_DOCKER_BUSYBOX_IMAGE", "torchx-dev/busybox:1")


class Cluster:
    """The API server as the admin user, with waits that follow watch events."""

    def __init__(self) -> None:
        port = os.environ.get("TORCHX_DEV_K8S_PORT", "16443")
        etc = STATE / "etc"
        self.api = Api(f"https://127.0.0.1:{port}", (etc / "token").read_text().strip(),
                       str(etc / "server.crt"))  # fmt: skip

    def wait(self, path: str, name: str, pred: Callable[[Obj], bool], timeout: float = 60) -> Obj:
        """The object NAME in collection PATH once PRED holds for it (watch events)."""
        deadline = time.monotonic() + timeout
        last: Obj | None = None
        sel = f"metadata.name={name}"
        while time.monotonic() < deadline:
            listing = self.api.get(path, fieldSelector=sel)
            for o in listing["items"]:
                last = o
                if pred(o):
                    return o
            rv = listing["metadata"]["resourceVersion"]
            for ev in self.api.watch(
                f"{path}?fieldSelector={sel}", rv, timeout=deadline - time.monotonic()
            ):
                if ev["type"] in ("ADDED", "MODIFIED"):
                    last = ev["object"]
                    if pred(last):
                        return last
                if time.monotonic() > deadline:
                    break
        raise AssertionError(f"{path}/{name}: condition not met in {timeout}s; last seen: {last}")

    def wait_gone(self, path: str, name: str, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            listing = self.api.get(path, fieldSelector=f"metadata.name={name}")
            if not listing["items"]:
                return
            rv = listing["metadata"]["resourceVersion"]
            for ev in self.api.watch(f"{path}?fieldSelector=metadata.name={name}", rv,
                                     timeout=deadline - time.monotonic()):  # fmt: skip
                if ev["type"] == "DELETED":
                    return
        raise AssertionError(f"{path}/{name} still there after {timeout}s")

    def pods(self, ns: str, selector: str = "") -> list[Obj]:
        items = self.api.get(f"/api/v1/namespaces/{ns}/pods", labelSelector=selector or None)[
            "items"
        ]
        return sorted(items, key=lambda p: p["metadata"]["name"])

    def log(self, ns: str, pod: str, **params: Any) -> str:
        conn = self.api._conn(120)
        q = "&".join(f"{k}={v}" for k, v in params.items())
        conn.request("GET", f"/api/v1/namespaces/{ns}/pods/{pod}/log?{q}",
                     headers={"Authorization": f"Bearer {self.api.token}"})  # fmt: skip
        resp = conn.getresponse()
        body = resp.read().decode()
        conn.close()
        assert resp.status == 200, f"log of {pod}: HTTP {resp.status}: {body}"
        return body


@pytest.fixture(scope="session")
def cluster() -> Cluster:
    try:
        c = Cluster()
        nodes = c.api.get("/api/v1/nodes")["items"]
    except (OSError, ApiError) as e:
        pytest.fail(f'no API server from dev/k8s ({e}): run `eval "$(dev/k8s up)"` first')
    # the Node object outlives the stand-in (etcd keeps it): dev/k8s says whether it runs
    running = os.environ.get("TORCHX_DEV_K8S_STANDIN") == "1"
    if not running or not any(n["metadata"]["name"] == "torchx-dev-node" for n in nodes):
        pytest.fail(
            'the stand-in or the node does not run: `eval "$(dev/docker up)"`, then'
            ' `eval "$(dev/k8s up)"` (which sets TORCHX_DEV_K8S_STANDIN=1)'
        )
    return c


@pytest.fixture
def ns(cluster: Cluster) -> Iterator[str]:
    """A namespace of this test's own, deleted afterwards (the controller manager empties it)."""
    name = f"standin-{uuid.uuid4().hex[:8]}"
    cluster.api.create("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                              "metadata": {"name": name}})  # fmt: skip
    yield name
    cluster.api.delete(f"/api/v1/namespaces/{name}")


def container(cmd: str, name: str = "main", **extra: Any) -> Obj:
    return {"name": name, "image": BUSYBOX, "command": ["sh", "-c", cmd], **extra}
