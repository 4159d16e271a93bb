"""The SDK-free client of the hot path: the same bodies as docker-py, HTTP on a Unix socket."""

from __future__ import annotations

import http.server
import json
import os
import socket
import socketserver
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import docker
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from torchx_docker import wire
from torchx_docker.backend import DockerBackend
from torchx_docker.options import DockerOpts
from torchx_docker.request import make_request

from torchx.schedulers.contract.errors import SchedulerError, TransientSchedulerError
from torchx.specs import (
    AppDef,
    BindMount,
    DeviceMount,
    Resource,
    RetryPolicy,
    Role,
    VolumeMount,
)

SDK = docker.APIClient(version="1.41")  # no engine: only its body builders are used


def _sdk_bodies(config: dict[str, Any], host_config: dict[str, Any]) -> dict[str, Any]:
    hc = SDK.create_host_config(**host_config)
    kw = {k: v for k, v in config.items() if k != "name"}  # the name is a query parameter
    body = SDK.create_container_config(**kw, host_config=hc)
    return {k: v for k, v in body.items() if v is not None}  # as the SDK posts it


def _ours(config: dict[str, Any], host_config: dict[str, Any]) -> dict[str, Any]:
    return wire.container_body(config, wire.host_config_body(host_config))


ROLES = [
    Role("plain", "img", entrypoint="echo", args=["hi"]),
    Role(
        "rich",
        "img:1",
        entrypoint="python",
        args=["-m", "x", "${replica_id}"],
        env={"A": "1", "B": "x=y", "EMPTY": ""},
        num_replicas=2,
        max_retries=2,
        retry_policy=RetryPolicy.REPLICA,
        resource=Resource(cpu=2, gpu=1, memMB=512, devices={"vpc.amazonaws.com/efa": 2}),
        port_map={"http": 8080, "tb": 6006},
        mounts=[
            BindMount("/data", "/in", read_only=True),
            VolumeMount("cache", "/cache"),
            DeviceMount("/dev/fuse", "/dev/fuse", "rw"),
        ],
    ),
]


@pytest.mark.parametrize(
    "cfg",
    [
        {},
        {"privileged": True, "shm_size": "2g", "stop_grace": 3},
        {"network": "host"},
        {"network": "mynet", "env": {"X": "1"}, "copy_env": ["HOME"]},
    ],
)
@pytest.mark.parametrize("role", ROLES, ids=lambda r: r.name)
def test_the_bodies_are_the_sdks(role: Role, cfg: dict[str, Any]) -> None:
    request = make_request(
        AppDef("app", [role]), "app-x1", DockerOpts.from_cfg(cfg), {"HOME": "/root"}
    )
    for c in request.containers:
        try:
            expected = _sdk_bodies(c.config, c.host_config)
        except docker.errors.InvalidArgument as e:  # refused by both, with the same words
            with pytest.raises(wire.EngineError) as ours:
                _ours(c.config, c.host_config)
            assert ours.value.explanation == str(e)
            continue
        assert _ours(c.config, c.host_config) == expected


@settings(max_examples=150, deadline=None)
@given(
    cpu=st.integers(0, 64),
    gpu=st.integers(0, 8),
    mem=st.integers(0, 1 << 20),
    ports=st.dictionaries(
        st.text("abc", min_size=1, max_size=3), st.integers(1, 65535), max_size=3
    ),
    env=st.dictionaries(
        st.from_regex(r"[A-Z_][A-Z0-9_]{0,6}", fullmatch=True), st.text(max_size=8), max_size=3
    ),
    args=st.lists(st.text(max_size=8), max_size=3),
    privileged=st.booleans(),
    retries=st.integers(0, 3),
)
def test_the_bodies_are_the_sdks_for_any_resources(
    cpu: int,
    gpu: int,
    mem: int,
    ports: dict[str, int],
    env: dict[str, str],
    args: list[str],
    privileged: bool,
    retries: int,
) -> None:
    role = Role(
        "r",
        "img",
        entrypoint="sh",
        args=args,
        env=env,
        port_map=ports,
        max_retries=retries,
        retry_policy=RetryPolicy.REPLICA,
        resource=Resource(cpu=cpu, gpu=gpu, memMB=mem),
    )
    request = make_request(
        AppDef("a", [role]), "a-1", DockerOpts.from_cfg({"privileged": privileged}), {}
    )
    (c,) = request.containers
    assert _ours(c.config, c.host_config) == _sdk_bodies(c.config, c.host_config)


def test_a_keyword_it_does_not_know_is_an_error_not_a_silent_drop() -> None:
    with pytest.raises(KeyError):
        wire.host_config_body({"cap_add": ["SYS_ADMIN"]})
    with pytest.raises(KeyError):
        wire.container_body({"image": "i", "user": "me"}, {})


