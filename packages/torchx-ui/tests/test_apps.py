"""The apps the page shows: the CLI's record of real local apps, pushed as they change."""

from __future__ import annotations

import logging
import time
from pathlib import Path

import pytest
from helpers import FLAKY, all_apps, feed, make_runner, running_server

from torchx.cli.output import JSON_FORMAT_VERSION, app_list_json
from torchx.schedulers.contract.api import ListAppResponse
from torchx.specs import AppDef, AppState, Role

HOSTILE = "<img src=x onerror=alert(1)>"


def waiting_app(go: Path, name: str = "waiter") -> AppDef:
    """An app that runs until the file ``go`` exists, then succeeds."""
    script = f"while [ ! -e '{go}' ]; do sleep 0.05; done; echo done"
    return AppDef(
        name=name, roles=[Role(name="wait", image=".", entrypoint="sh", args=["-c", script])]
    )


def echo_app(name: str = "hello") -> AppDef:
    return AppDef(name=name, roles=[Role(name="echo", image=".", entrypoint="echo", args=["hi"])])


def test_an_app_run_with_the_runner_is_listed_as_the_cli_lists_it() -> None:
    with make_runner() as runner:
        handle = runner.run(echo_app(), "local")
        status = runner.wait(handle, wait_interval=0.05)
        assert status is not None and status.state == AppState.SUCCEEDED
    with running_server() as server, server.events() as events:
        doc, _ = events.wait_for(lambda d: handle in all_apps(d))
        listed = server.apps()
    assert listed["formatVersion"] == JSON_FORMAT_VERSION == doc["formatVersion"]
    assert listed["kind"] == "UiApps"
    app = all_apps(listed)[handle]
    # the very record of `torchx list --json`, field for field
    (expected,) = app_list_json(
        [(handle, "SUCCEEDED", "hello", app["start_time"], app["end_time"])]
    )
    assert app == expected
    assert app["start_time"] is not None and app["end_time"] >= app["start_time"]
    assert feed(listed, "local")["error"] is None


def test_an_app_finishing_is_pushed_within_two_seconds(world: Path) -> None:
    go = world / "go"
    with running_server(interval=1.0) as server, server.events() as events:
        with make_runner() as runner:
            handle = runner.run(waiting_app(go), "local")
        doc, _ = events.wait_for(lambda d: all_apps(d).get(handle, {}).get("state") == "RUNNING")
        running = all_apps(doc)[handle]
        assert running["end_time"] is None and running["duration_s"] is not None
        go.touch()
        doc, arrived = events.wait_for(
            lambda d: all_apps(d).get(handle, {}).get("state") == "SUCCEEDED"
        )
    ended = all_apps(doc)[handle]
    assert ended["end_time"] is not None
    # one list per interval (1 s), pushed at once: the page knows within two seconds
    assert arrived - ended["end_time"] < 2.0, arrived - ended["end_time"]


def test_apps_of_several_schedulers_newest_first_each() -> None:
    with make_runner() as runner:
        first = runner.run(echo_app("first"), "local")
        runner.wait(first, wait_interval=0.05)
        second = runner.run(echo_app("second"), "local")
        runner.wait(second, wait_interval=0.05)
    with running_server(("local", "flaky")) as server, server.events() as events:
        doc, _ = events.wait_for(
            lambda d: all(feed(d, s)["listed_at"] is not None for s in ("local", "flaky"))
        )
    assert [f["scheduler"] for f in doc["data"]["schedulers"]] == ["local", "flaky"]
    local = [a["handle"] for a in feed(doc, "local")["apps"]]
    assert local == [second, first]
    # the same apps seen through the other scheduler, under its own handles
    flaky = [a["handle"] for a in feed(doc, "flaky")["apps"]]
    assert flaky == [h.replace("local://", "flaky://") for h in local]


