"""A cache of ``torchx --help``, so that the most common first command costs almost nothing.

The full help needs every command's one-line help, so every command module (and the
plugin registry, attrs and pluggy) would be imported just to print text that only
changes when something is installed. The text is kept in
``$XDG_CACHE_HOME/torchx/cli-help-<env>.txt`` (else ``~/.cache/torchx``), keyed by
this distribution's version and files, the interpreter, ``sys.path``, the names and
modification times of every installed distribution's metadata directory, the
terminal width and the ``TORCHX_*`` variables. Installing, upgrading or removing
anything invalidates it. ``TORCHX_NO_PLUGIN_CACHE=1`` turns it off, as it does the
plugin registry's cache. A cache that cannot be read or written is ignored.
"""

from __future__ import annotations

import os
import sys

_FORMAT = "torchx-cli-help/1"


def cache_file(kind: str) -> str | None:
    """``<cache dir>/torchx/cli-<kind>-<this environment>.txt``; None without a cache dir.

    One file per Python environment (its interpreter's path): each has its own plugins.
    Shared with the quick path's marker (:mod:`torchx.cli._quick.marker`).
    """
    base = os.environ.get("XDG_CACHE_HOME") or (
        os.path.join(os.path.expanduser("~"), ".cache") if os.environ.get("HOME") else ""
    )
    if not base:
        return None
    import zlib

    env_id = zlib.crc32(sys.executable.encode()) & 0xFFFFFFFF
    return os.path.join(base, "torchx", f"cli-{kind}-{env_id:08x}.txt")


def _cache_path() -> str | None:
    return cache_file("help")


def _key() -> str:
    """Everything the help text depends on, as one string (compared whole, not hashed)."""
    parts = [_FORMAT]
    try:
        parts.append(str(os.get_terminal_size(sys.stdout.fileno()).columns))
    except (OSError, ValueError):
        parts.append("-")
    parts.append(os.environ.get("COLUMNS", ""))
    return "\n".join([*parts, environment_key()])


def environment_key() -> str:
    """What the installed commands and plugins depend on, as one string.

    The interpreter, ``sys.path``, the ``TORCHX_*`` variables, this distribution's
    files and every installed distribution's metadata directory (name and mtime):
    installing, upgrading or removing anything changes it. Also the key of the
    ``torchx`` command's quick path (:mod:`torchx.cli._quick`).
    """
    parts = [sys.executable, os.pathsep.join(sys.path)]
    parts.extend(f"{k}={v}" for k, v in sorted(os.environ.items()) if k.startswith("TORCHX_"))
    here = os.path.dirname(os.path.abspath(__file__))
    for name in sorted(os.listdir(here)):
        if name.endswith(".py"):
            parts.append(f"{name}:{os.stat(os.path.join(here, name)).st_mtime_ns}")
    for entry in sys.path:
        try:
            with os.scandir(entry or ".") as it:
                metas = sorted(
                    (e.name, e.stat().st_mtime_ns)
                    for e in it
                    if e.name.endswith((".dist-info", ".egg-info"))
                )
        except OSError:
            continue
        parts.append(f"{entry}:{metas}")
    return "\n".join(parts)


def read() -> tuple[str, str] | None:
    """The cached (stdout, stderr) of ``torchx --help``, or None."""
    if os.environ.get("TORCHX_NO_PLUGIN_CACHE"):
        return None
    path = _cache_path()
    if path is None:
        return None
    try:
        with open(path, encoding="utf-8") as f:
            key, out, err = f.read().split("\0")
    except (OSError, ValueError):
        return None
    return (out, err) if key == _key() else None


def write(out: str, err: str) -> None:
    """Remembers the help text (atomically, mode 0600); errors are ignored."""
    if os.environ.get("TORCHX_NO_PLUGIN_CACHE"):
        return
    path = _cache_path()
    if path is None:
        return
    from torchx.schedulers.helpers.files import write_private_atomic

    try:
        os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
        # a cache: losing it to a crash costs one slow --help, not worth an fsync
        write_private_atomic(path, "\0".join([_key(), out, err]), fsync=False)
    except OSError:
        pass
