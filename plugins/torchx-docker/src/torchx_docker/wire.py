"""The engine's HTTP API for the calls on the hot path, without the docker SDK.

``torchx run -s docker --wait`` of a small app takes a few hundred milliseconds, most of
them the engine's (creating and starting the container); importing the docker SDK
(docker-py, with requests and urllib3 under it) adds some 40 ms of CPU to every command
on top of that, more than anything else the scheduler does. So the calls that submitting
and following an app make (create and start containers, list and inspect them, wait for
them to stop, create the app's network) go through :class:`Wire`: HTTP/1.1 written and
read by hand on the engine's socket (``http.client`` would bring ``email`` and ``ssl``
with it, some 10 ms of CPU at every start), one connection per call (a Unix socket
connects in microseconds), the same JSON bodies the SDK sends (the tests compare them
with the SDK's, field by field). Everything else (pulling images, logs, stopping,
removing, restarting) still uses the SDK, imported when first needed.

:func:`for_address` says whether an address can be reached this way: a Unix socket
(``unix://``, the default ``/var/run/docker.sock``) or plain TCP (``tcp://`` with no TLS
asked for by ``DOCKER_TLS_VERIFY``/``DOCKER_CERT_PATH``). Anything else (TLS, ``ssh://``,
named pipes) is the SDK's alone.

Errors are those of the SDK's shape: :class:`EngineError` with ``status_code`` and
``explanation`` (:class:`NotFound` for 404, :class:`ImageNotFound` for a missing image),
and the socket's own ``OSError`` when the engine cannot be reached.

>>> for_address("unix:///var/run/docker.sock", {}).path
'/var/run/docker.sock'
>>> for_address("ssh://me@host", {}) is None
True
"""

from __future__ import annotations

import json
import socket
from collections.abc import Callable, Mapping
from typing import Any

from torchx_docker.logs import BLOCK, dechunk

#: The Unix sockets of engines that were there in this process: connected to here, or
#: seen by :mod:`torchx_docker.backend` as its clients were made. A socket missing later
#: went away (dockerd restarting), which ``classify_error`` tells from one never there.
seen_sockets: set[str] = set()

#: Lower-cased words of the engine's 404 answers that mean "no such image" (the SDK's).
_IMAGE_MISSING = (
    "no such image",
    "not found: does not exist or no pull access",
    "repository does not exist",
    "was found but does not match the specified platform",
)


#: The bytes a URL carries as they are (RFC 3986's unreserved characters): ``quote``'s.
_UNRESERVED = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-~")


def quote(text: str, plus: bool = False) -> str:
    """``urllib.parse.quote(text, safe="")`` (``quote_plus`` with ``plus``), byte for byte.

    Written here because ``urllib.parse`` imports ``ipaddress`` and more, some 2 ms at
    every ``torchx run -s docker`` for two functions (the tests compare the two).

    >>> quote("echo-1/x y"), quote("a b", plus=True)
    ('echo-1%2Fx%20y', 'a+b')
    """
    out = []
    for byte in text.encode("utf-8"):
        if byte in _UNRESERVED:
            out.append(chr(byte))
        elif plus and byte == 0x20:
            out.append("+")
        else:
            out.append(f"%{byte:02X}")
    return "".join(out)


def urlencode(query: Mapping[str, str]) -> str:
    """``urllib.parse.urlencode(query)`` of a mapping of strings, byte for byte.

    >>> urlencode({"all": "1", "filters": '{"label": ["a=b"]}'})
    'all=1&filters=%7B%22label%22%3A+%5B%22a%3Db%22%5D%7D'
    """
    return "&".join(f"{quote(k, plus=True)}={quote(str(v), plus=True)}" for k, v in query.items())


class EngineError(Exception):
    """The engine answered with an error (``status_code``, ``explanation``: its message)."""

    def __init__(self, status_code: int, explanation: str, what: str) -> None:
        super().__init__(f"{status_code} for {what}: {explanation}")
        self.status_code = status_code
        self.explanation = explanation
        self.response = None  # an answer, not an outage: see backend._unreachable


class NotFound(EngineError):
    """404: no such container (or network)."""


class ImageNotFound(NotFound):
    """404 because the image is missing."""


