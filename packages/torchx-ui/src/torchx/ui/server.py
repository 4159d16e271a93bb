"""The HTTP server of ``torchx ui`` (aiohttp): the page, its JSON and its event stream.

Routes, every one behind the checks of :mod:`torchx.ui.security` (Host, then token):

* ``GET /`` the page (``static/index.html``; opened as ``/?token=...``, which sets the
  token's cookie), ``GET /static/{app.js,app.css}`` its script and style;
* ``GET /api/apps`` the apps of every scheduler (:meth:`torchx.ui.poller.Poller.snapshot`);
* ``GET /api/events`` server-sent events: an ``apps`` event with that document at once,
  then one at every change (within the poll interval), and a comment line every
  :data:`KEEPALIVE_S` seconds so that proxies and the browser keep the stream open;
* ``GET /api/app?handle=H`` one app's status and AppDef (:func:`torchx.ui.apps.describe`:
  one describe, asked only for the app the page shows);
* ``GET /api/log?handle=H[&role=R&replica=N][&regex=RE]`` server-sent events: ``lines``
  events (a batch of up to :data:`BATCH_LINES` of a replica's log lines, gathered for
  :data:`BATCH_S`, followed live; only those ``RE`` matches; without ``role`` every
  replica's, merged) and one ``end`` event;
* ``GET /api/log/page?handle=H&role=R&replica=N&offset=I&limit=L[&regex=RE]`` earlier
  lines of one replica's log (JSON), for the page's "load earlier";
* ``POST /api/cancel`` and ``POST /api/delete`` (``{"handle": H}``) cancel or delete an
  app (409 with the scheduler's reason when it refuses). A state change needs the token
  in the ``X-TorchX-Token`` header: the cookie alone, which the browser would attach to
  a forged form post too, is not enough.

A handle of a scheduler the page does not show is refused (404).

Every answer forbids framing and inline scripts (Content-Security-Policy) and sends no
Referer (the URL holds the token); none carries a CORS header.

:class:`UiServer` runs in the caller's event loop; :func:`serve_in_thread` runs one in a
thread of its own (the tests, and any caller without a loop).
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
from collections.abc import Awaitable, Callable
from importlib import resources
from typing import TYPE_CHECKING, Any

from aiohttp import web

from torchx.ui import security
from torchx.ui.poller import Poller

if TYPE_CHECKING:
    from torchx.runner import Runner

#: Seconds between two keep-alive comments of an idle event stream.
KEEPALIVE_S = 15.0

#: A log stream gathers lines this long before it sends them (one message per batch).
BATCH_S = 0.05

#: The most lines in one ``lines`` event.
BATCH_LINES = 1_000

#: The most lines a log stream holds untaken, over all the replicas it follows.
LOG_HELD = 10_000

#: The page's files: name -> content type. Nothing else is served from the package.
STATIC = {
    "index.html": "text/html; charset=utf-8",
    "app.js": "text/javascript; charset=utf-8",
    "app.css": "text/css; charset=utf-8",
}

_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
        "img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def static_text(name: str) -> str:
    """One of the page's files, read from the installed package (works from the wheel)."""
    return resources.files("torchx.ui").joinpath("static", name).read_text(encoding="utf-8")


