"""The log routes of :mod:`torchx.ui.server`: an app's log followed live, and earlier pages.

* ``GET /api/log?handle=H[&role=R&replica=N][&regex=RE]`` server-sent events: ``lines``
  events (a batch of up to :data:`BATCH_LINES` of a replica's log lines, gathered for
  :data:`BATCH_S`, followed live; only those ``RE`` matches; without ``role`` every
  replica's, merged) and one ``end`` event;
* ``GET /api/log/page?handle=H&role=R&replica=N&offset=I&limit=L[&regex=RE]`` earlier
  lines of one replica's log (JSON), for the page's "load earlier".

The reading itself (threads, bounds, masking) is :class:`torchx.ui.apps.LogFollower`
and :func:`torchx.ui.apps.log_page`; this module turns requests into them and their
lines into answers.
"""

from __future__ import annotations

import asyncio
import contextlib

from aiohttp import web

from torchx.ui.answers import (
    KEEPALIVE_S,
    checked_handle,
    described,
    event,
    open_stream,
    reason,
    refuse,
)
from torchx.ui.poller import Poller

#: A log stream gathers lines this long before it sends them (one message per batch).
BATCH_S = 0.05

#: The most lines in one ``lines`` event.
BATCH_LINES = 1_000

#: The most lines a log stream holds untaken, over all the replicas it follows.
LOG_HELD = 10_000


class LogRoutes:
    """The handlers of ``/api/log`` and ``/api/log/page`` over ``poller``; a stream ends
    once ``closing`` is set (the server stops)."""

    def __init__(self, poller: Poller, closing: asyncio.Event) -> None:
        self.poller = poller
        self._closing = closing

    def add_to(self, router: web.UrlDispatcher) -> None:
        router.add_get("/api/log", self.follow)
        router.add_get("/api/log/page", self.page)

    def _query(self, request: web.Request) -> tuple[str, str, int, str | None]:
        """(handle, role, replica, regex) of a log request; ``role`` "" means every replica."""
        handle = checked_handle(self.poller, request.query.get("handle"))
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

    async def follow(self, request: web.Request) -> web.StreamResponse:
        """The log of one replica (or every replica's, merged) as server-sent events."""
        from torchx.ui.apps import LogFollower, replicas_of

        handle, role, replica, regex = self._query(request)
        doc, app_envs = await described(self.poller, handle)
        replicas = replicas_of(doc) if not role else [(role, replica)]
        loop = asyncio.get_running_loop()
        arrived = asyncio.Event()  # a follower has lines (or has ended)
        filled = asyncio.Event()  # a follower holds its limit: take its lines now

        def wake() -> None:  # called from the followers' threads
            loop.call_soon_threadsafe(arrived.set)

        def fill() -> None:
            loop.call_soon_threadsafe(filled.set)

        # a merged view holds fewer lines per replica: the bound is on the sum
        limit = max(LOG_HELD // len(replicas), BATCH_LINES) if replicas else LOG_HELD
        followers = [
            LogFollower(
                self.poller.runner_factory,
                handle,
                r,
                k,
                app_envs,
                wake,
                limit=limit,
                regex=regex,
                on_full=fill,
            )
            for r, k in replicas
        ]
        response = await open_stream(request)
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
                # gather for a moment: one message per batch of lines, not one per
                # line; cut short when a follower is full, which waits for us (a replica
                # printing faster than its limit per BATCH_S is followed at full speed)
                if not any(f.full.is_set() for f in live):
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(filled.wait(), BATCH_S)
                arrived.clear()
                filled.clear()
                for follower in list(live):
                    lines, first, done = follower.take()
                    for at in range(0, len(lines), BATCH_LINES):
                        batch = {
                            "replica": follower.label,
                            "first": first + at,
                            "lines": lines[at : at + BATCH_LINES],
                        }
                        await response.write(event("lines", batch))
                    if done:
                        live.remove(follower)
            if not live:
                errors = [f"{f.label}: {f.error}" for f in followers if f.error is not None]
                error = followers[0].error if len(followers) == 1 else "; ".join(errors) or None
                await response.write(event("end", {"error": error}))
        except ConnectionResetError:
            pass  # the page went away: the followers are stopped below
        finally:
            for follower in followers:
                follower.stop()
        return response

    async def page(self, request: web.Request) -> web.StreamResponse:
        """Earlier lines of one replica's log: ``offset`` (an index the ``lines`` events
        gave) and ``limit`` (at most :data:`torchx.ui.apps.PAGE_MAX`)."""
        from torchx.ui.apps import PAGE_MAX, log_page

        handle, role, replica, regex = self._query(request)
        if not role:
            raise web.HTTPBadRequest(text="role: a page is of one replica's log\n")
        try:
            offset = int(request.query.get("offset", "0"))
            limit = int(request.query.get("limit", str(PAGE_MAX)))
        except ValueError:
            raise web.HTTPBadRequest(text="offset, limit: expected numbers\n") from None
        if offset < 0 or limit < 1:
            raise web.HTTPBadRequest(text="offset >= 0 and limit >= 1 expected\n")
        _, app_envs = await described(self.poller, handle)

        def read() -> list[str]:
            with self.poller.runner_factory() as runner:
                return log_page(runner, handle, role, replica, app_envs, offset, limit, regex)

        try:
            lines = await asyncio.to_thread(read)
        except Exception as e:
            return refuse(502, reason(e))
        return web.json_response({"replica": f"{role}/{replica}", "first": offset, "lines": lines})