class Wire:
    """The engine at ``path`` (a Unix socket) or ``host``:``port`` (plain TCP)."""

    def __init__(
        self,
        path: str | None = None,
        host: str | None = None,
        port: int = 2375,
        timeout: float = 30,
    ) -> None:
        self.path = path
        self.host = host
        self.port = port
        self.timeout = timeout

    # -- the calls (the SDK's names and arguments) --------------------------------------------

    def create_host_config(self, **kw: Any) -> dict[str, Any]:
        """The ``HostConfig`` of a create call, from the SDK's keyword arguments."""
        return host_config_body(kw)

    def create_container(self, host_config: Mapping[str, Any], **kw: Any) -> dict[str, Any]:
        body = container_body(kw, host_config)
        query = {"name": kw["name"]} if kw.get("name") else None
        answer: dict[str, Any] = self._call("POST", "/containers/create", query, body)
        return answer

    def start(self, cid: str) -> None:
        self._call("POST", f"/containers/{quote(cid)}/start")

    def containers(
        self, all: bool = False, filters: Mapping[str, Any] | None = None
    ) -> list[dict[str, Any]]:
        query: dict[str, str] = {"all": "1" if all else "0"}
        if filters:
            query["filters"] = json.dumps(filters)
        found: list[dict[str, Any]] = self._call("GET", "/containers/json", query)
        return found

    def inspect_container(self, cid: str) -> dict[str, Any]:
        record: dict[str, Any] = self._call("GET", f"/containers/{quote(cid)}/json")
        return record

    def wait(
        self, cid: str, timeout: float | None = None, condition: str | None = None
    ) -> dict[str, Any]:
        query = {"condition": condition} if condition else None
        answer: dict[str, Any] = self._call(
            "POST", f"/containers/{quote(cid)}/wait", query, timeout=timeout
        )
        return answer

    def create_network(
        self,
        name: str,
        driver: str | None = None,
        check_duplicate: bool | None = None,
        labels: Mapping[str, str] | None = None,
    ) -> dict[str, Any]:
        body: dict[str, Any] = {"Name": name, "Driver": driver, "CheckDuplicate": check_duplicate}
        if labels is not None:
            body["Labels"] = dict(labels)
        answer: dict[str, Any] = self._call(
            "POST", "/networks/create", None, {k: v for k, v in body.items() if v is not None}
        )
        return answer

    def remove_network(self, net_id: str) -> None:
        self._call("DELETE", f"/networks/{quote(net_id)}")

    # -- HTTP ------------------------------------------------------------------------------------

    def _connect(self, timeout: float | None) -> socket.socket:
        if self.path is None:
            sock = socket.create_connection((self.host or "localhost", self.port), timeout)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            return sock
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(timeout)
        try:
            sock.connect(self.path)
        except BaseException:
            sock.close()
            raise
        seen_sockets.add(self.path)
        return sock

    def _call(
        self,
        method: str,
        path: str,
        query: Mapping[str, str] | None = None,
        body: Any = None,
        timeout: float | None = None,
    ) -> Any:
        """One request on a connection of its own; the decoded JSON answer (None if empty)."""
        url = path + ("?" + urlencode(query) if query else "")
        lines = [f"{method} {url} HTTP/1.1", "Host: docker", "Accept-Encoding: identity"]
        lines.append("Connection: close")
        data = b""
        if body is not None:
            data = json.dumps(body).encode()
            lines.append("Content-Type: application/json")
        if body is not None or method == "POST":
            lines.append(f"Content-Length: {len(data)}")
        sock = self._connect(self.timeout if timeout is None else timeout)
        try:
            sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode("ascii") + data)
            status, raw = _answer(sock.recv, f"{method} {path}")
        finally:
            sock.close()
        if status >= 400:
            raise _error(status, raw, f"{method} {path}")
        return json.loads(raw) if raw.strip() else None


def _answer(recv: Callable[[int], bytes], what: str) -> tuple[int, bytes]:
    """(status, body) of one HTTP/1.1 answer read with ``recv``.

    The body ends where its ``Content-Length`` says, at the last chunk of a chunked one,
    else where the engine closes the connection (asked for with ``Connection: close``).
    An answer cut short, or not HTTP, is a ``ConnectionError``: the engine could not be
    heard, as when it cannot be reached.

    >>> parts = iter([b"HTTP/1.1 201 Created\\r\\nContent-Length: 2\\r\\n\\r\\n{}"])
    >>> _answer(lambda n: next(parts, b""), "POST /containers/create")
    (201, b'{}')
    """
    buf = b""
    while b"\r\n\r\n" not in buf:
        data = recv(BLOCK)
        if not data:
            raise ConnectionResetError(f"the Docker engine closed the connection during {what}")
        buf += data
    head, _, rest = buf.partition(b"\r\n\r\n")
    status_line, *header_lines = head.decode("latin-1").split("\r\n")
    version, _, tail = status_line.partition(" ")
    code = tail[:3]
    if not version.startswith("HTTP/") or not code.isdigit():
        raise ConnectionError(f"not an HTTP answer from the Docker engine for {what}")
    headers: dict[str, str] = {}
    for line in header_lines:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    if "chunked" in headers.get("transfer-encoding", "").lower():
        pending = [rest]

        def read1(n: int) -> bytes:
            return pending.pop() if pending else recv(n)

        return int(code), b"".join(dechunk(read1))
    length = headers.get("content-length")
    if length is not None and length.isdigit():
        want = int(length)
        chunks = [rest]
        got = len(rest)
        while got < want:
            data = recv(BLOCK)
            if not data:
                raise ConnectionResetError(f"the Docker engine's answer to {what} was cut short")
            chunks.append(data)
            got += len(data)
        return int(code), b"".join(chunks)[:want]
    chunks = [rest]
    while data := recv(BLOCK):
        chunks.append(data)
    return int(code), b"".join(chunks)