class _Hub:
    """The newest snapshot generation, awaited by the event streams (in the server's loop)."""

    def __init__(self) -> None:
        self.generation = 0
        self.changed = asyncio.Condition()

    async def bump(self, generation: int) -> None:
        async with self.changed:
            self.generation = generation
            self.changed.notify_all()

    async def wait_newer(self, seen: int, timeout: float) -> bool:
        """Waits until the generation is past ``seen``; False when ``timeout`` passed first."""
        async with self.changed:
            try:
                await asyncio.wait_for(
                    self.changed.wait_for(lambda: self.generation > seen), timeout
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
        self, poller_factory: Callable[[Callable[[], None]], Poller], host: str, port: int
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
        loop = self._loop
        if loop is not None and not loop.is_closed():
            generation = self.poller.generation
            asyncio.run_coroutine_threadsafe(self._hub.bump(generation), loop)

    async def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        app = web.Application(middlewares=[self._guard])
        app.router.add_get("/", self._page)
        app.router.add_get("/static/{name}", self._static)
        app.router.add_get("/api/apps", self._apps)
        app.router.add_get("/api/events", self._events)
        app.router.add_get("/favicon.ico", self._no_icon)
        app.router.add_get("/api/app", self._app)
        app.router.add_get("/api/log", self._log)
        app.router.add_get("/api/log/page", self._log_page)
        app.router.add_post("/api/cancel", self._cancel)
        app.router.add_post("/api/delete", self._delete)
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=1.0)
        await self._runner.setup()
        self._sock.listen(128)
        await web.SockSite(self._runner, self._sock).start()
        self.poller.start()

    async def stop(self) -> None:
        self._closing.set()
        await self._hub.bump(self._hub.generation + 1)  # wakes the streams, which then end
        if self._runner is not None:
            await self._runner.cleanup()
        await asyncio.to_thread(self.poller.stop)

    @web.middleware
    async def _guard(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        """Host first (a rebound name learns nothing), then the token; headers on every answer."""
        if not security.host_allowed(request.headers.get("Host"), self._allowed):
            return _refuse(403, "this server answers only to its own address (Host header)")
        if request.method in ("GET", "HEAD"):
            given = (
                request.query.get("token")
                or request.headers.get(security.TOKEN_HEADER)
                or request.cookies.get(security.cookie_name(self.port))
            )
        else:  # a state change: the header only (a forged form post cannot set one)
            given = request.headers.get(security.TOKEN_HEADER)
        if given is None:
            return _refuse(401, "a token is needed: open the URL torchx ui printed")
        if not security.token_matches(given, self.token):
            return _refuse(403, "wrong token: open the URL torchx ui printed")
        try:
            response = await handler(request)
        except web.HTTPException as e:  # 400, 404, 405: the same headers as any answer
            e.headers.update(_HEADERS)
            raise
        if response.prepared:  # an event stream: its headers went out when it started
            return response
        response.headers.update(_HEADERS)
        if request.query.get("token"):
            response.set_cookie(
                security.cookie_name(self.port),
                self.token,
                httponly=True,
                samesite="Strict",
                path="/",
            )
        return response

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

    async def _events(self, request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(
            headers={"Content-Type": "text/event-stream", "X-Accel-Buffering": "no"}
        )
        response.headers.update(_HEADERS)
        await response.prepare(request)
        seen = -1
        try:
            while not self._closing.is_set():
                doc = self.poller.snapshot()
                seen = max(seen, doc["data"]["generation"], self._hub.generation)
                await response.write(_event("apps", doc))
                while not await self._hub.wait_newer(seen, KEEPALIVE_S):
                    await response.write(b": keep-alive\n\n")
        except ConnectionResetError:
            pass  # the page went away (closed, reloaded): nothing to say, nobody to say it to
        return response

    def _handle(self, text: str | None) -> str:
        """A handle of a scheduler this page shows, else an HTTP error."""
        if not text or "://" not in text:
            raise web.HTTPBadRequest(text="a handle is needed: SCHEDULER://SESSION/APP_ID\n")
        if text.split("://", 1)[0] not in self.poller.schedulers:
            raise web.HTTPNotFound(text="not an app of a scheduler this page shows\n")
        return text

    async def _app(self, request: web.Request) -> web.StreamResponse:
        from torchx.ui.apps import NoSuchApp, describe

        handle = self._handle(request.query.get("handle"))

        def ask() -> dict[str, Any]:
            with self.poller.runner_factory() as runner:
                return describe(runner, handle)[0]

        try:
            doc = await asyncio.to_thread(ask)
        except NoSuchApp as e:
            raise web.HTTPNotFound(text=f"{e}\n") from None
        except Exception as e:
            return _refuse(502, _reason(e))
        return web.json_response(doc)

    def _log_query(self, request: web.Request) -> tuple[str, str, int, str | None]:
        """(handle, role, replica, regex) of a log request; ``role`` "" means every replica."""
        handle = self._handle(request.query.get("handle"))
        role = request.query.get("role", "")
        try:
            replica = int(request.query.get("replica", "0"))
        except ValueError:
            raise web.HTTPBadRequest(text="replica: expected a number, e.g. 0\n") from None
        regex = request.query.get("regex") or None
        if regex is not None:
            import re

            try:
                re.compile(regex)
            except re.error as e:
                raise web.HTTPBadRequest(text=f"bad regex {regex!r}: {e}\n") from None
        return handle, role, replica, regex

    async def _described(self, handle: str) -> tuple[dict[str, Any], list[dict[str, str]]]:
        """One describe of the app (in a worker thread), else the HTTP error to answer."""
        from torchx.ui.apps import NoSuchApp, describe

        def ask() -> tuple[dict[str, Any], list[dict[str, str]]]:
            with self.poller.runner_factory() as runner:
                return describe(runner, handle)

        try:
            return await asyncio.to_thread(ask)
        except NoSuchApp as e:
            raise web.HTTPNotFound(text=f"{e}\n") from None
        except Exception as e:
            raise web.HTTPBadGateway(text=_reason(e) + "\n") from None

    async def _log(self, request: web.Request) -> web.StreamResponse:
        from torchx.ui.apps import LogFollower, replicas_of

        handle, role, replica, regex = self._log_query(request)
        doc, app_envs = await self._described(handle)
        replicas = replicas_of(doc) if not role else [(role, replica)]
        loop = asyncio.get_running_loop()
        arrived = asyncio.Event()

        def wake() -> None:  # called from the followers' threads
            loop.call_soon_threadsafe(arrived.set)

        # a merged view holds fewer lines per replica: the bound is on the sum
        limit = max(LOG_HELD // len(replicas), BATCH_LINES) if replicas else LOG_HELD
        followers = [
            LogFollower(
                self.poller.runner_factory, handle, r, k, app_envs, wake, limit=limit, regex=regex
            )
            for r, k in replicas
        ]
        response = web.StreamResponse(
            headers={"Content-Type": "text/event-stream", "X-Accel-Buffering": "no"}
        )
        response.headers.update(_HEADERS)
        await response.prepare(request)
        for follower in followers:
            follower.start()
        live = list(followers)
        try:
            while live and not self._closing.is_set():
                try:
                    await asyncio.wait_for(arrived.wait(), KEEPALIVE_S)
                except TimeoutError:
                    await response.write(b": keep-alive\n\n")
                    continue
                # gather for a moment: one message per batch of lines, not one per line
                await asyncio.sleep(BATCH_S)
                arrived.clear()
                for follower in list(live):
                    lines, first, done = follower.take()
                    for at in range(0, len(lines), BATCH_LINES):
                        batch = {
                            "replica": follower.label,
                            "first": first + at,
                            "lines": lines[at : at + BATCH_LINES],
                        }
                        await response.write(_event("lines", batch))
                    if done:
                        live.remove(follower)
            if not live:
                errors = [f"{f.label}: {f.error}" for f in followers if f.error is not None]
                error = followers[0].error if len(followers) == 1 else "; ".join(errors) or None
                await response.write(_event("end", {"error": error}))
        except ConnectionResetError:
            pass  # the page went away: the followers are stopped below
        finally:
            for follower in followers:
                follower.stop()
        return response

    async def _log_page(self, request: web.Request) -> web.StreamResponse:
        """Earlier lines of one replica's log: ``offset`` (an index the ``lines`` events
        gave) and ``limit`` (at most :data:`torchx.ui.apps.PAGE_MAX`)."""
        from torchx.ui.apps import PAGE_MAX, log_page

        handle, role, replica, regex = self._log_query(request)
        if not role:
            raise web.HTTPBadRequest(text="role: a page is of one replica's log\n")
        try:
            offset = int(request.query.get("offset", "0"))
            limit = int(request.query.get("limit", str(PAGE_MAX)))
        except ValueError:
            raise web.HTTPBadRequest(text="offset, limit: expected numbers\n") from None
        if offset < 0 or limit < 1:
            raise web.HTTPBadRequest(text="offset >= 0 and limit >= 1 expected\n")
        _, app_envs = await self._described(handle)

        def read() -> list[str]:
            with self.poller.runner_factory() as runner:
                return log_page(runner, handle, role, replica, app_envs, offset, limit, regex)

        try:
            lines = await asyncio.to_thread(read)
        except Exception as e:
            return _refuse(502, _reason(e))
        return web.json_response({"replica": f"{role}/{replica}", "first": offset, "lines": lines})

    async def _cancel(self, request: web.Request) -> web.StreamResponse:
        from torchx.ui.apps import cancel

        return await self._act(request, cancel, "cancelled")

    async def _delete(self, request: web.Request) -> web.StreamResponse:
        from torchx.ui.apps import delete

        return await self._act(request, delete, "deleted")

    async def _act(
        self, request: web.Request, action: Callable[[Runner, str], None], done: str
    ) -> web.StreamResponse:
        """A POST of ``{"handle": H}``: ``action`` on that app; what the scheduler said
        when it refused (409: an app the local scheduler will not delete while it runs)."""
        try:
            body = await request.json()
        except ValueError:
            raise web.HTTPBadRequest(text='expected JSON: {"handle": "..."}\n') from None
        handle = self._handle(body.get("handle") if isinstance(body, dict) else None)

        def ask() -> None:
            with self.poller.runner_factory() as runner:
                action(runner, handle)

        try:
            await asyncio.to_thread(ask)
        except Exception as e:
            return _refuse(409, _reason(e))
        return web.json_response({"handle": handle, "result": done})


def _reason(error: BaseException) -> str:
    """An error of the scheduler as one masked line (see :func:`torchx.ui.poller.one_line`)."""
    from torchx.cli.output import mask
    from torchx.ui.poller import one_line

    return mask(one_line(error))


def _event(name: str, doc: Any) -> bytes:
    """One server-sent event: its name and the JSON document on one ``data:`` line."""
    return f"event: {name}\ndata: {json.dumps(doc, separators=(',', ':'))}\n\n".encode()


def _refuse(status: int, text: str) -> web.Response:
    return web.Response(status=status, text=text + "\n", headers=dict(_HEADERS))


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
    poller_factory: Callable[[Callable[[], None]], Poller], host: str = "127.0.0.1", port: int = 0
) -> ThreadedServer:
    """Starts a server in a background thread; ``.server.url`` to open, ``.stop()`` to end."""
    return ThreadedServer(UiServer(poller_factory, host, port)).start()
