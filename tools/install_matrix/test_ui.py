"""Row: torchx-ui (with torchx-cli, the runner and specs). The page is served from the wheel.

``torchx --help`` lists ``ui`` without importing aiohttp; ``torchx ui`` serves its page,
script and style from the installed package (package data of the wheel: no build step,
nothing fetched), and refuses a request without its token.
"""

from __future__ import annotations

import http.client
import json
import signal
import subprocess
from urllib.parse import parse_qs, urlsplit

import pytest
from conftest import Env, MakeEnv, ok


@pytest.fixture(scope="module")
def env(make_env: MakeEnv) -> Env:
    return make_env("ui", "torchx-ui")


def test_the_ui_its_siblings_and_aiohttp_are_installed(env: Env) -> None:
    installed = env.installed()
    assert {"torchx-ui", "torchx-cli", "torchx-runner", "torchx-specs", "aiohttp"} <= installed


def test_the_command_is_contributed_and_help_never_imports_the_server(env: Env) -> None:
    data = json.loads(ok(env.torchx("plugins", "--json")))["data"]
    assert data["failures"] == [] and data["clashes"] == []
    assert data["distributions"]["torchx-ui"]["cli_commands"] == ["ui"]
    ok(env.torchx("plugins", "--check"))
    for args in (["--help"], ["ui", "--help"]):
        proc = env.run(env.python, "-X", "importtime", env.bin / "torchx", *args)
        assert proc.returncode == 0, proc.stderr
        modules = {line.split("|")[-1].strip().split(".")[0] for line in proc.stderr.splitlines()}
        assert "aiohttp" not in modules, args
    assert "ui " in ok(env.torchx("--help"))


def _get(port: int, path: str, token: str | None) -> tuple[int, str, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.request("GET", path, headers={"X-TorchX-Token": token} if token else {})
        resp = conn.getresponse()
        return resp.status, resp.headers.get("Content-Type", ""), resp.read()
    finally:
        conn.close()


def test_the_page_is_served_from_the_wheel(env: Env) -> None:
    proc = subprocess.Popen(
        [str(env.bin / "torchx"), "ui"],
        cwd=env.work,
        env=env.environ,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().strip()
        parts = urlsplit(url)
        assert parts.port is not None, url
        (token,) = parse_qs(parts.query)["token"]
        assert _get(parts.port, "/", None)[0] == 401
        status, ctype, body = _get(parts.port, "/", token)
        assert status == 200 and ctype.startswith("text/html") and b"/static/app.js" in body
        status, ctype, body = _get(parts.port, "/static/app.js", token)
        assert status == 200 and ctype.startswith("text/javascript") and b"EventSource" in body
        status, ctype, _ = _get(parts.port, "/static/app.css", token)
        assert status == 200 and ctype.startswith("text/css")
        status, _, body = _get(parts.port, "/api/apps", token)
        assert status == 200 and json.loads(body)["kind"] == "UiApps"
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(30) == 0