@pytest.mark.parametrize(
    ("address", "env", "where"),
    [
        ("unix:///var/run/docker.sock", {}, ("/var/run/docker.sock", None, 2375)),
        ("unix:///tmp/d.sock", {"DOCKER_TLS_VERIFY": "1"}, ("/tmp/d.sock", None, 2375)),
        ("tcp://127.0.0.1:2375", {}, (None, "127.0.0.1", 2375)),
        ("tcp://[::1]:2376", {}, (None, "::1", 2376)),
        ("tcp://10.0.0.1:2376", {"DOCKER_TLS_VERIFY": "1"}, None),
        ("tcp://10.0.0.1:2376", {"DOCKER_CERT_PATH": "/certs"}, None),
        ("tcp://10.0.0.1", {}, None),
        ("ssh://me@host", {}, None),
        ("npipe:////./pipe/docker_engine", {}, None),
        ("unix://relative.sock", {}, None),
    ],
)
def test_which_addresses_it_reaches(
    address: str, env: dict[str, str], where: tuple[Any, ...] | None
) -> None:
    w = wire.for_address(address, env)
    assert (None if w is None else (w.path, w.host, w.port)) == where


# -- HTTP on a Unix socket, against a small engine stand-in ------------------------------------


class _Engine(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True
    seen: list[tuple[str, str, Any]]
    answers: dict[tuple[str, str], tuple[int, Any]]


class _Handler(http.server.BaseHTTPRequestHandler):
    server: _Engine

    def _answer(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length)) if length else None
        self.server.seen.append((self.command, self.path, body))
        status, answer = self.server.answers.get(
            (self.command, self.path.split("?")[0]), (200, None)
        )
        data = b"" if answer is None else json.dumps(answer).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_POST = _answer

    def address_string(self) -> str:
        return "unix"

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def stand_in(tmp_path: Path) -> Iterator[tuple[_Engine, wire.Wire]]:
    path = str(tmp_path / "engine.sock")
    server = _Engine(path, _Handler)
    server.seen, server.answers = [], {}
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield server, wire.Wire(path=path, timeout=10)
    finally:
        server.shutdown()
        server.server_close()


def test_calls_are_the_apis_paths_queries_and_bodies(stand_in: tuple[_Engine, wire.Wire]) -> None:
    server, w = stand_in
    server.answers[("POST", "/containers/create")] = (201, {"Id": "abc", "Warnings": []})
    server.answers[("GET", "/containers/json")] = (200, [{"Id": "abc"}])
    server.answers[("POST", "/containers/abc/wait")] = (200, {"StatusCode": 3})
    hc = w.create_host_config(init=True, mem_limit=1 << 26)
    assert w.create_container(host_config=hc, image="i", name="n-1", command=["x"]) == {
        "Id": "abc",
        "Warnings": [],
    }
    w.start("abc")
    assert w.containers(all=True, filters={"label": ["k=v"]}) == [{"Id": "abc"}]
    assert w.wait("abc", timeout=5, condition="not-running") == {"StatusCode": 3}
    create, start, listing, wait = server.seen
    assert create[:2] == ("POST", "/containers/create?name=n-1")
    assert create[2]["HostConfig"] == {"NetworkMode": "default", "Init": True, "Memory": 1 << 26}
    assert create[2]["Cmd"] == ["x"] and create[2]["Image"] == "i"
    assert start[:2] == ("POST", "/containers/abc/start")
    assert listing[1] == "/containers/json?all=1&filters=%7B%22label%22%3A+%5B%22k%3Dv%22%5D%7D"
    assert wait[1] == "/containers/abc/wait?condition=not-running"


@pytest.mark.parametrize(
    ("status", "message", "error"),
    [
        (404, "No such image: busybox:nope", wire.ImageNotFound),
        (404, "No such container: abc", wire.NotFound),
        (409, "Conflict. The container name /x is already in use", wire.EngineError),
        (500, "driver failed", wire.EngineError),
    ],
)
def test_refusals_carry_the_status_and_the_engines_message(
    stand_in: tuple[_Engine, wire.Wire], status: int, message: str, error: type[Exception]
) -> None:
    server, w = stand_in
    server.answers[("POST", "/containers/create")] = (status, {"message": message})
    with pytest.raises(error) as info:
        w.create_container(host_config={}, image="i")
    assert type(info.value) is error
    assert info.value.status_code == status  # type: ignore[attr-defined]
    assert info.value.explanation == message  # type: ignore[attr-defined]


def test_no_engine_is_an_os_error(tmp_path: Path) -> None:
    with pytest.raises(OSError):
        wire.Wire(path=str(tmp_path / "nobody.sock")).containers()


