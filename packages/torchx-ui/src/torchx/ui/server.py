"""The HTTP server of ``torchx ui`` (aiohttp): the page, its JSON and its event stream.

Routes, every one behind the checks of :mod:`torchx.ui.security` (Host, then token):

* ``GET /`` the page (``static/index.html``; opened as ``/?token=...``, which sets the
  token's cookie), ``GET /static/{app.js,app.css}`` its script and style;
* ``GET /api/apps`` the apps of every scheduler (:meth:`torchx.ui.poller.Poller.snapshot`);
* ``GET /api/events`` server-sent events: an ``apps`` event with that document at once,
  then one at every change (within the poll interval), a ``replicas`` event (``{handle:
  "running/total"}`` of the rows the pages show) whenever a count changes, and a comment
  line every :data:`KEEPALIVE_S` seconds so that proxies and the browser keep the stream open;
* ``POST /api/replicas`` (``{"handles": [...]}``) the rows a page shows: only those are
  described, for their replicas' counts (:class:`torchx.ui.counts.ReplicaCounts`); the
  answer has the counts known now (``{"replicas": {handle: "2/4"}}``);
* ``GET /api/app?handle=H``, ``POST /api/cancel`` and ``POST /api/delete`` one app's
  status and AppDef, and its cancel and delete (:class:`torchx.ui.approutes.AppRoutes`).
  A state change needs the token in the ``X-TorchX-Token`` header: the cookie alone,
  which the browser would attach to a forged form post too, is not enough;
* ``GET /api/log`` and ``GET /api/log/page`` an app's log, followed live as server-sent
  events, and its earlier pages (:class:`torchx.ui.logroutes.LogRoutes`).

A handle of a scheduler the page does not show is refused (404).

Every answer forbids framing and inline scripts (Content-Security-Policy) and sends no
Referer (the URL holds the token); none carries a CORS header (:mod:`torchx.ui.guard`,
the middleware, applies the checks and the headers).

:class:`UiServer` runs in the caller's event loop; :func:`serve_in_thread` runs one in a
thread of its own (the tests, and any caller without a loop).
"""

from __future__ import annotations

import asyncio
import socket
import threading
from collections.abc import Callable
from importlib import resources

from aiohttp import web

from torchx.ui import security
from torchx.ui.answers import KEEPALIVE_S, event, open_stream
from torchx.ui.approutes import AppRoutes
from torchx.ui.counts import WATCH_MAX, ReplicaCounts
from torchx.ui.guard import guard
from torchx.ui.logroutes import BATCH_LINES, BATCH_S, LOG_HELD, LogRoutes
from torchx.ui.poller import Poller

__all__ = [
    "BATCH_LINES",
    "BATCH_S",
    "KEEPALIVE_S",
    "LOG_HELD",
    "STATIC",
    "ThreadedServer",
    "UiServer",
    "serve_in_thread",
    "static_text",
]

#: The page's files: name -> content type. Nothing else is served from the package.
STATIC = {
    "index.html": "text/html; charset=utf-8",
    "app.js": "text/javascript; charset=utf-8",
    "app.css": "text/css; charset=utf-8",
}


def static_text(name: str) -> str:
    """One of the page's files, read from the installed package (works from the wheel)."""
    return resources.files("torchx.ui").joinpath("static", name).read_text(encoding="utf-8")


class _Hub:
    """The newest snapshot generation and replica counts' generation, awaited by the event
    streams (in the server's loop)."""

    def __init__(self) -> None:
        self.generation = 0
        self.counts = 0
        self.changed = asyncio.Condition()

    async def bump(self, generation: int, counts: int | None = None) -> None:
        async with self.changed:
            self.generation = max(self.generation, generation)
            if counts is not None:
                self.counts = max(self.counts, counts)
            self.changed.notify_all()

    async def wait_newer(self, seen: int, timeout: float, seen_counts: int = -1) -> bool:
        """Waits until the generation is past ``seen`` or the counts' past ``seen_counts``;
        False when ``timeout`` passed first."""
        async with self.changed:
            try:
                await asyncio.wait_for(
                    self.changed.wait_for(
                        lambda: self.generation > seen or self.counts > seen_counts
                    ),
                    timeout,
                )
            except TimeoutError:
                return False
            return True


