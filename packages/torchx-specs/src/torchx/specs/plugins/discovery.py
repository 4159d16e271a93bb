"""Finding the installed plugins' entry points, with an on-disk cache of what was found.

:func:`entry_point_records` gives the entry points of the groups the registry reads
(``torchx`` and upstream's legacy groups). Scanning every installed distribution's
metadata costs tens of milliseconds, so the answer is cached in a file per Python
environment, keyed by a fingerprint of the metadata directories on ``sys.path`` (see
:mod:`torchx.specs.plugins` for the rules); a cache that cannot be read or written is
ignored and the scan used instead.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Sequence
from typing import Any, Final

from torchx.specs.plugins.entries import ENTRY_POINT_GROUP, LEGACY_GROUPS, NO_CACHE_ENV, Record

_CACHE_FORMAT: Final = 1
_CACHE_MAGIC: Final = "torchx-plugin-entry-points"
_GROUPS: Final = (ENTRY_POINT_GROUP, *LEGACY_GROUPS)


def _scan() -> tuple[Record, ...]:
    """Entry points of the groups we read, from importlib.metadata (slow: reads every dist)."""
    from importlib.metadata import entry_points

    found: list[Record] = []
    all_eps = entry_points()
    for group in _GROUPS:
        for ep in all_eps.select(group=group):
            dist = ep.dist
            try:
                dist_name = (dist.name if dist is not None else None) or "<unknown>"
                version = (dist.version if dist is not None else None) or ""
            except Exception:  # unreadable metadata: still usable, just unnamed
                dist_name, version = "<unknown>", ""
            found.append(Record(group, ep.name, ep.value, dist_name, version))
    return tuple(sorted(found))


def _cacheable() -> bool:
    """The cache key only sees sys.path: a custom distribution finder makes it unreliable."""
    from importlib.machinery import PathFinder

    return not any(
        finder is not PathFinder and hasattr(finder, "find_distributions")
        for finder in sys.meta_path
    )


def _blake2b() -> Any:
    try:
        from _blake2 import blake2b  # the C module: avoids hashlib's OpenSSL import
    except ImportError:  # pragma: no cover - other Pythons
        from hashlib import blake2b
    return blake2b(digest_size=16)


def _fingerprint() -> str:
    """Hash of every distribution's metadata directory name on sys.path and entry-point file mtime.

    Installing, upgrading or removing a distribution adds, renames or removes
    such a directory; reinstalling it writes a new ``entry_points.txt``; either
    changes the hash.
    """
    h = _blake2b()
    h.update(f"{_CACHE_FORMAT}\0{sys.version}\0{sys.prefix}\0".encode())
    for entry in sys.path:
        path = entry or os.getcwd()  # importlib.metadata reads "" as the current directory
        h.update(b"\0P" + os.fsencode(path))
        try:
            names = os.listdir(path)
        except OSError:
            try:
                st = os.stat(path)  # a zip file, or missing
                h.update(f"|{st.st_mtime_ns}|{st.st_size}".encode())
            except OSError:
                h.update(b"|-")
            continue
        is_egg = path.lower().endswith(".egg")
        infos = [
            name
            for name in names
            if name.lower().endswith((".dist-info", ".egg-info"))
            or (is_egg and name.lower() == "egg-info")
        ]
        for name in sorted(infos):
            # A (re)installed distribution has a new entry_points.txt; setuptools'
            # egg_info rewrites it in place: its mtime covers both.
            try:
                mtime = str(os.stat(os.path.join(path, name, "entry_points.txt")).st_mtime_ns)
            except OSError:
                mtime = "-"
            h.update(f"\0D{name}|{mtime}".encode(errors="surrogateescape"))
    return str(h.hexdigest())


def _cache_path() -> str | None:
    base = os.environ.get("XDG_CACHE_HOME") or ""
    if not os.path.isabs(base):
        home = os.path.expanduser("~")
        if home == "~":
            return None
        base = os.path.join(home, ".cache")
    h = _blake2b()
    h.update(f"{sys.prefix}\0{sys.version}".encode())
    return os.path.join(base, "torchx", f"entry-points-{h.hexdigest()}.txt")


def _read_cache(path: str, key: str) -> tuple[Record, ...] | None:
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.read().split("\n")
    except (OSError, UnicodeDecodeError, ValueError):
        return None
    if (
        len(lines) < 3
        or lines[0] != f"{_CACHE_MAGIC}\t{_CACHE_FORMAT}"
        or lines[1] != f"key\t{key}"
    ):
        return None
    if lines[-1] != "" or lines[-2] != "end":  # truncated
        return None
    records: list[Record] = []
    for line in lines[2:-2]:
        fields = line.split("\t")
        if len(fields) != 5:
            return None
        records.append(Record(*fields))
    return tuple(records)


def _write_cache(path: str, key: str, records: Sequence[Record]) -> None:
    lines = [f"{_CACHE_MAGIC}\t{_CACHE_FORMAT}", f"key\t{key}"]
    for record in records:
        if any(c in field for field in record for c in "\t\n\r"):
            return  # cannot be stored faithfully: scan next time too
        lines.append("\t".join(record))
    lines.append("end")
    text = "\n".join(lines) + "\n"
    tmp = f"{path}.{os.getpid()}.{threading.get_ident()}.tmp"
    try:
        os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)  # atomic: readers see the old or the new file, never a mix
    except OSError:
        try:
            os.unlink(tmp)
        except OSError:
            pass


def entry_point_records() -> tuple[Record, ...]:
    """The entry points of the groups we read: from the cache when still valid, else a scan."""
    path = None if os.environ.get(NO_CACHE_ENV) or not _cacheable() else _cache_path()
    if path is None:
        return _scan()
    try:
        key = _fingerprint()
    except Exception:  # never let the cache break discovery
        return _scan()
    records = _read_cache(path, key)
    if records is None:
        records = _scan()
        _write_cache(path, key, records)
    return records
