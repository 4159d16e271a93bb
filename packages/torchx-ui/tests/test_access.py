"""Who may talk to the server: the token on every request, the Host header, no CORS."""

from __future__ import annotations

import pytest
from helpers import Server, running_server

PATHS = ["/", "/static/app.js", "/static/app.css", "/api/apps", "/api/events"]


@pytest.fixture(scope="module")
def server() -> Server:
    with running_server() as s:
        yield s  # type: ignore[misc]


@pytest.mark.parametrize("path", PATHS)
def test_without_the_token_every_path_is_refused(server: Server, path: str) -> None:
    status, headers, body = server.request(path)
    assert status == 401, (status, body)
    assert b"token" in body
    assert "Set-Cookie" not in headers


@pytest.mark.parametrize("path", PATHS)
def test_a_wrong_token_is_refused(server: Server, path: str) -> None:
    status, _, _ = server.request(path, token=server.token[:-1] + "x")
    assert status == 403
    sep = "&" if "?" in path else "?"
    status, _, _ = server.request(f"{path}{sep}token=nope")
    assert status == 403


@pytest.mark.parametrize("path", PATHS)
def test_with_the_token_every_path_answers(server: Server, path: str) -> None:
    status, _, body = server.request(path, token=server.token)
    assert status == 200, body
    sep = "&" if "?" in path else "?"
    status, _, body = server.request(f"{path}{sep}token={server.token}")
    assert status == 200, body


def test_the_printed_url_sets_a_strict_cookie_that_then_suffices(server: Server) -> None:
    status, headers, body = server.request(f"/?token={server.token}")
    assert status == 200 and b"<!doctype html>" in body
    cookie = headers["Set-Cookie"]
    name = f"torchx-ui-token-{server.port}"
    assert cookie.startswith(f"{name}={server.token};")
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie
    for path in PATHS:
        status, _, _ = server.request(path, headers={"Cookie": f"{name}={server.token}"})
        assert status == 200, path
    # a cookie of another port's server is not this one's
    status, _, _ = server.request(
        "/api/apps", headers={"Cookie": f"torchx-ui-token-1={server.token}"}
    )
    assert status == 401


@pytest.mark.parametrize(
    "host",
    [
        "evil.example",
        "evil.example:{port}",
        "127.0.0.1:1",
        "attacker.localhost:{port}",
        "0.0.0.0:{port}",
    ],
)
def test_another_host_header_is_refused_even_with_the_token(server: Server, host: str) -> None:
    for path in PATHS:
        status, _, body = server.request(
            path, token=server.token, host=host.format(port=server.port)
        )
        assert status == 403, (path, status)
        assert b"Host" in body


@pytest.mark.parametrize("host", ["127.0.0.1:{port}", "localhost:{port}", "LOCALHOST:{port}"])
def test_its_own_names_are_accepted(server: Server, host: str) -> None:
    status, _, _ = server.request(
        "/api/apps", token=server.token, host=host.format(port=server.port)
    )
    assert status == 200


def test_no_cors_header_ever(server: Server) -> None:
    origin = {"Origin": "http://evil.example"}
    for path in PATHS:
        for token in (None, server.token):
            _, headers, _ = server.request(path, token=token, headers=origin)
            assert not [h for h in headers if h.lower().startswith("access-control-")], path
    # a preflight is no way in either
    status, headers, _ = server.request(
        "/api/apps",
        method="OPTIONS",
        headers={**origin, "Access-Control-Request-Method": "GET"},
    )
    assert status in (401, 403, 405)
    assert not [h for h in headers if h.lower().startswith("access-control-")]


def test_the_page_may_not_run_inline_script_nor_be_framed(server: Server) -> None:
    for path in [*PATHS, "/api/nope", "/api/app", "/api/app?handle=slurm://x/y"]:
        _, headers, _ = server.request(path, token=server.token)
        csp = headers["Content-Security-Policy"]
        assert "script-src 'self'" in csp and "frame-ancestors 'none'" in csp
        assert "unsafe-inline" not in csp
        assert headers["Referrer-Policy"] == "no-referrer"
        assert headers["X-Content-Type-Options"] == "nosniff"


def test_nothing_but_the_page_files_is_served(server: Server) -> None:
    for path in ["/static/index.html", "/static/../server.py", "/static/server.py", "/api/nope"]:
        status, _, _ = server.request(path, token=server.token)
        assert status == 404, path
