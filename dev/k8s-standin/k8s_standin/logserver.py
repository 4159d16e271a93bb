"""The kubelet's log endpoint, which the API server's pod log API proxies to.

``GET /containerLogs/NAMESPACE/POD/CONTAINER`` over HTTPS, with the kubelet's query
parameters: follow, tailLines, sinceSeconds, sinceTime, timestamps, limitBytes, previous.
Only the API server may call it: it must present the client certificate dev/k8s gave it
(--kubelet-client-certificate).
"""

from __future__ import annotations

import datetime as dt
import http.server
import logging
import ssl
import time
import urllib.parse
from typing import Any

from .docker import Docker, DockerError
from .kubelet import L_ATTEMPT, L_CONTAINER, L_NODE, L_UID
from .runtime import Informer

log = logging.getLogger("k8s-standin")


def serve(
    docker: Docker, pods: Informer, node: str, port: int, cert: str, key: str, client_ca: str
) -> http.server.ThreadingHTTPServer:
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    ctx.load_verify_locations(client_ca)
    ctx.verify_mode = ssl.CERT_REQUIRED

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            log.debug("kubelet api: " + format, *args)

        def _fail(self, code: int, msg: str) -> None:
            body = msg.encode()
            self.send_response(code)
            self.send_header("Content-Type", "text/plain; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:
            url = urllib.parse.urlsplit(self.path)
            parts = url.path.strip("/").split("/")
            if url.path in ("/healthz", "/healthz/"):
                self._fail(200, "ok")
                return
            if len(parts) != 4 or parts[0] != "containerLogs":
                self._fail(404, f"404 page not found: {url.path}")
                return
            _, ns, pod_name, cname = parts
            q = {k: v[-1] for k, v in urllib.parse.parse_qs(url.query).items()}
            pod = pods.get(f"{ns}/{pod_name}")
            if pod is None:
                self._fail(404, f'pod "{pod_name}" not found in namespace "{ns}"')
                return
            uid = pod["metadata"]["uid"]
            attempts = docker.containers(
                [f"{L_NODE}={node}", f"{L_UID}={uid}", f"{L_CONTAINER}={cname}"]
            )
            attempts.sort(key=lambda c: int(c["Labels"].get(L_ATTEMPT, "0")))
            want_previous = q.get("previous") == "true"
            if want_previous:
                if len(attempts) < 2:
                    self._fail(
                        400,
                        f'previous terminated container "{cname}" in pod "{pod_name}" not found',
                    )
                    return
                target = attempts[-2]
            elif attempts:
                target = attempts[-1]
            else:
                self._fail(
                    400,
                    f'container "{cname}" in pod "{pod_name}" is waiting to start: ContainerCreating',
                )
                return
            params: dict[str, Any] = {}
            follow = q.get("follow") == "true" and not want_previous
            if follow:
                params["follow"] = "1"
            if "tailLines" in q:
                params["tail"] = q["tailLines"]
            if "sinceSeconds" in q:
                params["since"] = str(int(time.time()) - int(q["sinceSeconds"]))
            elif "sinceTime" in q:
                when = dt.datetime.fromisoformat(q["sinceTime"].replace("Z", "+00:00"))
                params["since"] = f"{when.timestamp():.9f}"
            if q.get("timestamps") == "true":
                params["timestamps"] = "1"
            limit = int(q["limitBytes"]) if "limitBytes" in q else None
            try:
                info = docker.inspect(target["Id"])
                chunks = (
                    _raw(docker, target["Id"], params)
                    if info["Config"].get("Tty")
                    else docker.logs(target["Id"], params)
                )
                self.send_response(200)
                self.send_header("Content-Type", "text/plain")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                sent = 0
                for chunk in chunks:
                    if limit is not None:
                        chunk = chunk[: max(limit - sent, 0)]
                    if chunk:
                        self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                        self.wfile.flush()
                        sent += len(chunk)
                    if limit is not None and sent >= limit:
                        break
                self.wfile.write(b"0\r\n\r\n")
                self.wfile.flush()
            except (BrokenPipeError, ConnectionResetError):
                return
            except DockerError as e:
                self._fail(500, e.message)

    server = http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler)
    server.daemon_threads = True
    server.socket = ctx.wrap_socket(server.socket, server_side=True)
    return server


def _raw(docker: Docker, cid: str, params: dict[str, Any]) -> Any:
    conn, resp = docker.stream(
        "GET", f"/containers/{cid}/logs", {"stdout": "1", "stderr": "1", **params}
    )
    try:
        while True:
            chunk = resp.read1(65536)
            if not chunk:
                return
            yield chunk
    finally:
        conn.close()
