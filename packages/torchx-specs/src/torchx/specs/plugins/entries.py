"""What the plugin registry is made of: kinds, lazy references, entries, and their errors.

A plugin names what it contributes as *lazy references* (``"pkg.module:attr"``):
:func:`parse_ref` checks one, :func:`load_ref` imports what it names. Each contributed
name becomes an :class:`Entry` (its kind, value and provenance), imported only by
:meth:`Entry.load`. A :class:`Record` is one entry point as read from installed
metadata (also a row of the on-disk cache). Import these from
:mod:`torchx.specs.plugins`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any, Final, NamedTuple, TypeAlias

import attrs

from torchx.specs import hookspecs
from torchx.specs.errors import SpecError
from torchx.specs.hookspecs import HOOKS

#: ``"quick_handler"``).
Kind: TypeAlias = str

#: All kinds, in the order reports list them (derived from the hook table).
KINDS: Final[tuple[Kind, ...]] = tuple(hook.kind for hook in HOOKS.values())

#: The entry-point group naming plugin modules.
ENTRY_POINT_GROUP: Final = "torchx"

#: Upstream TorchX's entry-point groups, read for compatibility, and what each holds.
LEGACY_GROUPS: Final[Mapping[str, Kind]] = MappingProxyType(
    {
        "torchx.schedulers": "scheduler",
        "torchx.named_resources": "named_resource",
        "torchx.components": "component",
    }
)

#: The ``group`` of entries contributed by plugins passed to :func:`~torchx.specs.plugins.register_builtin`.
IN_PROCESS: Final = hookspecs.IN_PROCESS

#: Set to a non-empty value to disable the on-disk entry-point cache.
NO_CACHE_ENV: Final = "TORCHX_NO_PLUGIN_CACHE"

#: How messages name each kind ("named resource", "CLI command").
LABELS: Final[Mapping[Kind, str]] = MappingProxyType(
    {hook.kind: hook.label for hook in HOOKS.values()}
)

# --- errors -------------------------------------------------------------------------


class PluginError(SpecError):
    """Base class of the errors raised by the plugin registry."""


class InvalidPluginReference(PluginError):
    """A lazy reference is not of the form ``"pkg.module"`` or ``"pkg.module:attr"``."""


class PluginLoadError(PluginError):
    """A lazy reference could not be imported (its module fails to import or lacks the attribute)."""


class UnknownPluginEntry(PluginError, KeyError):
    """No plugin provides the requested name; the message suggests the nearest one.

    Also a :class:`KeyError`, so lookups behave like a mapping's.
    """

    def __str__(self) -> str:  # KeyError would repr() the message; keep it one readable line
        return str(self.args[0]) if self.args else ""


# --- references ---------------------------------------------------------------------


def parse_ref(ref: str) -> tuple[str, str | None]:
    """Split ``"pkg.mod:attr"`` into ``("pkg.mod", "attr")``; a bare module gives ``None``.

    Entry-point extras (``"pkg.mod:attr [extra]"``) are ignored.

    >>> from torchx.specs.plugins import parse_ref
    >>> parse_ref("torchx_slurm.scheduler:create_scheduler")
    ('torchx_slurm.scheduler', 'create_scheduler')
    >>> parse_ref("my.components")
    ('my.components', None)
    >>> parse_ref("my.components:")
    Traceback (most recent call last):
     ...
    torchx.specs.plugins.entries.InvalidPluginReference: invalid reference 'my.components:': expected 'package.module' or 'package.module:attribute'
    """
    module, attr = _split_ref(ref) if isinstance(ref, str) else (None, None)
    if module is None:
        raise InvalidPluginReference(
            f"invalid reference {ref!r}: expected 'package.module' or 'package.module:attribute'"
        )
    return module, attr


def _dotted(text: str) -> bool:
    return all(part.isidentifier() for part in text.split("."))


def _split_ref(ref: str) -> tuple[str | None, str | None]:
    text = ref.split("[", 1)[0] if ref.rstrip().endswith("]") else ref  # entry-point extras
    module, sep, attr = (part.strip() for part in text.partition(":"))
    if not _dotted(module) or (sep and not _dotted(attr)):
        return None, None
    return module, (attr if sep else None)


def one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    detail = text[0] if text else ""
    if len(detail) > 300:
        detail = detail[:297] + "..."
    return f"{type(exc).__name__}: {detail}" if detail else type(exc).__name__


def load_ref(ref: str) -> Any:
    """Import the object a lazy reference names: ``"pkg.mod:attr"`` or the module ``"pkg.mod"``.

    Raises :class:`InvalidPluginReference` for a malformed reference and
    :class:`PluginLoadError` (naming the reference and the cause) when the
    module fails to import or lacks the attribute.

    >>> load_ref("torchx.specs.errors:did_you_mean")("locl", ["local"])
    " (did you mean 'local'?)"
    """
    module_name, attr = parse_ref(ref)
    import importlib

    try:
        obj: Any = importlib.import_module(module_name)
    except Exception as e:
        raise PluginLoadError(f"cannot import {module_name!r} for {ref!r}: {one_line(e)}") from e
    for part in attr.split(".") if attr else ():
        try:
            obj = getattr(obj, part)
        except AttributeError as e:
            raise PluginLoadError(
                f"cannot load {ref!r}: {module_name!r} has no attribute {attr!r}"
            ) from e
    return obj


# --- records ------------------------------------------------------------------------


def canonical(dist_name: str) -> str:
    """PEP 503 normalized distribution name: the sort key of clash resolution."""
    out = dist_name.lower().replace("_", "-").replace(".", "-")
    while "--" in out:
        out = out.replace("--", "-")
    return out


@attrs.frozen
class Entry:
    """One name a plugin contributes: a scheduler, named resource, component or CLI command.

    ``value`` is a lazy ``"module:attr"`` reference (a bare ``"module"`` for a
    component group) or, for named resources given as functions, the object
    itself. ``distribution``/``version`` say which installed distribution it
    came from (``None`` for :func:`~torchx.specs.plugins.register_builtin` plugins), ``group`` which
    entry-point group (``"torchx"``, a legacy group or :data:`IN_PROCESS`), and
    ``entry_point`` the entry point's name (or the in-process plugin's name).
    """

    name: str
    kind: Kind
    value: str | Callable[..., Any] = attrs.field(eq=False)
    distribution: str | None
    version: str | None
    group: str
    entry_point: str

    @property
    def ref(self) -> str | None:
        """The lazy reference, or ``None`` when the entry holds the object itself."""
        return self.value if isinstance(self.value, str) else None

    @property
    def is_group(self) -> bool:
        """True for a component group: a module whose public functions are components."""
        return self.kind == "component" and isinstance(self.value, str) and ":" not in self.value

    @property
    def prefix(self) -> str:
        """For a component group, the prefix of its components ("" for a name starting with ``_``)."""
        return "" if self.name.startswith("_") else self.name

    @property
    def source(self) -> str:
        """Where the entry came from, for messages: ``"torchx-slurm 0.1"`` or ``"<in-process>"``."""
        if self.distribution is None:
            return f"{IN_PROCESS} {self.entry_point}"
        return f"{self.distribution} {self.version}".strip()

    def load(self) -> Any:
        """The referenced object, imported now (the object itself for value entries).

        Raises :class:`PluginLoadError` naming the entry and its distribution.
        """
        if not isinstance(self.value, str):
            return self.value
        try:
            return load_ref(self.value)
        except PluginError as e:
            raise PluginLoadError(
                f"cannot load {LABELS[self.kind]} {self.name!r} from {self.source}: {e}"
            ) from e

    def __str__(self) -> str:
        shown = self.value if isinstance(self.value, str) else _describe_object(self.value)
        return f"{LABELS[self.kind]} {self.name!r} = {shown} ({self.source}, {self.group})"


def _describe_object(obj: object) -> str:
    module = getattr(obj, "__module__", None) or "?"
    name = getattr(obj, "__qualname__", None) or type(obj).__name__
    return f"<{module}.{name}>"


class Record(NamedTuple):
    """One entry point in a group the registry reads (also the on-disk cache row)."""

    group: str
    name: str
    value: str
    distribution: str
    version: str