def _error(status: int, raw: bytes, what: str) -> EngineError:
    text = raw.decode("utf-8", "replace").strip()
    try:
        text = str(json.loads(text)["message"])
    except (ValueError, KeyError, TypeError):
        pass
    if status == 404:
        low = text.lower()
        cls = ImageNotFound if any(f in low for f in _IMAGE_MISSING) else NotFound
        return cls(status, text, what)
    return EngineError(status, text, what)


def for_address(address: str, env: Mapping[str, str]) -> Wire | None:
    """A :class:`Wire` for the engine at ``address`` (``DOCKER_HOST``'s form), or None.

    None where only the SDK can go: TLS (``DOCKER_TLS_VERIFY`` or ``DOCKER_CERT_PATH``
    set), ``ssh://``, named pipes, anything unusual.
    """
    if address.startswith("unix://"):
        path = address[len("unix://") :]
        return Wire(path=path) if path.startswith("/") else None
    if address.startswith("tcp://") and not (
        env.get("DOCKER_TLS_VERIFY") or env.get("DOCKER_CERT_PATH")
    ):
        hostport = address[len("tcp://") :].rstrip("/")
        host, sep, port = hostport.rpartition(":")
        if not sep or "/" in hostport or not port.isdigit() or not host:
            return None
        return Wire(host=host.strip("[]"), port=int(port))
    return None


# -- the bodies: what docker-py's create_host_config and create_container send ------------------


def _port(p: Any) -> str:
    text = str(p)
    return text if "/" in text else f"{text}/tcp"


def _device(spec: str) -> dict[str, str]:
    parts = spec.split(":")
    host = parts[0]
    inside = parts[1] if len(parts) > 1 and parts[1] else host
    perms = parts[2] if len(parts) > 2 else "rwm"
    return {"PathOnHost": host, "PathInContainer": inside, "CgroupPermissions": perms}


#: The host-config keywords :mod:`torchx_docker.request` uses, and how each is sent.
_HOST_CONFIG: dict[str, tuple[str, Any]] = {
    "init": ("Init", bool),
    "network_mode": ("NetworkMode", str),
    "nano_cpus": ("NanoCpus", int),
    "mem_limit": ("Memory", int),
    "memswap_limit": ("MemorySwap", int),
    "shm_size": ("ShmSize", int),
    "privileged": ("Privileged", bool),
    "restart_policy": ("RestartPolicy", dict),
    "binds": ("Binds", list),
    "mounts": ("Mounts", list),
    "devices": ("Devices", lambda v: [_device(d) for d in v]),
    "port_bindings": (
        "PortBindings",
        lambda v: {_port(p): [{"HostIp": "", "HostPort": ""}] for p in v},
    ),
    "device_requests": (
        "DeviceRequests",
        lambda v: [
            {
                "Driver": r.get("driver", ""),
                "Count": r.get("count", 0),
                "DeviceIDs": r.get("device_ids", []),
                "Capabilities": r.get("capabilities", []),
                "Options": r.get("options", {}),
            }
            for r in v
        ],
    ),
}


def host_config_body(kw: Mapping[str, Any]) -> dict[str, Any]:
    """The API's ``HostConfig`` for the SDK's ``create_host_config(**kw)``.

    Only the keywords the request uses are known (a new one is a ``KeyError`` that the
    tests catch), and only the forms it uses (``port_bindings`` to free host ports).
    """
    if kw.get("network_mode") == "host" and kw.get("port_bindings"):
        # refused before any call, as the SDK refuses it
        raise EngineError(400, '"host" network_mode is incompatible with port_bindings', "create")
    out: dict[str, Any] = {}
    if kw.get("network_mode") is None:
        out["NetworkMode"] = "default"  # as the SDK sends it
    for key, value in kw.items():
        name, convert = _HOST_CONFIG[key]
        if key == "port_bindings" and any(v is not None for v in value.values()):
            raise KeyError("port_bindings to given host ports")
        if value is None or (key == "privileged" and not value):
            continue
        out[name] = convert(value)
    return out


def container_body(kw: Mapping[str, Any], host_config: Mapping[str, Any]) -> dict[str, Any]:
    """The API's create body for the SDK's ``create_container(**kw, host_config=...)``."""
    known = {
        "image",
        "entrypoint",
        "command",
        "name",
        "hostname",
        "labels",
        "environment",
        "stop_timeout",
        "ports",
    }
    unknown = set(kw) - known
    if unknown:
        raise KeyError(f"create_container keywords {sorted(unknown)}")
    env = kw.get("environment")
    body: dict[str, Any] = {
        "Hostname": kw.get("hostname"),
        "Tty": False,
        "OpenStdin": False,
        "StdinOnce": False,
        "AttachStdin": False,
        "AttachStdout": True,
        "AttachStderr": True,
        "Env": None if env is None else [f"{k}={v}" for k, v in env.items()],
        "Cmd": kw.get("command"),
        "Image": kw["image"],
        "NetworkDisabled": False,
        "Entrypoint": kw.get("entrypoint"),
        "HostConfig": dict(host_config),
        "Labels": kw.get("labels"),
        "StopTimeout": kw.get("stop_timeout"),
    }
    ports = kw.get("ports")
    if ports:
        body["ExposedPorts"] = {_port(p): {} for p in ports}
    return {k: v for k, v in body.items() if v is not None}
