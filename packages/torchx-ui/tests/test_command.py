"""``torchx ui`` as a user runs it: the real console script in a subprocess."""

from __future__ import annotations

import http.client
import json
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest

TORCHX = str(Path(sys.executable).parent / "torchx")


def torchx(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([TORCHX, *args], capture_output=True, text=True, timeout=timeout)


@contextmanager
def serving(*args: str) -> Iterator[tuple[subprocess.Popen[str], str]]:
    """``torchx ui ARGS`` started, with the URL it printed; stopped with SIGTERM after."""
    proc = subprocess.Popen(
        [TORCHX, "ui", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().strip()  # blocks until the server listens
        assert url, proc.stderr.read() if proc.stderr else ""
        yield proc, url
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
        proc.wait(30)


def get(url: str, path: str, token: str | None) -> tuple[int, bytes]:
    parts = urlsplit(url)
    conn = http.client.HTTPConnection("127.0.0.1", parts.port, timeout=30)
    try:
        conn.request("GET", path, headers={"X-TorchX-Token": token} if token else {})
        resp = conn.getresponse()
        return resp.status, resp.read()
    finally:
        conn.close()


def test_torchx_help_lists_ui_without_importing_the_server_library() -> None:
    for args in (["--help"], ["ui", "--help"]):
        proc = subprocess.run(
            [sys.executable, "-X", "importtime", TORCHX, *args],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert proc.returncode == 0, proc.stderr
        imported = [line.split("|")[-1].strip() for line in proc.stderr.splitlines()]
        assert not [m for m in imported if m.split(".")[0] == "aiohttp"], args
    assert "serve a live view" in torchx("--help").stdout
    assert "--port" in torchx("ui", "--help").stdout


def test_it_prints_a_url_with_a_token_and_serves_it() -> None:
    with serving() as (proc, url):
        parts = urlsplit(url)
        assert parts.scheme == "http" and parts.hostname == "127.0.0.1" and parts.path == "/"
        (token,) = parse_qs(parts.query)["token"]
        assert len(token) >= 32
        assert get(url, "/api/apps", None)[0] == 401
        status, body = get(url, "/api/apps", token)
        assert status == 200
        doc = json.loads(body)
        assert [f["scheduler"] for f in doc["data"]["schedulers"]] == ["local"]
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(30) == 0
        assert proc.stderr is not None
        err = proc.stderr.read()
    assert "warning" not in err and "Traceback" not in err


def test_two_servers_get_two_ports_and_two_tokens() -> None:
    with serving() as (_, first), serving() as (_, second):
        assert urlsplit(first).port != urlsplit(second).port
        assert first.split("token=")[1] != second.split("token=")[1]


class _Installed:
    """A Runner's view of installed schedulers: all :func:`default_schedulers` asks."""

    def __init__(self, *names: str) -> None:
        self.names = list(names)

    def scheduler_backends(self) -> list[str]:
        return self.names


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        ("", ["local"]),
        ("[cli:run]\nscheduler = slurm\n", ["slurm"]),
        (
            "[slurm]\npartition = gpu\n[nosuch]\nx = 1\n[local]\n[component:dist.ddp]\nj = 2\n",
            ["slurm", "local"],
        ),
    ],
)
def test_without_s_the_schedulers_of_torchxconfig(config: str, expected: list[str]) -> None:
    from torchx.ui.command import default_schedulers

    Path(".torchxconfig").write_text(config)
    assert default_schedulers(_Installed("local", "slurm")) == expected  # type: ignore[arg-type]


def test_a_host_other_than_loopback_warns() -> None:
    with serving("--host", "0.0.0.0") as (proc, url):
        assert urlsplit(url).hostname == "127.0.0.1"
        token = url.split("token=")[1]
        assert get(url, "/api/apps", token)[0] == 200
        proc.send_signal(signal.SIGTERM)
        proc.wait(30)
        assert proc.stderr is not None
        err = proc.stderr.read()
    assert "warning: listening on 0.0.0.0" in err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["-s", "nosuch"], "unknown scheduler 'nosuch'"),
        (["-s", "locl"], "did you mean 'local'"),
        (["--port", "99999"], "bad port '99999'"),
        (["--interval", "0"], "bad interval '0'"),
        (["-cfg", "bogus=1"], "-cfg 'bogus': none of local has this run option"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(args: list[str], message: str) -> None:
    proc = torchx("ui", *args)
    assert proc.returncode == 2, proc.stderr
    assert message in proc.stderr
    assert "Traceback" not in proc.stderr
    assert proc.stdout == ""


def test_a_port_in_use_is_one_line() -> None:
    with serving() as (_, url):
        proc = torchx("ui", "--port", str(urlsplit(url).port))
    assert proc.returncode == 2, proc.stderr
    assert "cannot listen on 127.0.0.1:" in proc.stderr and "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
