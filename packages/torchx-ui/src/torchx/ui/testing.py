"""``torchx ui`` driven over its HTTP API, for tests against real backends.

The plugins' integration tests (Slurm, Docker) run ``torchx ui -s SCHEDULER`` as a user
would and do what the page does, over plain HTTP and server-sent events (the standard
library only: no browser is needed where the backend runs)::

    with UiProcess(["-s", "slurm"], env=cli.env, cwd=cli.work) as ui, ui.events() as events:
        handle = cli.start("utils.sh", "sh", "-c", TICKER)
        follow_and_cancel(ui, events, handle, "sh", 0)

:func:`follow_and_cancel` is what a person does on the page: sees the app appear in
the list, opens it, follows its replica's log while it runs, cancels it and sees
CANCELLED; :data:`TICKER` is an app that prints numbered lines until it is stopped.

Every request carries the token of the URL ``torchx ui`` printed, in the
``X-TorchX-Token`` header (what the page's script sends with its POSTs).
"""

from __future__ import annotations

import http.client
import json
import signal
import subprocess
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any
from urllib.parse import urlencode, urlsplit


class EventStream:
    """One server-sent event stream of the server, read event by event."""

    def __init__(self, conn: http.client.HTTPConnection, resp: http.client.HTTPResponse) -> None:
        self._conn, self._resp = conn, resp

    def __enter__(self) -> EventStream:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        self._conn.close()

    def next(self) -> tuple[str, Any]:
        """The next event: (its name, the JSON of its data); keep-alive comments skipped."""
        name, data = "message", list[str]()
        while True:
            line = self._resp.readline()
            if not line:
                raise AssertionError("the event stream ended")
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

    def wait(self, name: str, predicate: Callable[[Any], bool], timeout: float = 120) -> Any:
        """Reads events until a ``name`` event's data satisfies ``predicate``: that data."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            got, data = self.next()
            if got == name and predicate(data):
                return data
        raise AssertionError(f"no {name} event satisfied the predicate within {timeout} s")

    def wait_app(
        self, handle: str, states: Collection[str], timeout: float = 120
    ) -> dict[str, Any]:
        """Reads ``apps`` events until the list shows ``handle`` in one of ``states``: its row."""
        doc = self.wait("apps", lambda d: _row(d, handle).get("state") in states, timeout)
        return _row(doc, handle)

    def lines(self, count: int, timeout: float = 120) -> list[str]:
        """Reads a log stream's ``lines`` events until ``count`` lines came (or more)."""
        got: list[str] = []
        deadline = time.monotonic() + timeout
        while len(got) < count:
            if time.monotonic() > deadline:
                raise AssertionError(f"{len(got)} of {count} log lines within {timeout} s: {got}")
            name, data = self.next()
            if name == "end":
                raise AssertionError(f"the log ended after {len(got)} lines: {data}")
            if name == "lines":
                got.extend(data["lines"])
        return got


def _row(doc: Mapping[str, Any], handle: str) -> dict[str, Any]:
    for feed in doc["data"]["schedulers"]:
        for app in feed["apps"]:
            if app["handle"] == handle:
                return dict(app)
    return {}


