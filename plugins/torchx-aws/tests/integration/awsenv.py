"""What the integration tests share besides fixtures: the test image, waiting on Batch."""

from __future__ import annotations

import os


def busybox() -> str:
    """The busybox image dev/docker made (every test job runs in it)."""
    return os.environ.get("TORCHX_DEV_DOCKER_BUSYBOX_IMAGE", "torchx-dev/busybox:1")


class FaultProxy:
    """An HTTP proxy in front of the emulator that answers some requests as AWS does when
    it throttles or refuses credentials, and forwards the rest.

    ``throttle`` requests are answered 429 ``TooManyRequestsException`` first; a request
    signed with the access key ``bad_key`` is answered 403
    ``UnrecognizedClientException`` (the emulator accepts any credentials). ``seen`` counts
    the requests.
    """

    def __init__(self, upstream: str, throttle: int = 0, bad_key: str = "AKIDBADBADBAD") -> None:
        import http.server
        import threading
        import urllib.request

        proxy = self
        self.throttle = throttle
        self.seen = 0

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def _answer(self, status: int, code: str, message: str) -> None:
                import json

                body = json.dumps({"__type": code, "message": message}).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("x-amzn-ErrorType", code)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def _forward(self) -> None:
                proxy.seen += 1
                length = int(self.headers.get("Content-Length") or 0)
                data = self.rfile.read(length) if length else None
                if bad_key in (self.headers.get("Authorization") or ""):
                    return self._answer(
                        403,
                        "UnrecognizedClientException",
                        "The security token included in the request is invalid.",
                    )
                if proxy.throttle > 0:
                    proxy.throttle -= 1
                    return self._answer(429, "TooManyRequestsException", "Too Many Requests")
                req = urllib.request.Request(upstream + self.path, data=data, method=self.command)
                for k, v in self.headers.items():
                    if k.lower() not in ("host", "content-length"):
                        req.add_header(k, v)
                try:
                    with urllib.request.urlopen(req, timeout=30) as r:
                        status, headers, body = r.status, r.headers, r.read()
                except urllib.error.HTTPError as e:
                    status, headers, body = e.code, e.headers, e.read()
                self.send_response(status)
                for k, v in headers.items():
                    if k.lower() not in (
                        "content-length",
                        "transfer-encoding",
                        "connection",
                        "server",
                        "date",
                    ):
                        self.send_header(k, v)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_POST = do_GET = do_PUT = do_DELETE = _forward

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
