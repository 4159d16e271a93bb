"""The app page's API: one app's status and AppDef, a replica's log followed, cancel."""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import urlencode

import pytest
from helpers import Server, all_apps, make_runner, running_server

from torchx.cli.output import JSON_FORMAT_VERSION
from torchx.runner import Runner
from torchx.specs import AppDef, AppState, Role

SCRIPT_LINE = "<script>alert(2)</script>"


def talking_app(go: Path, env: dict[str, str] | None = None) -> AppDef:
    """Two replicas that each print a hostile line and the secret, then wait for ``go``."""
    script = (
        f"echo 'replica '$TORCHX_REPLICA_ID' {SCRIPT_LINE}'; echo \"key=$API_KEY\"; "
        f"while [ ! -e '{go}' ]; do sleep 0.05; done; echo bye"
    )
    role = Role(
        name="talk",
        image=".",
        entrypoint="sh",
        args=["-c", script],
        num_replicas=2,
        env=env or {"API_KEY": "sk-very-secret", "LR": "0.1"},
    )
    return AppDef(name="talker", roles=[role])


def echo_app() -> AppDef:
    return AppDef(name="echo", roles=[Role(name="e", image=".", entrypoint="true")])


def alive(runner: Runner, handle: str) -> bool:
    """Whether the app has not ended (submitted, pending or running)."""
    status = runner.status(handle)
    return status is not None and not status.is_terminal()


def app_query(handle: str, **more: str) -> str:
    return urlencode({"handle": handle, **more})


@pytest.fixture
def server() -> Server:
    with running_server(("local",)) as s:
        yield s  # type: ignore[misc]


def test_the_app_document_is_the_clis_status_and_appdef_masked(server: Server, world: Path) -> None:
    go = world / "go"
    with make_runner() as runner:
        handle = runner.run(talking_app(go), "local")
        try:
            status, _, body = server.request(f"/api/app?{app_query(handle)}", token=server.token)
            assert status == 200, body
            doc = json.loads(body)
        finally:
            go.touch()
            runner.wait(handle, wait_interval=0.05)
    assert doc["formatVersion"] == JSON_FORMAT_VERSION and doc["kind"] == "UiApp"
    data = doc["data"]
    assert data["handle"] == handle
    replicas = [r for role in data["status"]["roles"] for r in role["replicas"]]
    assert [(r["role"], r["id"]) for r in replicas] == [("talk", 0), ("talk", 1)]
    assert {"state", "exit_code", "hostname", "structured_error_msg"} <= set(replicas[0])
    spec = data["app"]["spec"]
    assert spec["name"] == "talker"
    assert spec["roles"][0]["env"] == {"API_KEY": "****", "LR": "0.1"}
    assert b"sk-very-secret" not in body


def test_the_app_document_has_the_run_options_masked_as_the_scheduler_kept_them(
    server: Server, world: Path
) -> None:
    # a secret-looking NAME=value inside a run option's text (here a directory's name)
    log_dir = str(world / "logs" / "API_TOKEN=sk-opt-secret")
    with make_runner() as runner:
        handle = runner.run(echo_app(), "local", {"log_dir": log_dir, "grace_period": 2.5})
        runner.wait(handle, wait_interval=0.05)
    status, _, body = server.request(f"/api/app?{app_query(handle)}", token=server.token)
    assert status == 200, body
    options = json.loads(body)["data"]["run_options"]
    assert options["log_dir"] == str(world / "logs" / "API_TOKEN=****")
    assert options["grace_period"] == 2.5 and list(options) == sorted(options)
    # (the local scheduler's ui_url names the log directory: the user's own choice of name)
    assert "sk-opt-secret" not in json.dumps(options)


def test_a_replicas_log_is_followed_live_as_text_with_secrets_masked(
    server: Server, world: Path
) -> None:
    go = world / "go"
    with make_runner() as runner:
        handle = runner.run(talking_app(go), "local")
        try:
            path = f"/api/log?{app_query(handle, role='talk', replica='1')}"
            with server.events(path) as log:
                lines: list[str] = []
                # the first lines arrive while the replica runs (it waits for `go`)
                while len(lines) < 2:
                    name, doc = log.next()
                    assert name == "lines", (name, doc)
                    lines += doc["lines"]
                assert lines == [f"replica 1 {SCRIPT_LINE}", "key=****"]
                assert alive(runner, handle)
                go.touch()
                name, doc = log.next()
                while name == "lines":
                    lines += doc["lines"]
                    name, doc = log.next()
            assert name == "end" and doc == {"error": None}
            assert lines[-1] == "bye"
        finally:
            go.touch()
            runner.wait(handle, wait_interval=0.05)


