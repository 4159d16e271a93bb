"""A small Kubernetes API client over HTTPS (stdlib only).

The stand-in runs from `dev/k8s` on any machine with a python3, without a venv: it needs
requests, watches and status writes, which a few dozen lines of http.client give. Each
thread keeps its own keep-alive connection (http.client connections are not thread-safe).
"""

from __future__ import annotations

import http.client
import json
import ssl
import threading
import time
import urllib.parse
from collections.abc import Iterator
from typing import Any

Obj = dict[str, Any]


class ApiError(Exception):
    """An answer other than 2xx: its HTTP status and the server's Status message."""

    def __init__(self, status: int, body: Any) -> None:
        self.status = status
        self.body = body
        msg = body.get("message") if isinstance(body, dict) else body
        super().__init__(f"HTTP {status}: {msg}")


class Api:
    """Requests to one kube-apiserver as one bearer-token user."""

    def __init__(self, server: str, token: str, cafile: str) -> None:
        url = urllib.parse.urlsplit(server)
        self.host = url.hostname or "127.0.0.1"
        self.port = url.port or 443
        self.token = token
        self.ctx = ssl.create_default_context(cafile=cafile)
        self._local = threading.local()

    def _conn(self, timeout: float | None) -> http.client.HTTPSConnection:
        return http.client.HTTPSConnection(self.host, self.port, context=self.ctx, timeout=timeout)

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        params: dict[str, Any] | None = None,
        content_type: str = "application/json",
    ) -> Any:
        """One request; the decoded JSON answer. Raises ApiError for non-2xx answers."""
        if params:
            path += "?" + urllib.parse.urlencode({k: v for k, v in params.items() if v is not None})
        data = None if body is None else json.dumps(body).encode()
        headers = {"Authorization": f"Bearer {self.token}", "Accept": "application/json"}
        if data is not None:
            headers["Content-Type"] = content_type
        for attempt in range(3):
            conn = getattr(self._local, "conn", None)
            if conn is None:
                conn = self._local.conn = self._conn(30)
            try:
                conn.request(method, path, body=data, headers=headers)
                resp = conn.getresponse()
                raw = resp.read()
            except (OSError, http.client.HTTPException):
                conn.close()
                self._local.conn = None
                if attempt == 2:
                    raise
                time.sleep(0.2 * (attempt + 1))
                continue
            try:
                answer = json.loads(raw) if raw else None
            except ValueError:
                answer = raw.decode(errors="replace")
            if resp.status >= 300:
                raise ApiError(resp.status, answer)
            return answer
        raise AssertionError("unreachable")

    def get(self, path: str, **params: Any) -> Any:
        return self.request("GET", path, params=params or None)

    def create(self, path: str, obj: Obj) -> Obj:
        return self.request("POST", path, obj)  # type: ignore[no-any-return]

    def merge_patch(self, path: str, patch: Obj) -> Obj:
        return self.request(  # type: ignore[no-any-return]
            "PATCH", path, patch, content_type="application/merge-patch+json"
        )

    def delete(self, path: str, body: Obj | None = None) -> Any:
        """DELETE; a 404 (already gone) is not an error."""
        try:
            return self.request("DELETE", path, body)
        except ApiError as e:
            if e.status == 404:
                return None
            raise

    def watch(self, path: str, resource_version: str, timeout: float = 240) -> Iterator[Obj]:
        """The events of one watch request (it ends after TIMEOUT seconds, the server's)."""
        params = {
            "watch": "1",
            "resourceVersion": resource_version,
            "allowWatchBookmarks": "true",
            "timeoutSeconds": str(max(int(timeout), 1)),
        }
        conn = self._conn(max(timeout, 1) + 60)
        sep = "&" if "?" in path else "?"
        try:
            conn.request(
                "GET",
                path + sep + urllib.parse.urlencode(params),
                headers={"Authorization": f"Bearer {self.token}"},
            )
            resp = conn.getresponse()
            if resp.status != 200:
                raise ApiError(resp.status, resp.read().decode(errors="replace"))
            while True:
                line = resp.readline()
                if not line:
                    return
                if line.strip():
                    yield json.loads(line)
        finally:
            conn.close()


def obj_path(api_version: str, plural: str, namespace: str | None, name: str | None = None) -> str:
    """The REST path of a collection (name None) or of one object."""
    base = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
    if namespace is not None:
        base += f"/namespaces/{namespace}"
    base += f"/{plural}"
    if name is not None:
        base += f"/{name}"
    return base
