"""A real ``torchx ui`` server for the tests, and plain HTTP clients for it.

:func:`running_server` starts the real server (aiohttp, on 127.0.0.1, a free port) in a
thread over a Runner with two schedulers: ``local`` and ``flaky``, the local scheduler
under another name whose ``list`` the test can make fail (:data:`FLAKY`) or add apps to.
Requests go through :mod:`http.client`, so a test says exactly which Host and token
headers are sent.
"""

from __future__ import annotations

import http.client
import json
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any
from urllib.parse import urlsplit

from torchx.runner import Backoff, Runner
from torchx.schedulers.contract.api import ListAppResponse
from torchx.schedulers.local.scheduler import LocalScheduler
from torchx.ui.poller import Poller, Source
from torchx.ui.server import ThreadedServer, serve_in_thread


class FlakyControl:
    """What the ``flaky`` scheduler's next ``list`` does: raise ``error``, add ``extra``."""

    def __init__(self) -> None:
        self.error: Exception | None = None
        self.extra: list[ListAppResponse] = []
        self.calls = 0
        self.describes = 0
        self.describe_error: Exception | None = None


FLAKY = FlakyControl()


class FlakyScheduler(LocalScheduler):
    """The local scheduler, whose ``list`` obeys :data:`FLAKY`."""

    def list(self, cfg: Mapping[str, Any] | None = None) -> list[ListAppResponse]:
        FLAKY.calls += 1
        if FLAKY.error is not None:
            raise FLAKY.error
        return [*super().list(cfg), *FLAKY.extra]

    def describe(self, app_id: str) -> Any:
        FLAKY.describes += 1
        if FLAKY.describe_error is not None:
            raise FLAKY.describe_error
        return super().describe(app_id)


def flaky_factory(session_name: str, **kwargs: Any) -> FlakyScheduler:
    return FlakyScheduler(session_name)


def local_factory(session_name: str, **kwargs: Any) -> LocalScheduler:
    return LocalScheduler(session_name)


def make_runner() -> Runner:
    """What the server's poller lists with: one call per list, as the command's runner."""
    return Runner(
        "torchx", {"local": local_factory, "flaky": flaky_factory}, backoff=Backoff(attempts=1)
    )


class Server:
    """A started server: its address, token, and requests to it."""

    def __init__(self, threaded: ThreadedServer) -> None:
        self.threaded = threaded
        url = urlsplit(threaded.server.url)
        self.host = "127.0.0.1"
        self.port = threaded.server.port
        self.token = threaded.server.token
        self.url = threaded.server.url
        assert url.hostname == "127.0.0.1" and url.port == self.port

    def request(
        self,
        path: str,
        *,
        token: str | None = None,
        host: str | None = None,
        headers: Mapping[str, str] | None = None,
        method: str = "GET",
        body: bytes | None = None,
    ) -> tuple[int, http.client.HTTPMessage, bytes]:
        """One request; ``token`` goes in the ``X-TorchX-Token`` header when given."""
        conn = http.client.HTTPConnection(self.host, self.port, timeout=30)
        sent = {"Host": host or f"127.0.0.1:{self.port}", **(headers or {})}
        if token is not None:
            sent["X-TorchX-Token"] = token
        try:
            conn.request(method, path, body=body, headers=sent)
            resp = conn.getresponse()
            # an event stream answers with a first event and stays open: read one chunk
            streamed = resp.status == 200 and path.startswith(("/api/events", "/api/log?"))
            got = resp.read1(65536) if streamed else resp.read()
            return resp.status, resp.headers, got
        finally:
            conn.close()

    def apps(self) -> dict[str, Any]:
        status, _, body = self.request("/api/apps", token=self.token)
        assert status == 200, body
        doc: dict[str, Any] = json.loads(body)
        return doc

    @contextmanager
    def events(self, path: str = "/api/events") -> Iterator[EventStream]:
        stream = EventStream(self, path)
        try:
            yield stream
        finally:
            stream.close()


class EventStream:
    """The server's event stream, read event by event (comments skipped)."""

    def __init__(self, server: Server, path: str = "/api/events") -> None:
        self.conn = http.client.HTTPConnection(server.host, server.port, timeout=30)
        self.conn.request(
            "GET",
            path,
            headers={"Host": f"127.0.0.1:{server.port}", "X-TorchX-Token": server.token},
        )
        self.resp = self.conn.getresponse()
        assert self.resp.status == 200, self.resp.read()
        assert self.resp.headers["Content-Type"].startswith("text/event-stream")

    def next(self) -> tuple[str, Any]:
        """The next event: (name, the JSON of its data)."""
        name, data = "message", []
        while True:
            line = self.resp.readline()
            assert line, "the event stream ended"
            text = line.decode().rstrip("\n")
            if not text:
                if data:
                    return name, json.loads("\n".join(data))
                continue
            if text.startswith(":"):
                continue
            field, _, value = text.partition(": ")
            if field == "event":
                name = value
            elif field == "data":
                data.append(value)

    def wait_for(
        self,
        predicate: Callable[[dict[str, Any]], bool],
        timeout: float = 60,
        event: str = "apps",
    ) -> tuple[dict[str, Any], float]:
        """Reads ``event`` events until one's document satisfies ``predicate``: that
        document and when it arrived (``time.time()``)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            name, doc = self.next()
            if name == event and predicate(doc):
                return doc, time.time()
        raise AssertionError(f"no {event} event satisfied the predicate in {timeout} s")

    def close(self) -> None:
        self.conn.close()


def all_apps(doc: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """The apps of a ``UiApps`` document by handle."""
    return {a["handle"]: a for feed in doc["data"]["schedulers"] for a in feed["apps"]}


def feed(doc: Mapping[str, Any], scheduler: str) -> dict[str, Any]:
    found: dict[str, Any] = next(
        f for f in doc["data"]["schedulers"] if f["scheduler"] == scheduler
    )
    return found


@contextmanager
def running_server(
    schedulers: tuple[str, ...] = ("local",), interval: float = 0.2, refresh_s: float = 10.0
) -> Iterator[Server]:
    """The real server over ``schedulers`` (see the module), stopped afterwards;
    ``refresh_s``: how often a running app's replica counts are asked again."""
    FLAKY.__init__()  # type: ignore[misc]
    sources = [Source(s) for s in schedulers]
    threaded = serve_in_thread(
        lambda on_change: Poller(sources, interval, on_change, runner_factory=make_runner),
        refresh_s=refresh_s,
    )
    try:
        yield Server(threaded)
    finally:
        threaded.stop()
        FLAKY.__init__()  # type: ignore[misc]
