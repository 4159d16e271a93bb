"""A proxy in front of the real API server that answers some requests as a busy one does.

The API server of ``dev/k8s`` never throttles, never fails over and never loses an
answer; a production one does all three. :class:`ApiProxy` listens on loopback (plain
HTTP), forwards every request to the server (HTTPS, its certificate checked against the
kubeconfig's CA) and, for the requests a :class:`Fault` matches, answers instead:
429 with ``Retry-After``, 503, 409, or (``lose``) the server's answer thrown away after
the server acted on the request, the connection closed as a failing network closes it.
A hook may run after a request was forwarded and before it is answered (a competing
writer acting at that moment). :meth:`ApiProxy.kubeconfig` writes a kubeconfig naming
the proxy, for the ``torchx`` command and the Runner alike.

Every request is recorded (:attr:`ApiProxy.seen`): what the client asked, what it was
answered, whether the server saw it, and when.
"""

from __future__ import annotations

import base64
import http.server
import json
import re
import ssl
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import yaml

_HOP = {"content-length", "transfer-encoding", "connection", "server", "date", "host"}


@dataclass
class Fault:
    """Answers ``times`` requests ``method`` whose path (with its query) matches ``path``."""

    method: str
    path: str
    #: the answer's status (429, 503, 409); 0 with ``lose``: no answer at all
    status: int = 503
    times: int = 1
    retry_after: int | None = None
    #: forward the request first (the server acts on it), then lose its answer
    lose: bool = False
    #: run after forwarding the request, before answering it
    hook: Callable[[], None] | None = None

    def matches(self, method: str, path: str) -> bool:
        return self.times > 0 and method == self.method and re.search(self.path, path) is not None


@dataclass
class Seen:
    method: str
    path: str
    #: the status the client got (0: none, the connection was closed)
    status: int
    #: the status the server answered (None: the request never reached it)
    upstream: int | None
    at: float = field(default_factory=time.monotonic)


class ApiProxy:
    """The proxy, serving on a thread until :meth:`close`."""

    def __init__(self, kubeconfig: Path) -> None:
        config = yaml.safe_load(kubeconfig.read_text())
        contexts = {c["name"]: c["context"] for c in config["contexts"]}
        cluster_name = contexts[config["current-context"]]["cluster"]
        self._config = config
        self._cluster = next(c for c in config["clusters"] if c["name"] == cluster_name)["cluster"]
        self.upstream = str(self._cluster["server"]).rstrip("/")
        ca = base64.b64decode(self._cluster["certificate-authority-data"]).decode()
        self._tls = ssl.create_default_context(cadata=ca)
        self.faults: list[Fault] = []
        self.seen: list[Seen] = []
        self._lock = threading.Lock()
        self._dir = tempfile.TemporaryDirectory(prefix="torchx-k8s-proxy-")
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def _handle(self) -> None:
                proxy._serve(self)

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _handle

        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def fail(self, *faults: Fault) -> None:
        with self._lock:
            self.faults.extend(faults)

    def kubeconfig(self) -> Path:
        """A kubeconfig whose cluster is the proxy (same user and token)."""
        config = json.loads(json.dumps(self._config))
        for cluster in config["clusters"]:
            cluster["cluster"] = {"server": self.url}
        path = Path(self._dir.name) / "kubeconfig"
        path.write_text(yaml.safe_dump(config))
        return path

    def requests(self, method: str, path: str) -> list[Seen]:
        with self._lock:
            return [s for s in self.seen if s.method == method and re.search(path, s.path)]

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._dir.cleanup()

    # -- serving ---------------------------------------------------------------------------

    def _take(self, method: str, path: str) -> Fault | None:
        with self._lock:
            for fault in self.faults:
                if fault.matches(method, path):
                    fault.times -= 1
                    return fault
        return None

    def _record(self, method: str, path: str, status: int, upstream: int | None) -> None:
        with self._lock:
            self.seen.append(Seen(method, path, status, upstream))

    def _serve(self, h: http.server.BaseHTTPRequestHandler) -> None:
        method, path = h.command, h.path
        length = int(h.headers.get("Content-Length") or 0)
        data = h.rfile.read(length) if length else None
        fault = self._take(method, path)
        if fault is not None and not fault.lose and fault.hook is None:
            self._record(method, path, fault.status, None)
            return self._answer_fault(h, fault)
        status, headers, body = self._forward(h, method, path, data)
        if fault is not None and fault.hook is not None:
            fault.hook()
        if fault is not None and fault.lose:
            self._record(method, path, 0, status)
            h.close_connection = True  # the answer is lost: the connection just closes
            return None
        if fault is not None and fault.status:
            self._record(method, path, fault.status, status)
            return self._answer_fault(h, fault)
        self._record(method, path, status, status)
        h.send_response(status)
        for k, v in headers:
            if k.lower() not in _HOP:
                h.send_header(k, v)
        h.send_header("Content-Length", str(len(body)))
        h.end_headers()
        h.wfile.write(body)
        return None

    def _forward(
        self, h: http.server.BaseHTTPRequestHandler, method: str, path: str, data: bytes | None
    ) -> tuple[int, list[tuple[str, str]], bytes]:
        req = urllib.request.Request(self.upstream + path, data=data, method=method)
        for k, v in h.headers.items():
            if k.lower() not in _HOP:
                req.add_header(k, v)
        try:
            with urllib.request.urlopen(req, timeout=60, context=self._tls) as r:
                return r.status, list(r.headers.items()), r.read()
        except urllib.error.HTTPError as e:
            return e.code, list(e.headers.items()), e.read()

    def _answer_fault(self, h: http.server.BaseHTTPRequestHandler, fault: Fault) -> None:
        reasons = {429: "TooManyRequests", 503: "ServiceUnavailable", 409: "Conflict"}
        messages = {
            429: "Too many requests, please try again later.",
            503: "the server is currently unable to handle the request",
            409: "Operation cannot be fulfilled: the object has been modified; please apply "
            "your changes to the latest version and try again",
        }
        body = json.dumps(
            {
                "kind": "Status",
                "apiVersion": "v1",
                "status": "Failure",
                "message": messages.get(fault.status, "injected"),
                "reason": reasons.get(fault.status, "InternalError"),
                "code": fault.status,
            }
        ).encode()
        h.send_response(fault.status)
        h.send_header("Content-Type", "application/json")
        if fault.retry_after is not None:
            h.send_header("Retry-After", str(fault.retry_after))
        h.send_header("Content-Length", str(len(body)))
        h.end_headers()
        h.wfile.write(body)
