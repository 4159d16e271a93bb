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
    ``UnrecognizedClientException`` (the emulator accepts any credentials), and while
    ``expired`` is set every request is answered 400 ``ExpiredTokenException`` (a session
    token that expired). ``seen`` counts the requests.

    ``hide_new`` (seconds) makes reads eventually consistent, as AWS's are: a Batch job
    just submitted (or a SageMaker training job just created) is left out of
    ``DescribeJobs``, ``ListJobs`` and ``Search``, and ``DescribeTrainingJob`` does not
    find it, for that long after its creation.
    """

    def __init__(
        self,
        upstream: str,
        throttle: int = 0,
        bad_key: str = "AKIDBADBADBAD",
        hide_new: float = 0.0,
    ) -> None:
        import http.server
        import json
        import threading
        import urllib.request

        proxy = self
        self.throttle = throttle
        self.expired = False
        self.seen = 0
        self.hide_new = hide_new
        self.hidden: dict[str, float] = {}  # job id or training job name -> shown from

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def _answer(self, status: int, code: str, message: str) -> None:
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
                if proxy.expired:
                    return self._answer(
                        400,
                        "ExpiredTokenException",
                        "The security token included in the request is expired",
                    )
                if proxy.throttle > 0:
                    proxy.throttle -= 1
                    return self._answer(429, "TooManyRequestsException", "Too Many Requests")
                target = self.headers.get("X-Amz-Target") or ""
                if target == "SageMaker.DescribeTrainingJob" and data:
                    name = json.loads(data).get("TrainingJobName", "")
                    if proxy._hidden(name):
                        return self._answer(
                            400, "ValidationException", f"Could not find training job '{name}'."
                        )
                req = urllib.request.Request(upstream + self.path, data=data, method=self.command)
                for k, v in self.headers.items():
                    if k.lower() not in ("host", "content-length"):
                        req.add_header(k, v)
                try:
                    with urllib.request.urlopen(req, timeout=30) as r:
                        status, headers, body = r.status, r.headers, r.read()
                except urllib.error.HTTPError as e:
                    status, headers, body = e.code, e.headers, e.read()
                if status == 200 and proxy.hide_new > 0:
                    body = proxy._consistency(self.path, target, data, body)
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

    def _hidden(self, key: str) -> bool:
        import time

        return time.monotonic() < self.hidden.get(key.split("#")[0], 0.0)

    def _consistency(self, path: str, target: str, request: bytes | None, body: bytes) -> bytes:
        """The upstream answer as an eventually consistent AWS gives it (``hide_new``)."""
        import json
        import time

        doc = json.loads(body or b"{}")
        until = time.monotonic() + self.hide_new
        if path.endswith("/v1/submitjob"):
            self.hidden[doc["jobId"]] = until
        elif target == "SageMaker.CreateTrainingJob" and request:
            self.hidden[json.loads(request)["TrainingJobName"]] = until
        elif path.endswith("/v1/describejobs"):
            doc["jobs"] = [j for j in doc.get("jobs", []) if not self._hidden(j["jobId"])]
        elif path.endswith("/v1/listjobs"):
            doc["jobSummaryList"] = [
                j for j in doc.get("jobSummaryList", []) if not self._hidden(j["jobId"])
            ]
        elif target == "SageMaker.Search":
            doc["Results"] = [
                r
                for r in doc.get("Results", [])
                if not self._hidden((r.get("TrainingJob") or {}).get("TrainingJobName", ""))
            ]
        else:
            return body
        return json.dumps(doc).encode()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
