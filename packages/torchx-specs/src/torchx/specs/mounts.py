"""Mounts: host paths, volumes and devices made visible inside a role's container.

:func:`parse_mounts` reads the Docker-like option strings that components and the
CLI accept::

    type=bind,src=/host,dst=/container[,readonly]
    type=volume,src=<name or id>,dst=/container[,readonly]
    type=device,src=/dev/<dev>[,dst=/container][,perm=rwm]

>>> parse_mounts(["type=bind,src=/data,dst=/mnt/data,readonly", "type=device,src=/dev/fuse"])
[BindMount(src_path='/data', dst_path='/mnt/data', read_only=True), DeviceMount(src_path='/dev/fuse', dst_path='/dev/fuse', permissions='rwm')]
"""

from __future__ import annotations

from enum import StrEnum

import attrs

from torchx.specs.errors import InvalidMountException

_FORM = (
    "expected 'type=bind,src=PATH,dst=PATH[,readonly]', "
    "'type=volume,src=NAME,dst=PATH[,readonly]' or 'type=device,src=/dev/X[,dst=PATH][,perm=rwm]'"
)


class MountType(StrEnum):
    """The kinds of mount, as ``type=`` names them (upstream's ``torchx.specs.MountType``).

    A member is its string: ``MountType.BIND == "bind"``.
    """

    BIND = "bind"
    VOLUME = "volume"
    DEVICE = "device"


@attrs.define(eq=True)
class BindMount:
    """Bind-mounts a host path into the worker container."""

    src_path: str
    dst_path: str
    read_only: bool = False


@attrs.define(eq=True)
class VolumeMount:
    """Mounts a persistent volume (by name or id) into the worker container."""

    src: str
    dst_path: str
    read_only: bool = False


@attrs.define(eq=True)
class DeviceMount:
    """Mounts a host device into the container with the given cgroup permissions (r, w, m)."""

    src_path: str
    dst_path: str
    permissions: str = "rwm"


_KEYS: dict[str, set[str]] = {
    MountType.BIND: {"src", "dst", "readonly"},
    MountType.VOLUME: {"src", "dst", "readonly"},
    MountType.DEVICE: {"src", "dst", "perm"},
}
_ALIASES = {"source": "src", "destination": "dst", "target": "dst", "ro": "readonly"}


def _tokens(opts: list[str]) -> list[str]:
    out: list[str] = []
    for opt in opts:
        if not isinstance(opt, str):
            raise InvalidMountException(f"mount option must be a string, got {opt!r}; {_FORM}")
        out.extend(tok.strip() for tok in opt.split(",") if tok.strip())
    return out


def _build(
    kind: str, fields: dict[str, str], flags: set[str]
) -> BindMount | VolumeMount | DeviceMount:
    where = f"in {kind} mount"
    if "src" not in fields or not fields["src"]:
        raise InvalidMountException(f"missing 'src' {where}; {_FORM}")
    if kind == "device":
        perm = fields.get("perm", "rwm")
        if not perm or set(perm) - set("rwm") or len(set(perm)) != len(perm):
            raise InvalidMountException(
                f"bad perm={perm!r} {where}: expected letters from 'rwm', each at most once"
            )
        return DeviceMount(
            src_path=fields["src"], dst_path=fields.get("dst") or fields["src"], permissions=perm
        )
    if "dst" not in fields or not fields["dst"]:
        raise InvalidMountException(f"missing 'dst' {where}; {_FORM}")
    read_only = "readonly" in flags
    if kind == "bind":
        src = fields["src"]
        if src.startswith("~"):
            import os.path

            src = os.path.expanduser(src)
        return BindMount(src_path=src, dst_path=fields["dst"], read_only=read_only)
    return VolumeMount(src=fields["src"], dst_path=fields["dst"], read_only=read_only)


def parse_mounts(opts: list[str]) -> list[BindMount | VolumeMount | DeviceMount]:
    """Parses mount option strings into typed mounts.

    Each string may hold several comma-separated ``key=value`` tokens, and several
    mounts may follow each other in one list; ``type=`` must come first in each mount.
    A bind source starting with ``~`` is expanded to the home directory.
    Raises :class:`~torchx.specs.errors.InvalidMountException` (a ``ValueError``,
    and a ``KeyError`` as upstream raised) naming the bad token.

    >>> parse_mounts(["type=volume", "src=cache", "dst=/cache"])
    [VolumeMount(src='cache', dst_path='/cache', read_only=False)]
    >>> parse_mounts(["src=/a,dst=/b"])
    Traceback (most recent call last):
     ...
    torchx.specs.errors.InvalidMountException: mount option 'src=/a' comes before 'type=...'; each mount must start with type=bind, type=volume or type=device
    """
    mounts: list[BindMount | VolumeMount | DeviceMount] = []
    kind: str | None = None
    fields: dict[str, str] = {}
    flags: set[str] = set()
    for tok in _tokens(opts):
        key, sep, value = tok.partition("=")
        key = _ALIASES.get(key.strip().lower(), key.strip().lower())
        value = value.strip()
        if key == "type":
            if kind is not None:
                mounts.append(_build(kind, fields, flags))
            if value not in _KEYS:
                raise InvalidMountException(
                    f"unknown mount type {value!r} in {tok!r}: expected one of bind, volume, device"
                )
            kind, fields, flags = value, {}, set()
            continue
        if kind is None:
            raise InvalidMountException(
                f"mount option {tok!r} comes before 'type=...'; "
                "each mount must start with type=bind, type=volume or type=device"
            )
        if key not in _KEYS[kind]:
            allowed = ", ".join(sorted(_KEYS[kind]))
            raise InvalidMountException(
                f"unknown option {tok!r} for a {kind} mount: expected one of {allowed}"
            )
        if key == "readonly":
            if sep and value.lower() not in ("", "true", "1", "yes"):
                if value.lower() in ("false", "0", "no"):
                    continue
                raise InvalidMountException(f"bad value in {tok!r}: readonly takes no value")
            flags.add("readonly")
            continue
        if not sep:
            raise InvalidMountException(f"option {tok!r} needs a value: write {key}=VALUE")
        if key in fields:
            raise InvalidMountException(f"{key!r} given twice in one {kind} mount ({tok!r})")
        fields[key] = value
    if kind is not None:
        mounts.append(_build(kind, fields, flags))
    return mounts