class UiServer:
    """The page and its API over ``poller``, listening on ``host:port`` (0: a free port).

    ``start`` binds the socket (so ``port`` and :attr:`url` are known) and starts
    the poller; ``stop`` ends the event streams, the server and the poller.
    """

    def __init__(
        self,
        poller_factory: Callable[[Callable[[], None]], Poller],
        host: str,
        port: int,
        refresh_s: float = 10.0,
    ) -> None:
        self.host = host
        self.token = security.new_token()
        self._sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._sock.bind((host, port))
        self.port: int = self._sock.getsockname()[1]
        self._allowed = security.allowed_hosts(host, self.port)
        self._hub = _Hub()
        self._loop: asyncio.AbstractEventLoop | None = None
        self.poller = poller_factory(self._changed)
        #: the replicas' counts of the rows the pages show (``refresh_s``: how often a
        #: running app's are asked again)
        self.counts = ReplicaCounts(
            self.poller.runner_factory, self.poller.row_keys, self._counted, refresh_s
        )
        self._runner: web.AppRunner | None = None
        self._closing = asyncio.Event()

    @property
    def url(self) -> str:
        """What the user opens: the page with the token (a loopback name when the server
        listens everywhere)."""
        host = "127.0.0.1" if self.host in security.ANY_ADDRESS else self.host
        shown = f"[{host}]" if ":" in host else host
        return f"http://{shown}:{self.port}/?token={self.token}"

    def _changed(self) -> None:
        """Called by the poller's threads: wakes the event streams in the server's loop."""
        self.counts.listed()
        loop = self._loop
        if loop is not None and not loop.is_closed():
            generation = self.poller.generation
            asyncio.run_coroutine_threadsafe(self._hub.bump(generation), loop)

    def _counted(self) -> None:
        """Called by the describing threads when a count changed: wakes the event streams."""
        loop = self._loop
        if loop is not None and not loop.is_closed():
            counts = self.counts.generation
            asyncio.run_coroutine_threadsafe(self._hub.bump(0, counts), loop)

    async def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        app = web.Application(middlewares=[guard(self.token, self.port, self._allowed)])
        app.router.add_get("/", self._page)
        app.router.add_get("/static/{name}", self._static)
        app.router.add_get("/api/apps", self._apps)
        app.router.add_get("/api/events", self._events)
        app.router.add_get("/favicon.ico", self._no_icon)
        app.router.add_post("/api/replicas", self._replicas)
        AppRoutes(self.poller).add_to(app.router)
        LogRoutes(self.poller, self._closing).add_to(app.router)
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=1.0)
        await self._runner.setup()
        self._sock.listen(128)
        await web.SockSite(self._runner, self._sock).start()
        self.poller.start()
        self.counts.start()

    async def stop(self) -> None:
        self._closing.set()
        await self._hub.bump(self._hub.generation + 1)  # wakes the streams, which then end
        if self._runner is not None:
            await self._runner.cleanup()
        await asyncio.to_thread(self.poller.stop)
        await asyncio.to_thread(self.counts.stop)

    async def _page(self, request: web.Request) -> web.StreamResponse:
        # the page's script sends the token in a header with its POSTs (the cookie is
        # HttpOnly): only someone who already holds the token is served this page
        page = static_text("index.html").replace("__TORCHX_UI_TOKEN__", self.token)
        return web.Response(text=page, content_type="text/html")

    async def _no_icon(self, request: web.Request) -> web.StreamResponse:
        """No icon (a 404 would be an error in the browser's console)."""
        return web.Response(status=204)

    async def _static(self, request: web.Request) -> web.StreamResponse:
        name = request.match_info["name"]
        if name not in STATIC or name == "index.html":
            raise web.HTTPNotFound(text="no such file")
        ctype, _, charset = STATIC[name].partition("; charset=")
        return web.Response(text=static_text(name), content_type=ctype, charset=charset)

    async def _apps(self, request: web.Request) -> web.StreamResponse:
        return web.json_response(self.poller.snapshot())

    async def _replicas(self, request: web.Request) -> web.StreamResponse:
        """The rows a page shows (at most :data:`~torchx.ui.counts.WATCH_MAX`): their
        counts known now; the others are described and sent as ``replicas`` events."""
        try:
            body = await request.json()
        except ValueError:
            body = None
        handles = body.get("handles") if isinstance(body, dict) else None
        if not isinstance(handles, list) or not all(isinstance(h, str) for h in handles):
            raise web.HTTPBadRequest(text='expected JSON: {"handles": ["...", ...]}\n')
        if len(handles) > WATCH_MAX:
            raise web.HTTPBadRequest(text=f"at most {WATCH_MAX} handles at once\n")
        return web.json_response({"replicas": self.counts.watch(handles)})

    async def _events(self, request: web.Request) -> web.StreamResponse:
        response = await open_stream(request)
        seen, seen_counts = -1, 0
        try:
            while not self._closing.is_set():
                if self._hub.generation > seen or seen < 0:
                    doc = self.poller.snapshot()
                    seen = max(seen, doc["data"]["generation"], self._hub.generation)
                    await response.write(event("apps", doc))
                if self._hub.counts > seen_counts:
                    seen_counts = self._hub.counts
                    await response.write(event("replicas", self.counts.known()))
                while not await self._hub.wait_newer(seen, KEEPALIVE_S, seen_counts):
                    await response.write(b": keep-alive\n\n")
        except ConnectionResetError:
            pass  # the page went away (closed, reloaded): nothing to say, nobody to say it to
        return response


class ThreadedServer:
    """A :class:`UiServer` in a thread of its own with its own event loop."""

    def __init__(self, server: UiServer) -> None:
        self.server = server
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="torchx-ui-http")
        self._thread.daemon = True

    def start(self) -> ThreadedServer:
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self.server.start(), self._loop).result(30)
        return self

    def stop(self) -> None:
        asyncio.run_coroutine_threadsafe(self.server.stop(), self._loop).result(30)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(30)
        self._loop.close()


def serve_in_thread(
    poller_factory: Callable[[Callable[[], None]], Poller],
    host: str = "127.0.0.1",
    port: int = 0,
    refresh_s: float = 10.0,
) -> ThreadedServer:
    """Starts a server in a background thread; ``.server.url`` to open, ``.stop()`` to end."""
    return ThreadedServer(UiServer(poller_factory, host, port, refresh_s)).start()
