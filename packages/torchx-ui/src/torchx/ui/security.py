"""Who may talk to ``torchx ui``: the token of the printed URL, and the Host header.

The server listens on loopback, but any web page the user opens could still send
requests there (a form post, an image, a DNS-rebound name). So, as Jupyter does:

* every request carries the random token printed in the URL: ``?token=`` (the page
  is opened with it, and the server then sets it as a cookie of its own port, which
  the page's requests and its event stream send), or the ``X-TorchX-Token`` header;
* the Host header must name this server (``127.0.0.1:PORT``, ``localhost:PORT``, or
  the ``--host`` given): a rebound name is refused before the token is even looked at.

The server sends no CORS header, so another origin cannot read an answer either.

>>> allowed = allowed_hosts("127.0.0.1", 8765)
>>> host_allowed("localhost:8765", allowed), host_allowed("evil.example:8765", allowed)
(True, False)
>>> token_matches("abc", "abc"), token_matches("abd", "abc"), token_matches(None, "abc")
(True, False, False)
"""

from __future__ import annotations

import hmac
import secrets

#: The header a script may carry the token in (the page's POSTs do).
TOKEN_HEADER = "X-TorchX-Token"
#: Addresses that only this machine reaches.
LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1"})
#: Addresses that listen on every interface: any Host name may reach them.
ANY_ADDRESS = frozenset({"0.0.0.0", "::", ""})


def new_token() -> str:
    """A fresh random token (32 bytes, URL-safe): one per server."""
    return secrets.token_urlsafe(32)


def cookie_name(port: int) -> str:
    """The cookie holding the token. Cookies are not kept apart by port, so two servers
    on one machine would overwrite each other's: the name carries the port."""
    return f"torchx-ui-token-{port}"


def is_loopback(host: str) -> bool:
    """True for an address only this machine reaches (``127.0.0.0/8``, ``::1``, localhost)."""
    return host in LOOPBACK or host.startswith("127.")


def allowed_hosts(host: str, port: int) -> frozenset[str] | None:
    """The Host headers this server answers, or None (any) when it listens everywhere.

    >>> sorted(allowed_hosts("127.0.0.1", 80))
    ['127.0.0.1:80', '[::1]:80', 'localhost:80']
    >>> allowed_hosts("0.0.0.0", 80) is None
    True
    """
    if host in ANY_ADDRESS:
        return None
    names = {f"127.0.0.1:{port}", f"localhost:{port}", f"[::1]:{port}"}
    names.add(f"[{host}]:{port}" if ":" in host else f"{host}:{port}")
    return frozenset(names)


def host_allowed(header: str | None, allowed: frozenset[str] | None) -> bool:
    """Whether a request's Host header names this server (compared without case)."""
    if allowed is None:
        return True
    return header is not None and header.lower() in allowed


def token_matches(given: str | None, token: str) -> bool:
    """Whether ``given`` is the token, compared in constant time."""
    return given is not None and hmac.compare_digest(given.encode(), token.encode())
