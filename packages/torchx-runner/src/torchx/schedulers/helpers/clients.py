"""SDK clients made once per place and closed together: the cache a plugin's backend keeps.

A cloud SDK's client is costly to make (it reads configuration files, opens a connection
pool) and cheap to reuse, so a scheduler makes one per place it talks to (a kubeconfig
context; an AWS service, region and profile) the first time it is needed, keeps it, and
closes them all in ``Scheduler.close()`` (which the Runner calls when it is done)::

    from torchx.schedulers.helpers.clients import ClientCache

    self._clients = ClientCache(lambda context: new_api_client(context))
    api = self._clients.get(context)    # made on first use, the same one after
    self._clients.close()               # each client's close(); the cache is empty again

>>> made = []
>>> cache = ClientCache(lambda key: made.append(key) or f"client {key}")
>>> cache.get("a"), cache.get("a"), made
('client a', 'client a', ['a'])
>>> cache.close(); cache.get("a"), made
('client a', ['a', 'a'])

Closing forgets every client and calls its ``close()`` (a client without one is just
forgotten); a client that fails to close is dropped all the same: its connection is
gone either way, and ``close()`` must not turn a finished command into a failed one.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

__all__ = ["ClientCache"]

K = TypeVar("K", bound=Hashable)
C = TypeVar("C")


class ClientCache(Generic[K, C]):
    """Clients made by ``make(key)`` on first use, kept per key, closed together."""

    def __init__(self, make: Callable[[K], C]) -> None:
        self._make = make
        self._clients: dict[K, C] = {}

    def get(self, key: K) -> C:
        """The client for ``key``: made now if there is none yet."""
        found = self._clients.get(key)
        if found is None:
            found = self._make(key)
            self._clients[key] = found
        return found

    def close(self) -> None:
        """Closes every client made so far and forgets them (errors of closing ignored)."""
        clients, self._clients = self._clients, {}
        for client in clients.values():
            close = getattr(client, "close", None)
            if close is None:
                continue
            try:
                close()
            except Exception:
                pass  # a broken connection is closed enough
