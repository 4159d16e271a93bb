"""The list's "replicas running/total" column: real local apps, real HTTP, describes counted.

The server is shown the ``flaky`` scheduler (the local one under another name), whose
``describe`` counts its calls (:data:`helpers.FLAKY`): a page names the rows it shows
(``POST /api/replicas``) and only those are described.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from helpers import FLAKY, Server, all_apps, feed, make_runner, running_server

from torchx.schedulers.contract.api import ListAppResponse
from torchx.specs import AppDef, AppState, Role


def replicated(name: str, replicas: int, script: str) -> AppDef:
    return AppDef(
        name=name,
        roles=[
            Role(
                name="r",
                image=".",
                entrypoint="sh",
                args=["-c", script],
                num_replicas=replicas,
            )
        ],
    )


def watch(server: Server, handles: list[str]) -> tuple[int, dict[str, Any]]:
    status, _, body = server.request(
        "/api/replicas",
        method="POST",
        token=server.token,
        headers={"Content-Type": "application/json"},
        body=json.dumps({"handles": handles}).encode(),
    )
    return status, (json.loads(body) if status == 200 else {"error": body.decode()})


def as_flaky(handle: str) -> str:
    return "flaky://" + handle.split("://", 1)[1]


def until(condition: Callable[[], bool], timeout: float = 60) -> None:
    """Waits for ``condition`` (a counter the server's threads move), failing at ``timeout``."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "the condition never held"
        time.sleep(0.02)


def test_counts_of_running_and_ended_apps(world: Path) -> None:
    go = world / "go"
    with make_runner() as runner:
        done = runner.run(replicated("three", 3, "echo hi"), "flaky")
        assert runner.wait(done, wait_interval=0.05) is not None
        waiting = runner.run(
            replicated("two", 2, f"while [ ! -e '{go}' ]; do sleep 0.05; done"), "flaky"
        )
    assert done.startswith("flaky://") and waiting.startswith("flaky://")
    with (
        running_server(("flaky",), interval=0.1, refresh_s=0.3) as server,
        server.events() as events,
    ):
        events.wait_for(lambda d: all_apps(d).get(waiting, {}).get("state") == "RUNNING")
        status, answer = watch(server, [done, waiting])
        assert status == 200 and answer == {"replicas": {}}  # nothing described yet
        events.wait_for(
            lambda c: c.get(done) == "0/3" and c.get(waiting) == "2/2", event="replicas"
        )
        # an ended app is not asked again; a running one at most every refresh_s
        status, answer = watch(server, [done, waiting])
        assert answer["replicas"][done] == "0/3"
        go.touch()
        events.wait_for(lambda c: c.get(waiting) == "0/2", event="replicas")
        assert all_apps(server.apps())[waiting]["state"] == "SUCCEEDED"
        # both ended: however many lists (and refresh periods) pass, no more describes
        asked, calls = FLAKY.describes, FLAKY.calls
        until(lambda: FLAKY.calls >= calls + 10)
        assert FLAKY.describes == asked


def test_many_apps_listed_only_the_rows_shown_are_described(world: Path) -> None:
    with make_runner() as runner:
        real = [runner.run(replicated(f"e{i}", 1, "true"), "flaky") for i in range(8)]
        for handle in real:
            assert runner.wait(handle, wait_interval=0.05) is not None
    fake = [
        ListAppResponse(app_id=f"fake{i}", state=AppState.RUNNING, start_time=1.0)
        for i in range(1000)
    ]
    with (
        running_server(("flaky",), interval=0.1, refresh_s=0.3) as server,
        server.events() as events,
    ):
        FLAKY.extra = fake
        events.wait_for(lambda d: len(feed(d, "flaky")["apps"]) == 1008)
        calls = FLAKY.calls
        until(lambda: FLAKY.calls >= calls + 5)
        assert FLAKY.describes == 0  # 1,008 apps listed, five lists: no describe
        shown = real[:5]
        watch(server, shown)
        counts, _ = events.wait_for(
            lambda c: all(c.get(h) == "0/1" for h in shown), event="replicas"
        )
        assert set(counts) == set(shown)
        assert FLAKY.describes == 5
        # the page names them again, the list goes on: ended apps are never asked again
        status, answer = watch(server, shown)
        assert status == 200 and answer["replicas"] == dict.fromkeys(shown, "0/1")
        # a handle the list does not have (another scheduler's, made up) is never described
        status, answer = watch(server, ["local://torchx/x1", "flaky://torchx/not-listed"])
        assert status == 200 and answer["replicas"] == {}
        calls = FLAKY.calls
        until(lambda: FLAKY.calls >= calls + 10)
        assert FLAKY.describes == 5
        # a page names at most WATCH_MAX rows at once
        status, answer = watch(server, [f"flaky://torchx/fake{i}" for i in range(201)])
        assert status == 400 and "at most 200" in answer["error"]
        status, answer = watch(server, [1, 2])  # type: ignore[list-item]
        assert status == 400


def test_a_failing_describe_shows_a_question_mark_and_not_a_state(world: Path) -> None:
    go = world / "go"
    with make_runner() as runner:
        waiting = runner.run(
            replicated("w", 1, f"while [ ! -e '{go}' ]; do sleep 0.05; done"), "flaky"
        )
    with (
        running_server(("flaky",), interval=0.1, refresh_s=0.3) as server,
        server.events() as events,
    ):
        FLAKY.extra = [ListAppResponse(app_id="gone1", state=AppState.RUNNING, start_time=1.0)]
        events.wait_for(
            lambda d: (
                all_apps(d).get(waiting, {}).get("state") == "RUNNING"
                and "flaky://torchx/gone1" in all_apps(d)
            )
        )
        FLAKY.describe_error = ConnectionError("the scheduler is down")
        watch(server, [waiting, "flaky://torchx/gone1"])
        events.wait_for(lambda c: c.get(waiting) == "?", event="replicas")
        # the row is the list's: still RUNNING, the list's error still none
        doc = server.apps()
        assert all_apps(doc)[waiting]["state"] == "RUNNING"
        assert feed(doc, "flaky")["error"] is None
        FLAKY.describe_error = None
        # asked again after refresh_s: the real count; an app the scheduler does not know: "?"
        events.wait_for(
            lambda c: c.get(waiting) == "1/1" and c.get("flaky://torchx/gone1") == "?",
            event="replicas",
        )
        go.touch()
