"""The middleware of :mod:`torchx.ui.server` that applies :mod:`torchx.ui.security` to
every request: the Host header first (a rebound name learns nothing), then the token;
and the headers of :data:`torchx.ui.answers.HEADERS` on every answer, errors included.

:mod:`torchx.ui.security` decides (and stays free of aiohttp, for its doctests and the
command's quick ``--help``); this module only wires those decisions into aiohttp.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from aiohttp import web

from torchx.ui import security
from torchx.ui.answers import HEADERS, Handler, refuse

if TYPE_CHECKING:  # for the annotation only: nothing of aiohttp.typedefs is needed at run time
    from aiohttp.typedefs import Middleware


def guard(token: str, port: int, allowed: frozenset[str] | None) -> Middleware:
    """The middleware of a server on ``port`` whose token is ``token`` and which answers
    to the Host names ``allowed`` (see :func:`torchx.ui.security.allowed_hosts`)."""
    cookie = security.cookie_name(port)

    @web.middleware
    async def middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
        if not security.host_allowed(request.headers.get("Host"), allowed):
            return refuse(403, "this server answers only to its own address (Host header)")
        if request.method in ("GET", "HEAD"):
            given = (
                request.query.get("token")
                or request.headers.get(security.TOKEN_HEADER)
                or request.cookies.get(cookie)
            )
        else:  # a state change: the header only (a forged form post cannot set one)
            given = request.headers.get(security.TOKEN_HEADER)
        if given is None:
            return refuse(401, "a token is needed: open the URL torchx ui printed")
        if not security.token_matches(given, token):
            return refuse(403, "wrong token: open the URL torchx ui printed")
        try:
            response = await handler(request)
        except web.HTTPException as e:  # 400, 404, 405: the same headers as any answer
            e.headers.update(HEADERS)
            raise
        if response.prepared:  # an event stream: its headers went out when it started
            return response
        response.headers.update(HEADERS)
        if request.query.get("token"):
            response.set_cookie(cookie, token, httponly=True, samesite="Strict", path="/")
        return response

    return middleware
