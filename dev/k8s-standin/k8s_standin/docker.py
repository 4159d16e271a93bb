"""A small Docker Engine API client over its unix socket (stdlib only)."""

from __future__ import annotations

import http.client
import json
import socket
import struct
import urllib.parse
from collections.abc import Iterator
from typing import Any

API = "/v1.41"


class DockerError(Exception):
    def __init__(self, status: int, message: str) -> None:
        self.status = status
        self.message = message
        super().__init__(f"docker HTTP {status}: {message}")


class _UnixConnection(http.client.HTTPConnection):
    def __init__(self, path: str, timeout: float | None) -> None:
        super().__init__("localhost", timeout=timeout)
        self.unix_path = path

    def connect(self) -> None:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(self.timeout)
        s.connect(self.unix_path)
        self.sock = s


class Docker:
    def __init__(self, host: str) -> None:
        if not host.startswith("unix://"):
            raise ValueError(f"DOCKER_HOST must be unix:///PATH, got {host!r}")
        self.path = host[len("unix://") :]

    def _send(
        self,
        method: str,
        path: str,
        params: dict[str, Any] | None,
        body: Any,
        timeout: float | None,
    ) -> tuple[_UnixConnection, http.client.HTTPResponse]:
        if params:
            path += "?" + urllib.parse.urlencode({k: v for k, v in params.items() if v is not None})
        conn = _UnixConnection(self.path, timeout)
        data = None if body is None else json.dumps(body).encode()
        headers = {"Content-Type": "application/json"} if data is not None else {}
        conn.request(method, API + path, body=data, headers=headers)
        return conn, conn.getresponse()

    def request(
        self,
        method: str,
        path: str,
        params: dict[str, Any] | None = None,
        body: Any = None,
        timeout: float | None = 60,
    ) -> Any:
        conn, resp = self._send(method, path, params, body, timeout)
        try:
            raw = resp.read()
        finally:
            conn.close()
        try:
            answer = json.loads(raw) if raw else None
        except ValueError:
            answer = raw.decode(errors="replace")
        if resp.status >= 300:
            msg = answer.get("message") if isinstance(answer, dict) else str(answer)
            raise DockerError(resp.status, str(msg).strip())
        return answer

    def stream(
        self,
        method: str,
        path: str,
        params: dict[str, Any] | None = None,
        timeout: float | None = None,
    ) -> tuple[_UnixConnection, http.client.HTTPResponse]:
        conn, resp = self._send(method, path, params, None, timeout)
        if resp.status >= 300:
            raw = resp.read()
            conn.close()
            try:
                msg = json.loads(raw).get("message", "")
            except ValueError:
                msg = raw.decode(errors="replace")
            raise DockerError(resp.status, str(msg).strip())
        return conn, resp

    # --- images -------------------------------------------------------------------------

    def image_exists(self, image: str) -> bool:
        try:
            self.request("GET", f"/images/{urllib.parse.quote(image, safe='')}/json")
            return True
        except DockerError as e:
            if e.status == 404:
                return False
            raise

    def pull(self, image: str) -> None:
        """Pulls IMAGE; a DockerError with the engine's message when it cannot."""
        repo, tag = split_image(image)
        conn, resp = self.stream("POST", "/images/create", {"fromImage": repo, "tag": tag}, 300)
        try:
            for line in resp:
                if line.strip():
                    msg = json.loads(line)
                    if msg.get("error"):
                        raise DockerError(500, str(msg["error"]).strip())
        finally:
            conn.close()

    # --- containers ---------------------------------------------------------------------

    def containers(self, labels: list[str]) -> list[dict[str, Any]]:
        filters = json.dumps({"label": labels})
        return self.request("GET", "/containers/json", {"all": "1", "filters": filters})  # type: ignore[no-any-return]

    def inspect(self, cid: str) -> dict[str, Any]:
        return self.request("GET", f"/containers/{cid}/json")  # type: ignore[no-any-return]

    def create(self, name: str, config: dict[str, Any]) -> str:
        return str(self.request("POST", "/containers/create", {"name": name}, config)["Id"])

    def start(self, cid: str) -> None:
        self.request("POST", f"/containers/{cid}/start")

    def stop(self, cid: str, grace: int) -> None:
        try:
            self.request("POST", f"/containers/{cid}/stop", {"t": grace}, timeout=grace + 30)
        except DockerError as e:
            if e.status not in (304, 404):
                raise

    def remove(self, cid: str) -> None:
        try:
            self.request("DELETE", f"/containers/{cid}", {"force": "1", "v": "1"})
        except DockerError as e:
            if e.status != 404:
                raise

    def logs(self, cid: str, params: dict[str, Any]) -> Iterator[bytes]:
        """The container's output (stdout and stderr interleaved as written), in pieces."""
        conn, resp = self.stream(
            "GET", f"/containers/{cid}/logs", {"stdout": "1", "stderr": "1", **params}
        )
        try:
            while True:
                header = _read_exactly(resp, 8)
                if len(header) < 8:
                    return
                _, size = struct.unpack(">BxxxL", header)
                payload = _read_exactly(resp, size)
                if payload:
                    yield payload
                if len(payload) < size:
                    return
        finally:
            conn.close()

    def events(self, labels: list[str]) -> Iterator[dict[str, Any]]:
        filters = json.dumps({"type": ["container"], "label": labels})
        conn, resp = self.stream("GET", "/events", {"filters": filters})
        try:
            while True:
                line = resp.readline()
                if not line:
                    return
                if line.strip():
                    yield json.loads(line)
        finally:
            conn.close()

    # --- networks -----------------------------------------------------------------------

    def network(self, name: str) -> dict[str, Any] | None:
        try:
            return self.request("GET", f"/networks/{name}")  # type: ignore[no-any-return]
        except DockerError as e:
            if e.status == 404:
                return None
            raise

    def create_network(self, name: str, labels: dict[str, str], subnet: str) -> None:
        body = {
            "Name": name,
            "Driver": "bridge",
            "CheckDuplicate": True,
            "Labels": labels,
            "IPAM": {"Driver": "default", "Config": [{"Subnet": subnet}]},
        }
        try:
            self.request("POST", "/networks/create", body=body)
        except DockerError as e:
            if e.status != 409:
                raise

    def remove_network(self, name: str) -> None:
        try:
            self.request("DELETE", f"/networks/{name}")
        except DockerError as e:
            if e.status not in (404, 403, 409):
                raise


def _read_exactly(resp: http.client.HTTPResponse, n: int) -> bytes:
    out = b""
    while len(out) < n:
        chunk = resp.read(n - len(out))
        if not chunk:
            break
        out += chunk
    return out


def split_image(image: str) -> tuple[str, str]:
    """("repo", "tag") of an image reference; "latest" when it names no tag."""
    if "@" in image:
        repo, digest = image.split("@", 1)
        return repo, digest
    slash = image.rfind("/")
    colon = image.rfind(":")
    if colon > slash:
        return image[:colon], image[colon + 1 :]
    return image, "latest"