def test_the_hot_path_does_not_import_the_sdk(tmp_path: Path) -> None:
    """A dry run and the bodies, in a fresh process: no docker, requests nor urllib3."""
    code = (
        "import sys\n"
        "from torchx_docker import wire\n"
        "from torchx_docker.scheduler import create_scheduler\n"
        "from torchx.specs import AppDef, Role, Resource\n"
        "app = AppDef('a', [Role('r', image='i', entrypoint='e', resource=Resource(1, 0, 64))])\n"
        "info = create_scheduler('s').submit_dryrun(app, {})\n"
        "c = info.request.containers[0]\n"
        "wire.container_body(c.config, wire.host_config_body(c.host_config))\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('docker', 'requests', 'urllib3')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


# -- the HTTP answer as the engine may frame it (read by hand, not by http.client) -----------


def _raw_engine(tmp_path: Path, answer: bytes) -> tuple[str, list[bytes]]:
    """A Unix socket that reads one request, writes ``answer`` as given and closes."""
    path = str(tmp_path / "raw.sock")
    server = socketserver.UnixStreamServer(path, socketserver.BaseRequestHandler)
    requests: list[bytes] = []

    def serve() -> None:
        conn, _ = server.socket.accept()
        with conn:
            data = b""
            while b"\r\n\r\n" not in data:
                data += conn.recv(4096)
            head, _, body = data.partition(b"\r\n\r\n")
            length = [
                int(h.split(b":")[1])
                for h in head.split(b"\r\n")
                if h.lower().startswith(b"content-length:")
            ]
            while length and len(body) < length[0]:
                body += conn.recv(4096)
            requests.append(head + b"\r\n\r\n" + body)
            conn.sendall(answer)
        server.server_close()

    threading.Thread(target=serve, daemon=True).start()
    return path, requests


def test_a_chunked_answer_is_joined(tmp_path: Path) -> None:
    """The engine's wait call answers chunked (headers first, the body when the container stops)."""
    answer = b'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\n{"Sta\r\nc\r\ntusCode": 3}\r\n0\r\n\r\n'
    path, requests = _raw_engine(tmp_path, answer)
    assert wire.Wire(path=path, timeout=10).wait("abc") == {"StatusCode": 3}
    request = requests[0].decode()
    assert request.startswith("POST /containers/abc/wait HTTP/1.1\r\n")
    assert "Content-Length: 0\r\n" in request and "Connection: close\r\n" in request


def test_an_answer_without_length_ends_when_the_engine_closes(tmp_path: Path) -> None:
    path, requests = _raw_engine(tmp_path, b'HTTP/1.0 200 OK\r\n\r\n[{"Id": "a"}]')
    assert wire.Wire(path=path, timeout=10).containers() == [{"Id": "a"}]
    assert requests[0].startswith(b"GET /containers/json?all=0 HTTP/1.1\r\n")
    assert b"Content-Length" not in requests[0]


def test_a_body_is_sent_with_its_length(tmp_path: Path) -> None:
    path, requests = _raw_engine(
        tmp_path, b'HTTP/1.1 201 Created\r\nContent-Length: 11\r\n\r\n{"Id": "x"}'
    )
    assert wire.Wire(path=path, timeout=10).create_container({}, image="i") == {"Id": "x"}
    head, _, body = requests[0].partition(b"\r\n\r\n")
    assert json.loads(body)["Image"] == "i"
    assert f"Content-Length: {len(body)}".encode() in head
    assert b"Content-Type: application/json" in head


@pytest.mark.parametrize(
    "answer",
    [
        b"",
        b"HTTP/1.1 200 OK\r\nContent-Le",
        b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\n{}",
        b"SSH-2.0\r\n\r\n",
    ],
)
def test_an_answer_cut_short_or_not_http_is_an_os_error(tmp_path: Path, answer: bytes) -> None:
    """Seen as an engine that cannot be reached (an ``OSError`` without an answer)."""
    path, _ = _raw_engine(tmp_path, answer)
    with pytest.raises(OSError):
        wire.Wire(path=path, timeout=10).containers()


def test_a_call_imports_no_http_client(tmp_path: Path) -> None:
    """http.client brings email and ssl: some 10 ms of CPU at every ``torchx run`` start;
    urllib.parse brings ipaddress (``wire.quote`` and ``wire.urlencode`` stand in)."""
    path, _ = _raw_engine(tmp_path, b"HTTP/1.1 204 No Content\r\nContent-Length: 0\r\n\r\n")
    listed = tmp_path / "list"
    listed.mkdir()
    path2, _ = _raw_engine(listed, b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n[]")
    code = (
        "import sys\n"
        "from torchx_docker import wire\n"
        f"wire.Wire(path={path!r}, timeout=10).start('abc')\n"
        f"wire.Wire(path={path2!r}, timeout=10).containers(all=True, filters={{'label': ['a=b']}})\n"
        "print(sorted(m for m in sys.modules\n"
        "             if m.split('.')[0] in ('http', 'email', 'ssl', 'urllib', 'ipaddress')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


# -- URLs quoted as urllib.parse quotes them (without importing it) -----------------------------


@settings(max_examples=300)
@given(st.text())
def test_quote_is_urllib_quote(text: str) -> None:
    import urllib.parse

    try:
        expected = urllib.parse.quote(text, safe="")
    except UnicodeEncodeError:  # a lone surrogate: neither can encode it
        with pytest.raises(UnicodeEncodeError):
            wire.quote(text)
        return
    assert wire.quote(text) == expected
    assert wire.quote(text, plus=True) == urllib.parse.quote_plus(text, safe="")


@settings(max_examples=200)
@given(st.dictionaries(st.text(max_size=20), st.text(max_size=60), max_size=4))
def test_urlencode_is_urllib_urlencode(query: dict[str, str]) -> None:
    import urllib.parse

    try:
        expected = urllib.parse.urlencode(query)
    except UnicodeEncodeError:
        return  # a lone surrogate: neither sends it (checked by the quote test)
    assert wire.urlencode(query) == expected


def test_a_filtered_list_asks_for_the_urllib_encoded_query(tmp_path: Path) -> None:
    """The request line of a real call: the JSON filter quoted as the SDK quotes it."""
    import urllib.parse

    path, requests = _raw_engine(tmp_path, b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n[]")
    filters = {"label": ["torchx.pytorch.org/app-id=echo-1 x"]}
    assert wire.Wire(path=path, timeout=10).containers(all=True, filters=filters) == []
    query = urllib.parse.urlencode({"all": "1", "filters": json.dumps(filters)})
    assert requests[0].split(b"\r\n", 1)[0] == f"GET /containers/json?{query} HTTP/1.1".encode()


# -- a missing socket: no engine, or an engine that went away (backend.classify_error) -------


@pytest.fixture
def fresh_process(monkeypatch: pytest.MonkeyPatch) -> None:
    """No socket seen yet, as in a new process (the record is process-wide)."""
    monkeypatch.setattr(wire, "seen_sockets", set())


def test_a_socket_never_there_is_no_engine_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fresh_process: None
) -> None:
    address = f"unix://{tmp_path}/no-engine.sock"
    monkeypatch.setenv("DOCKER_HOST", address)
    backend = DockerBackend()
    with pytest.raises(OSError) as info:
        backend.containers(None)
    err = backend.classify_error(info.value)
    assert type(err) is SchedulerError and not isinstance(err, TransientSchedulerError)
    text = str(err)
    assert text.startswith(f"no Docker engine answers at {address}: ")
    assert "start dockerd" in text and "DOCKER_HOST" in text and "restarting" in text
    assert "\n" not in text


def test_a_socket_that_went_away_is_an_outage(
    stand_in: tuple[_Engine, wire.Wire],
    monkeypatch: pytest.MonkeyPatch,
    fresh_process: None,
) -> None:
    """dockerd removes its socket while it restarts: a follower that reached it rides
    that out (transient); a new process in that moment is told there is no engine."""
    server, w = stand_in
    assert w.path is not None
    monkeypatch.setenv("DOCKER_HOST", f"unix://{w.path}")
    server.answers[("GET", "/containers/json")] = (200, [])
    backend = DockerBackend()
    assert backend.containers(None) == []  # the engine answered this process
    server.shutdown()
    server.server_close()
    os.unlink(w.path)  # dockerd restarting: no socket for a moment
    with pytest.raises(OSError) as info:
        backend.containers(None)
    assert isinstance(backend.classify_error(info.value), TransientSchedulerError)
    wire.seen_sockets.clear()  # a new process, started in that moment
    err = DockerBackend().classify_error(info.value)
    assert type(err) is SchedulerError and "no Docker engine answers at" in str(err)


def test_a_socket_there_but_refusing_is_an_outage(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fresh_process: None
) -> None:
    """A socket file nobody listens on (a dockerd killed, or starting): it was there,
    so it is an outage even on the first call."""
    path = str(tmp_path / "stale.sock")
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stale.bind(path)  # bound, never listening: connecting is refused
    try:
        monkeypatch.setenv("DOCKER_HOST", f"unix://{path}")
        backend = DockerBackend()
        with pytest.raises(ConnectionRefusedError) as info:
            backend.containers(None)
        err = backend.classify_error(info.value)
        assert isinstance(err, TransientSchedulerError)
        assert "cannot reach the Docker engine" in str(err)
    finally:
        stale.close()


def test_a_tcp_engine_that_refuses_is_an_outage(
    monkeypatch: pytest.MonkeyPatch, fresh_process: None
) -> None:
    monkeypatch.setenv("DOCKER_HOST", "tcp://127.0.0.1:1")
    err = DockerBackend().classify_error(ConnectionRefusedError(111, "refused"))
    assert isinstance(err, TransientSchedulerError)
