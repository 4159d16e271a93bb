"""A stand-in for the API server behind a real ``kubernetes.client.ApiClient`` (unit tests).

Every generated API method of the client ends in ``ApiClient.call_api``; this subclass
answers there from a dict of objects and pods, records each call (method, path, query,
body), and can fail the next calls with given statuses (429, 503, 409, ...), or lose the
answer of a create that made its object (``lost_answers``).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

from kubernetes.client import ApiClient, Configuration
from kubernetes.client.exceptions import ApiException
from torchx_k8s import labels


class Raw:
    """What ``_preload_content=False`` returns: the body, read whole or in chunks."""

    def __init__(self, data: bytes) -> None:
        self.data = data

    def stream(self, amt: int, decode_content: bool = True) -> Any:
        for i in range(0, len(self.data), amt):
            yield self.data[i : i + amt]

    def release_conn(self) -> None:
        pass


def api_error(
    status: int, message: str = "", headers: dict[str, str] | None = None
) -> ApiException:
    e = ApiException(status=status, reason=message or "error")
    e.body = json.dumps({"kind": "Status", "message": message, "code": status})
    e.headers = headers or {}
    return e


def pod(
    name: str,
    role_index: int,
    k: int,
    phase: str,
    *,
    role: str = "r0",
    age: int = 0,
    exit_code: int | None = None,
    waiting: str | None = None,
    unschedulable: str | None = None,
) -> dict[str, Any]:
    """A pod as the API returns it: replica ``k`` of role ``role_index`` of app ``name``."""
    created = (datetime(2026, 11, 25, tzinfo=UTC) + timedelta(seconds=age)).strftime(
        "%Y-%m-%dT%H:%M:%SZ"
    )
    status: dict[str, Any] = {"phase": phase}
    cs: dict[str, Any] = {"name": f"{role}-{k}", "restartCount": 0, "state": {}}
    if exit_code is not None:
        cs["state"] = {
            "terminated": {
                "exitCode": exit_code,
                "reason": "Error" if exit_code else "Completed",
                "finishedAt": created,
            }
        }
    if waiting:
        cs["state"] = {"waiting": {"reason": waiting, "message": "pull access denied"}}
    status["containerStatuses"] = [cs]
    if unschedulable:
        status["conditions"] = [
            {
                "type": "PodScheduled",
                "status": "False",
                "reason": "Unschedulable",
                "message": unschedulable,
            }
        ]
    return {
        "metadata": {
            "name": f"{name}-{role}-{k}-0",
            "creationTimestamp": created,
            "labels": {
                labels.MANAGED_BY: labels.MANAGER,
                labels.INSTANCE: name,
                labels.ROLE_INDEX: str(role_index),
                labels.REPLICA_ID: str(k),
                labels.ROLE_NAME: role,
            },
        },
        "spec": {
            "containers": [{"name": f"{role}-{k}"}],
            "hostname": f"{name}-{role}-{k}-0",
            "subdomain": name,
        },
        "status": status,
    }


class FakeApi(ApiClient):
    def __init__(self) -> None:
        super().__init__(Configuration())
        self.objects: dict[str, dict[str, Any]] = {}  # path -> object
        self.pods: list[dict[str, Any]] = []
        self.logs: dict[str, bytes] = {}  # pod name -> log text
        self.calls: list[tuple[str, str, dict[str, Any], Any]] = []
        self.fail_next: list[ApiException] = []
        #: raised by the next creates of an object *after* making it (an answer lost)
        self.lost_answers: list[ApiException] = []
        #: call number (1 = the first call) -> the error that call raises
        self.fail_call: dict[int, ApiException] = {}
        #: pod spec fields a dry run drops (a server older than fieldValidation=Strict)
        self.unknown_pod_fields: set[str] = set()
        #: path -> the errors its next calls raise, one each (RBAC's 403, an outage's 503)
        self.refuse: dict[str, list[ApiException]] = {}

    def add_secret(self, namespace: str, name: str, data: dict[str, str]) -> None:
        """A Secret as the API keeps it (``data`` base64-encoded)."""
        import base64

        self.objects[f"/api/v1/namespaces/{namespace}/secrets/{name}"] = {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": name, "namespace": namespace},
            "data": {k: base64.b64encode(v.encode()).decode() for k, v in data.items()},
        }

    def call_api(
        self,
        resource_path: str,
        method: str,
        path_params: Any = None,
        query_params: Any = None,
        header_params: Any = None,
        body: Any = None,
        **kw: Any,
    ) -> Any:
        path = resource_path
        for k, v in (path_params or {}).items():
            path = path.replace("{" + k + "}", str(v))
        query = dict(query_params or [])
        self.calls.append((method, path, query, body))
        if self.fail_next:
            raise self.fail_next.pop(0)
        if len(self.calls) in self.fail_call:
            raise self.fail_call.pop(len(self.calls))
        if self.refuse.get(path):
            raise self.refuse[path].pop(0)
        raw = kw.get("_preload_content") is False
        if path.endswith("/log"):
            name = path.split("/")[-2]
            return Raw(self.logs.get(name, b""))
        if path.endswith("/pods") and method == "GET":
            selector = dict(s.split("=", 1) for s in query.get("labelSelector", "").split(",") if s)
            items = [
                p
                for p in self.pods
                if all(p["metadata"]["labels"].get(k) == v for k, v in selector.items())
            ]
            data = json.dumps({"items": items}).encode()
            return Raw(data) if raw else json.loads(data)
        if path.endswith("/pods") and method == "POST":  # a dry run: the pod as it would be
            stored = json.loads(json.dumps(body))
            for field in self.unknown_pod_fields:  # dropped as an older server drops them
                stored["spec"].pop(field, None)
            return Raw(json.dumps(stored).encode()) if raw else stored
        if path.endswith("/pods") and method == "DELETE":  # deletecollection by selector
            selector = dict(s.split("=", 1) for s in query.get("labelSelector", "").split(",") if s)
            # field selectors as the API server reads them: status.phase!=PHASE, and-ed
            kept_phases = {
                s.split("!=", 1)[1]
                for s in query.get("fieldSelector", "").split(",")
                if s.startswith("status.phase!=")
            }
            self.pods = [
                p
                for p in self.pods
                if not all(p["metadata"]["labels"].get(k) == v for k, v in selector.items())
                or (p.get("status") or {}).get("phase") in kept_phases
            ]
            return {"kind": "Status"}
        if method == "POST":
            key = f"{path}/{body['metadata']['name']}"
            if key in self.objects:
                raise api_error(409, "already exists")
            self.objects[key] = json.loads(json.dumps(body))
            if self.lost_answers:
                raise self.lost_answers.pop(0)
            return body
        base = path.removesuffix("/status")
        if method == "GET" and base in self.objects:
            found = self.objects[base]
            return Raw(json.dumps(found).encode()) if raw else found
        if method == "GET" and path.split("/")[-1] not in ("jobs", "jobsets", "appwrappers"):
            raise api_error(404, "not found")
        if method == "GET":
            prefix = path + "/"
            return {"items": [o for k, o in self.objects.items() if k.startswith(prefix)]}
        if method == "PATCH":
            if base not in self.objects:
                raise api_error(404, "not found")
            _merge(self.objects[base], body)
            return self.objects[base]
        if method == "DELETE":
            if self.objects.pop(base, None) is None:
                raise api_error(404, "not found")
            return {"kind": "Status"}
        raise AssertionError(f"unexpected call {method} {path}")


def _merge(base: dict[str, Any], patch: dict[str, Any]) -> None:
    for k, v in patch.items():
        if isinstance(v, dict) and isinstance(base.get(k), dict):
            _merge(base[k], v)
        else:
            base[k] = v
