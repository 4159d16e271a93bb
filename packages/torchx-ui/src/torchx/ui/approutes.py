"""One app's routes of :mod:`torchx.ui.server`: its page's data, cancel and delete.

* ``GET /api/app?handle=H`` one app's status and AppDef (:func:`torchx.ui.apps.describe`:
  one describe, asked only for the app the page shows);
* ``POST /api/cancel`` and ``POST /api/delete`` (``{"handle": H}``) cancel or delete an
  app (409 with the scheduler's reason when it refuses). The token must be in the
  ``X-TorchX-Token`` header (:mod:`torchx.ui.guard` checks it).

Each asks the scheduler in a worker thread, so a slow scheduler holds no other request.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from aiohttp import web

from torchx.ui.answers import checked_handle, reason, refuse
from torchx.ui.poller import Poller

if TYPE_CHECKING:
    from torchx.runner import Runner


class AppRoutes:
    """The handlers of ``/api/app``, ``/api/cancel`` and ``/api/delete`` over ``poller``."""

    def __init__(self, poller: Poller) -> None:
        self.poller = poller

    def add_to(self, router: web.UrlDispatcher) -> None:
        router.add_get("/api/app", self.app)
        router.add_post("/api/cancel", self.cancel)
        router.add_post("/api/delete", self.delete)

    async def app(self, request: web.Request) -> web.StreamResponse:
        from torchx.ui.apps import NoSuchApp, describe

        handle = checked_handle(self.poller, request.query.get("handle"))

        def ask() -> dict[str, Any]:
            with self.poller.runner_factory() as runner:
                return describe(runner, handle)[0]

        try:
            doc = await asyncio.to_thread(ask)
        except NoSuchApp as e:
            raise web.HTTPNotFound(text=f"{e}\n") from None
        except Exception as e:
            return refuse(502, reason(e))
        return web.json_response(doc)

    async def cancel(self, request: web.Request) -> web.StreamResponse:
        from torchx.ui.apps import cancel

        return await self._act(request, cancel, "cancelled")

    async def delete(self, request: web.Request) -> web.StreamResponse:
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
        handle = checked_handle(self.poller, body.get("handle") if isinstance(body, dict) else None)

        def ask() -> None:
            with self.poller.runner_factory() as runner:
                action(runner, handle)

        try:
            await asyncio.to_thread(ask)
        except Exception as e:
            return refuse(409, reason(e))
        return web.json_response({"handle": handle, "result": done})