def test_a_scheduler_whose_list_fails_shows_why_and_keeps_its_apps() -> None:
    with make_runner() as runner:
        handle = runner.run(echo_app(), "local")
        runner.wait(handle, wait_interval=0.05)
    flaky_handle = handle.replace("local://", "flaky://")
    with running_server(("local", "flaky")) as server, server.events() as events:
        doc, _ = events.wait_for(lambda d: flaky_handle in all_apps(d))
        before = feed(doc, "flaky")["apps"]
        FLAKY.error = ConnectionError("cannot reach the controller:\n connection refused")
        doc, _ = events.wait_for(lambda d: feed(d, "flaky")["error"] is not None)
        broken = feed(doc, "flaky")
        # the Runner's one line, with the backend's reason in it
        assert "cannot reach the controller: connection refused" in broken["error"]
        assert "\n" not in broken["error"] and "flaky" in broken["error"]
        # its last known apps, as they were: not gone, not FAILED
        assert broken["apps"] == before
        assert all_apps(doc)[flaky_handle]["state"] == "SUCCEEDED"
        assert broken["listed_at"] < broken["checked_at"]
        # the other scheduler is not affected
        assert feed(doc, "local")["error"] is None
        assert server.apps()["data"]["schedulers"][1]["error"] == broken["error"]
        FLAKY.error = None
        doc, _ = events.wait_for(lambda d: feed(d, "flaky")["error"] is None)
        assert flaky_handle in all_apps(doc)


def test_an_error_reason_is_masked_as_the_cli_masks_it() -> None:
    from torchx.cli.output import remember_secrets, start_masking

    start_masking(False)
    remember_secrets([{"DB_PASSWORD": "s3cr3t-value"}])
    try:
        with running_server(("flaky",)) as server, server.events() as events:
            FLAKY.error = PermissionError("login with s3cr3t-value refused")
            doc, _ = events.wait_for(lambda d: feed(d, "flaky")["error"] is not None)
    finally:
        start_masking(False)
    error = feed(doc, "flaky")["error"]
    assert "login with **** refused" in error and "s3cr3t" not in error


def test_a_hostile_name_is_data_not_markup() -> None:
    with running_server(("flaky",)) as server, server.events() as events:
        FLAKY.extra = [
            ListAppResponse(
                app_id="x1", state=AppState.RUNNING, name=HOSTILE, start_time=time.time()
            )
        ]
        doc, _ = events.wait_for(lambda d: bool(feed(d, "flaky")["apps"]))
        _, headers, body = server.request("/api/apps", token=server.token)
    (app,) = feed(doc, "flaky")["apps"]
    assert app["name"] == HOSTILE and app["handle"] == "flaky://torchx/x1"
    # served as JSON, never as a page the browser would parse as markup
    assert headers["Content-Type"].startswith("application/json")
    assert HOSTILE.encode() in body


def test_the_server_lists_and_does_not_describe(world: Path) -> None:
    """One ``list`` per interval per scheduler, whatever the number of apps."""
    with make_runner() as runner:
        for i in range(3):
            runner.wait(runner.run(echo_app(f"a{i}"), "local"), wait_interval=0.05)
    with running_server(("flaky",), interval=0.1) as server, server.events() as events:
        events.wait_for(lambda d: len(feed(d, "flaky")["apps"]) == 3)
        assert FLAKY.calls >= 1
        assert FLAKY.describes == 0


def test_a_page_that_went_away_is_no_error(caplog: pytest.LogCaptureFixture) -> None:
    """A closed event stream (a tab closed or reloaded) is let go when the next change is
    written to it: no error logged, the other streams served."""
    caplog.set_level(logging.DEBUG)
    with running_server() as server:
        with server.events() as gone:
            gone.next()
        with make_runner() as runner:
            handle = runner.run(echo_app(), "local")
            runner.wait(handle, wait_interval=0.05)
        with server.events() as events:
            events.wait_for(lambda d: all_apps(d).get(handle, {}).get("state") == "SUCCEEDED")
    # the server has stopped: every handler has ended, the gone one included
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert not errors, [r.getMessage() for r in errors]
