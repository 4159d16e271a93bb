"""The built documentation site in a real headless browser (``nox -s docs_browser``).

Debian's Chromium is driven over the DevTools protocol (cdp.py: a pipe, no port, no
browser download); pages are served from a folder on 127.0.0.1 by a throwaway HTTP
server. ``TORCHX_DOCS_SITE`` names the built site (the session builds it and sets it);
``TORCHX_CHROMIUM`` a Chromium other than the one on PATH.

Without Chromium or the site the tests skip, saying why; under ``CI=true`` a skip fails
(tools/pytest_plugins/ci_skips.py), and the session installs Chromium itself first.
"""

from __future__ import annotations

import functools
import http.server
import os
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from cdp import Browser, find_chromium  # noqa: E402  (after the path above)


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    """Serves a folder; never cached, so that a page changed by a test is what loads next."""

    def end_headers(self) -> None:
        self.send_header("Cache-Control", "no-store")
        super().end_headers()

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture(scope="session")
def chromium() -> str:
    found = find_chromium()
    if found is None:
        pytest.skip("no Chromium: `nox -s docs_browser` installs Debian's (apt-get, as root)")
    return found


@pytest.fixture(scope="session")
def browser(chromium: str) -> Iterator[Browser]:
    with Browser(chromium) as b:
        yield b


@pytest.fixture(scope="session")
def serve() -> Iterator[Callable[[Path], str]]:
    """``serve(folder)``: that folder over HTTP on 127.0.0.1; its base URL (ends in ``/``)."""
    servers: list[http.server.ThreadingHTTPServer] = []

    def start(folder: Path) -> str:
        handler = functools.partial(_QuietHandler, directory=str(folder))
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        server.daemon_threads = True
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return f"http://127.0.0.1:{server.server_address[1]}/"

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


@pytest.fixture(scope="session")
def site() -> Path:
    """The built site (``TORCHX_DOCS_SITE``)."""
    where = os.environ.get("TORCHX_DOCS_SITE")
    if not where:
        pytest.skip(
            "TORCHX_DOCS_SITE is not set: `nox -s docs_browser` builds the site and sets it"
        )
    path = Path(where)
    assert (path / "index.html").is_file(), f"TORCHX_DOCS_SITE={where}: no index.html there"
    return path
