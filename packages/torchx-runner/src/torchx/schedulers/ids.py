"""App ids: generating unique ones from an app name, and checking ids given back by users.

A scheduler whose backend does not assign ids itself (the local scheduler, or one that
names the job directory, a Kubernetes object or a Slurm job name after the app) makes
one with :func:`make_app_id`, and checks an id read from a handle with
:func:`validate_app_id` before using it to build a path or a request:

>>> app_id = make_app_id("My Trainer!")
>>> app_id[:-10], len(app_id[-10:]), is_valid_app_id(app_id)
('my-trainer-', 10, True)
>>> is_valid_app_id("../etc"), is_valid_app_id("a/b"), is_valid_app_id(None)
(False, False, False)
>>> try:
...     validate_app_id("a/b")
... except ValueError as e:
...     print(str(e)[:42])
invalid app id 'a/b': expected 1 to 100 lo

The form (:data:`APP_ID_PATTERN`: lower-case letters, digits, ``_``, ``.``, ``-``,
starting with a letter or digit, never ``..``) is safe as a directory name, a job name
and the last part of a handle.
The random part comes from ``os.urandom`` (36 characters, 10 of them: about 52 bits),
so concurrent submits of the same name get distinct ids.

Only the standard library's ``os`` and ``re`` are imported (``re`` on first use), so a
launcher pays nothing for importing it.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False  # typing costs milliseconds to import
if TYPE_CHECKING:
    from torchx.schedulers.errors import InvalidAppIdError

__all__ = ["APP_ID_PATTERN", "is_valid_app_id", "make_app_id", "validate_app_id"]

#: What an app id may look like. It names a directory, so no ``/`` and no ``..``.
APP_ID_PATTERN = r"[a-z0-9][a-z0-9_.-]{0,99}"

_ALPHABET = "abcdefghijklmnopqrstuvwxyz0123456789"
_SUFFIX_LEN = 10


def is_valid_app_id(app_id: object) -> bool:
    """True if ``app_id`` is a string of the form :data:`APP_ID_PATTERN`, without ``..``."""
    import re

    return (
        isinstance(app_id, str)
        and re.fullmatch(APP_ID_PATTERN, app_id) is not None
        and ".." not in app_id
    )


def validate_app_id(
    app_id: str, *, what: str = "app id", error: type[InvalidAppIdError] | None = None
) -> str:
    """Returns ``app_id`` if valid, else raises a one-line :class:`InvalidAppIdError`.

    The message names the id (as ``what``: ``"local app id"``) and the allowed form, so
    the CLI can print it as it is. ``error`` is a subclass of InvalidAppIdError to raise
    instead (a scheduler's own name for it).
    """
    if not is_valid_app_id(app_id):
        from torchx.schedulers.errors import InvalidAppIdError

        raise (error or InvalidAppIdError)(
            f"invalid {what} {app_id!r}: expected 1 to 100 lower-case letters, digits, '_', "
            "'.', '-' (no '/', no '..'), starting with a letter or digit, e.g. 'echo-1a2b3c4d5e'"
        )
    return app_id


def make_app_id(name: str) -> str:
    """``<name>-<10 random characters>``: the name lower-cased and cut to fit the id form.

    Characters outside the form become ``-``; a name with nothing usable left gives
    ``app-<random>``. The result always passes :func:`is_valid_app_id`.
    """
    import re

    stem = re.sub(r"[^a-z0-9_.-]+", "-", name.lower()).strip("-._")[:80]
    stem = re.sub(r"\.{2,}", ".", stem) or "app"
    return f"{stem}-{_random_suffix(_SUFFIX_LEN)}"


def _random_suffix(n: int) -> str:
    """``n`` uniformly random characters of :data:`_ALPHABET`, from ``os.urandom``.

    (``secrets`` would do the same, but importing it costs milliseconds of every launch.)
    """
    out: list[str] = []
    while len(out) < n:
        # 252 = 7 * 36: bytes from 252 up are dropped so that every character is as likely
        out += [_ALPHABET[b % 36] for b in os.urandom(2 * n) if b < 252]
    return "".join(out[:n])