def test_cancel_needs_the_token_in_a_header_then_cancels(server: Server, world: Path) -> None:
    go = world / "never"
    with make_runner() as runner:
        handle = runner.run(talking_app(go), "local")
        body = json.dumps({"handle": handle}).encode()
        cookie = {"Cookie": f"torchx-ui-token-{server.port}={server.token}"}
        json_type = {"Content-Type": "application/json"}
        # no token; the cookie alone (what a forged form post would carry); the query
        assert server.request("/api/cancel", method="POST", body=body)[0] == 401
        assert (
            server.request(
                "/api/cancel", method="POST", body=body, headers={**cookie, **json_type}
            )[0]
            == 401
        )
        assert (
            server.request(f"/api/cancel?token={server.token}", method="POST", body=body)[0] == 401
        )
        assert alive(runner, handle)
        with server.events() as events:
            status, _, answer = server.request(
                "/api/cancel", method="POST", body=body, token=server.token, headers=json_type
            )
            assert status == 200, answer
            assert json.loads(answer) == {"handle": handle, "result": "cancelled"}
            events.wait_for(lambda d: all_apps(d).get(handle, {}).get("state") == "CANCELLED")
        final = runner.wait(handle, wait_interval=0.05)
        assert final is not None and final.state == AppState.CANCELLED


def test_a_get_never_changes_state(server: Server, world: Path) -> None:
    go = world / "never"
    with make_runner() as runner:
        handle = runner.run(talking_app(go), "local")
        try:
            status, _, _ = server.request(f"/api/cancel?{app_query(handle)}", token=server.token)
            assert status == 405
            assert alive(runner, handle)
        finally:
            go.touch()
            runner.wait(handle, wait_interval=0.05)


@pytest.mark.parametrize(
    ("query", "status"),
    [
        ("", 400),
        ("handle=nonsense", 400),
        ("handle=slurm://torchx/abc", 404),  # not a scheduler this page shows
        ("handle=local://torchx/no-such-app", 404),
    ],
)
def test_a_bad_or_unknown_handle_is_refused(server: Server, query: str, status: int) -> None:
    for path in ("/api/app", "/api/log"):
        got, _, body = server.request(f"{path}?{query}", token=server.token)
        assert got == status, (path, got, body)
    got, _, _ = server.request(
        "/api/cancel",
        method="POST",
        body=json.dumps(dict(p.split("=", 1) for p in query.split("&") if p)).encode(),
        token=server.token,
    )
    assert got == (400 if status == 400 else 404 if "slurm" in query else 200)


def test_the_page_routes_need_the_token_too(server: Server) -> None:
    for path in ("/api/app?handle=local://torchx/x", "/api/log?handle=local://torchx/x"):
        assert server.request(path)[0] == 401
        assert server.request(path, token="wrong")[0] == 403


def test_the_page_carries_the_token_for_its_posts(server: Server) -> None:
    status, _, body = server.request("/", token=server.token)
    assert status == 200
    assert f'<meta name="torchx-ui-token" content="{server.token}">'.encode() in body


def test_delete_removes_an_ended_app_and_is_refused_for_a_running_one(
    server: Server, world: Path
) -> None:
    go = world / "go"
    json_type = {"Content-Type": "application/json"}
    with make_runner() as runner:
        handle = runner.run(talking_app(go), "local")
        body = json.dumps({"handle": handle}).encode()
        cookie = {"Cookie": f"torchx-ui-token-{server.port}={server.token}"}
        assert server.request("/api/delete", method="POST", body=body, headers=cookie)[0] == 401
        # the local scheduler will not delete a live app: its reason, and the app stays
        status, _, answer = server.request(
            "/api/delete", method="POST", body=body, token=server.token, headers=json_type
        )
        assert status == 409, answer
        assert b"cancel" in answer and alive(runner, handle)
        go.touch()
        runner.wait(handle, wait_interval=0.05)
        with server.events() as events:
            events.wait_for(lambda d: all_apps(d).get(handle, {}).get("state") == "SUCCEEDED")
            status, _, answer = server.request(
                "/api/delete", method="POST", body=body, token=server.token, headers=json_type
            )
            assert status == 200, answer
            assert json.loads(answer) == {"handle": handle, "result": "deleted"}
            events.wait_for(lambda d: handle not in all_apps(d))
        assert runner.status(handle) is None


def test_a_regex_narrows_the_followed_log_and_a_bad_one_is_refused(
    server: Server, world: Path
) -> None:
    go = world / "go"
    with make_runner() as runner:
        handle = runner.run(talking_app(go), "local")
        try:
            bad = f"/api/log?{app_query(handle, role='talk', replica='0', regex='(')}"
            status, _, body = server.request(bad, token=server.token)
            assert status == 400 and b"bad regex" in body
            go.touch()
            path = f"/api/log?{app_query(handle, role='talk', replica='0', regex='^(key|bye)')}"
            with server.events(path) as log:
                lines: list[str] = []
                name, doc = log.next()
                while name == "lines":
                    lines += doc["lines"]
                    name, doc = log.next()
            assert name == "end"
            assert lines == ["key=****", "bye"]
        finally:
            go.touch()
            runner.wait(handle, wait_interval=0.05)