class UiProcess:
    """``torchx ui ARGS`` in a process of its own, stopped (SIGTERM, exit 0) at the end.

    ``env`` and ``cwd`` are those of the test's ``torchx`` commands: the server must see
    the same apps (``TORCHX_HOME``, a job directory) as the CLI that starts them.
    """

    def __init__(
        self,
        args: Sequence[str],
        *,
        env: Mapping[str, str],
        cwd: Path,
        command: str = "torchx",
    ) -> None:
        self._proc = subprocess.Popen(
            [command, "ui", *args],
            cwd=cwd,
            env=dict(env),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert self._proc.stdout is not None
        #: the URL ``torchx ui`` printed
        self.url = self._proc.stdout.readline().strip()
        if not self.url.startswith("http://"):
            self._proc.kill()
            _, err = self._proc.communicate(timeout=30)
            raise AssertionError(f"torchx ui printed no URL: {err}")
        parts = urlsplit(self.url)
        self.host, self.port = parts.hostname or "127.0.0.1", parts.port or 80
        self.token = parts.query.split("token=", 1)[1]

    def __enter__(self) -> UiProcess:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def stop(self) -> None:
        """Stops the server as Ctrl-C would; it must exit 0 within 30 s."""
        if self._proc.poll() is None:
            self._proc.send_signal(signal.SIGTERM)
        _, err = self._proc.communicate(timeout=30)
        assert self._proc.returncode == 0, f"torchx ui exited {self._proc.returncode}: {err}"

    def _send(
        self, method: str, path: str, body: Any = None
    ) -> tuple[http.client.HTTPConnection, http.client.HTTPResponse]:
        conn = http.client.HTTPConnection(self.host, self.port, timeout=120)
        headers = {"Host": f"{self.host}:{self.port}", "X-TorchX-Token": self.token}
        if body is not None:
            headers["Content-Type"] = "application/json"
        conn.request(method, path, body=None if body is None else json.dumps(body), headers=headers)
        return conn, conn.getresponse()

    def request(self, method: str, path: str, body: Any = None) -> tuple[int, bytes]:
        """One request: (the status, the body)."""
        conn, resp = self._send(method, path, body)
        try:
            return resp.status, resp.read()
        finally:
            conn.close()

    def get(self, path: str) -> Any:
        """A GET that must answer 200: its JSON."""
        status, body = self.request("GET", path)
        assert status == 200, f"GET {path}: {status} {body!r}"
        return json.loads(body)

    def post(self, path: str, body: Any) -> Any:
        """A POST that must answer 200: its JSON."""
        status, answer = self.request("POST", path, body)
        assert status == 200, f"POST {path}: {status} {answer!r}"
        return json.loads(answer)

    def events(self, path: str = "/api/events") -> EventStream:
        """An event stream (``/api/events`` unless ``path``)."""
        conn, resp = self._send("GET", path)
        if resp.status != 200:
            conn.close()
            raise AssertionError(f"GET {path}: {resp.status} {resp.read()!r}")
        return EventStream(conn, resp)

    def app(self, handle: str) -> dict[str, Any]:
        """The app page's document of ``handle`` (``GET /api/app``)."""
        doc: dict[str, Any] = self.get(f"/api/app?{urlencode({'handle': handle})}")
        return doc

    def log(self, handle: str, role: str, replica: int) -> EventStream:
        """One replica's log, followed (``GET /api/log``)."""
        query = urlencode({"handle": handle, "role": role, "replica": replica})
        return self.events(f"/api/log?{query}")


#: A shell program printing ``tick 1``, ``tick 2``, ... five times a second until stopped.
TICKER = "i=0; while :; do i=$((i+1)); echo tick $i; sleep 0.2; done"


def ticks(lines: Sequence[str]) -> list[int]:
    """The numbers of the :data:`TICKER` lines among ``lines`` (other lines skipped).

    >>> ticks(["tick 1", "srun: a warning", "tick 2"])
    [1, 2]
    """
    return [int(line.split()[1]) for line in lines if line.startswith("tick ")]


def follow_and_cancel(
    ui: UiProcess, events: EventStream, handle: str, role: str, replica: int
) -> dict[str, Any]:
    """What a person does with a running :data:`TICKER` app (see the module), checked at
    each step; the app's page document once it is CANCELLED."""
    row = events.wait_app(handle, {"RUNNING"})
    assert row["end_time"] is None, row
    doc = ui.app(handle)
    status = doc["data"]["status"]
    assert status["state"] == "RUNNING", status
    shown = {(r["role"], int(rep["id"])) for r in status["roles"] for rep in r["replicas"]}
    assert (role, replica) in shown, status
    # the list's replicas column: the row on screen is described
    ui.post("/api/replicas", {"handles": [handle]})
    events.wait("replicas", lambda counts: counts.get(handle) == "1/1")
    with ui.log(handle, role, replica) as log:
        first = ticks(log.lines(3))
        assert first[:3] == [1, 2, 3], first
        # more lines arrive while it runs: the log is followed, not read once
        later = ticks(log.lines(3))
        assert later and later[0] == first[-1] + 1, (first, later)
    assert ui.app(handle)["data"]["status"]["state"] == "RUNNING"
    assert ui.post("/api/cancel", {"handle": handle})["result"] == "cancelled"
    events.wait_app(handle, {"CANCELLED"}, timeout=60)
    ended = ui.app(handle)
    assert ended["data"]["status"]["state"] == "CANCELLED", ended["data"]["status"]
    return ended
