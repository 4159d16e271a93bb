"""What every handler of :mod:`torchx.ui.server` shares: the headers of every answer, a
refusal, a server-sent event, and the checks that turn a handle into an app or an HTTP error.

Kept apart from the handlers so that the page's routes (:mod:`torchx.ui.server`), an
app's routes (:mod:`torchx.ui.approutes`), the log's routes (:mod:`torchx.ui.logroutes`)
and the request checks (:mod:`torchx.ui.guard`) answer alike. Imports aiohttp: only the
server imports this module, once the command runs.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web

from torchx.ui.poller import Poller

#: Seconds between two keep-alive comments of an idle event stream.
KEEPALIVE_S = 15.0

#: Sent with every answer: no framing, no inline script, no Referer (the URL holds the token).
HEADERS = {
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


def reason(error: BaseException) -> str:
    """An error of the scheduler as one masked line (see :func:`torchx.ui.poller.one_line`)."""
    from torchx.cli.output import mask
    from torchx.ui.poller import one_line

    return mask(one_line(error))


def event(name: str, doc: Any) -> bytes:
    """One server-sent event: its name and the JSON document on one ``data:`` line."""
    return f"event: {name}\ndata: {json.dumps(doc, separators=(',', ':'))}\n\n".encode()


def refuse(status: int, text: str) -> web.Response:
    """A refusal in plain text, with the headers of every answer."""
    return web.Response(status=status, text=text + "\n", headers=dict(HEADERS))


async def open_stream(request: web.Request) -> web.StreamResponse:
    """An event stream, its headers sent (the guard cannot add them once it has started)."""
    response = web.StreamResponse(
        headers={"Content-Type": "text/event-stream", "X-Accel-Buffering": "no"}
    )
    response.headers.update(HEADERS)
    await response.prepare(request)
    return response


def checked_handle(poller: Poller, text: str | None) -> str:
    """A handle of a scheduler this page shows, else an HTTP error."""
    if not text or "://" not in text:
        raise web.HTTPBadRequest(text="a handle is needed: SCHEDULER://SESSION/APP_ID\n")
    if text.split("://", 1)[0] not in poller.schedulers:
        raise web.HTTPNotFound(text="not an app of a scheduler this page shows\n")
    return text


async def described(poller: Poller, handle: str) -> tuple[dict[str, Any], list[dict[str, str]]]:
    """One describe of the app (in a worker thread), else the HTTP error to answer."""
    from torchx.ui.apps import NoSuchApp, describe

    def ask() -> tuple[dict[str, Any], list[dict[str, str]]]:
        with poller.runner_factory() as runner:
            return describe(runner, handle)

    try:
        return await asyncio.to_thread(ask)
    except NoSuchApp as e:
        raise web.HTTPNotFound(text=f"{e}\n") from None
    except Exception as e:
        raise web.HTTPBadGateway(text=reason(e) + "\n") from None
