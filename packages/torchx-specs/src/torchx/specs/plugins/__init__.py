"""The plugin registry: what the installed plugins contribute, discovered once per process.

TorchX is assembled from what is installed. A plugin distribution names a cheap
*plugin module* in the ``torchx`` entry-point group; the module implements hooks
from :mod:`torchx.specs.hookspecs` that return names and lazy ``"module:attr"``
references. This module finds those plugins, collects their answers into one
:class:`Registry`, and imports a referenced object only when it is used::

    from torchx.specs.plugins import get_registry

    registry = get_registry()                      # discovered on first use, then cached
    factory = registry.scheduler_factory("slurm")  # imports torchx_slurm's scheduler only now
    scheduler = factory("my_session")
    sorted(registry.named_resources)               # names only: nothing imported
    registry.failures, registry.clashes            # what went wrong, for ``torchx plugins``

Entry points of upstream TorchX's groups are read too, so a vendor wheel made
for upstream works unchanged: ``torchx.schedulers`` (name -> factory),
``torchx.named_resources`` (name -> function returning a Resource) and
``torchx.components`` (group -> module; ``foo = my.pkg`` exposes
``foo.<function>``, and a group name starting with ``_`` adds no prefix). Their
values become registry entries directly; nothing is imported to discover them.

Rules the registry keeps:

* **Lazy.** Discovery imports plugin modules only, never what they reference.
  :meth:`Entry.load` (or :func:`load_ref`) imports a reference when it is used.
* **A broken plugin is reported, not fatal.** A plugin module that fails to
  import, a hook that raises or returns anything but a mapping of well-formed
  names and references, becomes a ``Failure`` (distribution, entry point,
  one-line reason) and contributes nothing from that hook; the rest works.
* **Clashes are deterministic.** When two sources give the same name for the
  same kind, the winner is: in-process registrations (:func:`register_builtin`),
  then the ``torchx`` group, then the legacy groups; ties go to the
  distribution name in alphabetical order, never to install order. Each clash
  is recorded as a ``Clash``. (One distribution declaring the same name
  in both the ``torchx`` and a legacy group is not a clash.)
* **Fast.** Scanning every installed distribution's metadata with
  :mod:`importlib.metadata` costs tens of milliseconds, so the entry points
  found are cached on disk under ``$XDG_CACHE_HOME/torchx`` (else
  ``~/.cache/torchx``, one small file per Python environment), keyed by the
  names of the ``*.dist-info``/``*.egg-info`` directories on ``sys.path`` and the
  modification times of their ``entry_points.txt``: installing, upgrading,
  reinstalling or removing a distribution invalidates it. The file is written
  atomically (mode 0600) with a format version; one that cannot be read or
  written is ignored and the scan used instead. Set ``TORCHX_NO_PLUGIN_CACHE=1``
  to always scan. (Distributions found by a custom ``sys.meta_path`` finder
  are invisible to the key, so the cache is not used when one is installed.)

API summary:

* :func:`get_registry` -> :class:`Registry` (cached); :func:`reset_registry`
  forgets it and the in-process registrations (for tests);
  :func:`register_builtin` adds an in-process plugin (a module or object with
  ``@hookimpl`` functions); :func:`build_registry` builds an uncached one.
* :class:`Registry`: ``schedulers``, ``named_resources``, ``components``,
  ``cli_commands``, ``quick_handlers`` (each ``Mapping[str, Entry]``), ``failures``, ``clashes``,
  ``distributions`` (per installed plugin distribution: its entry points,
  contributions and failures); ``get(kind, name)``, ``scheduler_factory(name)``,
  ``named_resource_factory(name)``, ``cli_command(name)``,
  ``find_component(name)``, ``component(name)``, ``list_components()``.
* :class:`Entry`: ``name``, ``kind``, ``value`` (reference or object), ``ref``,
  ``distribution``, ``version``, ``group``, ``entry_point``, ``load()``.
* :func:`load_ref`, :func:`parse_ref`; errors :class:`UnknownPluginEntry`
  (also a KeyError), :class:`PluginLoadError`, :class:`InvalidPluginReference`.

>>> from torchx.specs.hookspecs import hookimpl
>>> from torchx.specs.plugins import build_registry
>>> class MyPlugin:
...     @hookimpl
...     def torchx_schedulers(self):
...         return {"local": "my_pkg.scheduler:create_scheduler"}
>>> registry = build_registry([MyPlugin()], entry_points=False)
>>> registry.schedulers["local"].ref
'my_pkg.scheduler:create_scheduler'
>>> registry.scheduler_factory("locl")
Traceback (most recent call last):
 ...
torchx.specs.plugins.entries.UnknownPluginEntry: unknown scheduler 'locl' (did you mean 'local'?); installed: local
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from types import ModuleType
from typing import TYPE_CHECKING, Any, Final

from torchx.specs.plugins.entries import (
    ENTRY_POINT_GROUP,
    IN_PROCESS,
    KINDS,
    LABELS,
    LEGACY_GROUPS,
    NO_CACHE_ENV,
    Entry,
    InvalidPluginReference,
    Kind,
    PluginError,
    PluginLoadError,
    UnknownPluginEntry,
    load_ref,
    parse_ref,
)
from torchx.specs.plugins.registry import Registry

if TYPE_CHECKING:
    # re-exported for type checkers; at run time __getattr__ below loads them on first use
    from torchx.specs._plugin_reports import Clash as Clash
    from torchx.specs._plugin_reports import Failure as Failure
    from torchx.specs._plugin_reports import PluginDistribution as PluginDistribution

__all__ = [
    "ENTRY_POINT_GROUP",
    "IN_PROCESS",
    "KINDS",
    "LABELS",
    "LEGACY_GROUPS",
    "NO_CACHE_ENV",
    "Entry",
    "InvalidPluginReference",
    "Kind",
    "PluginError",
    "PluginLoadError",
    "Registry",
    "UnknownPluginEntry",
    "build_registry",
    "get_registry",
    "load_ref",
    "parse_ref",
    "register_builtin",
    "reset_registry",
]

# defined in _plugin_reports (imported on first need, see __getattr__ below)
_REPORT_TYPES: Final = ("Clash", "Failure", "PluginDistribution")


def __getattr__(name: str) -> Any:
    if name in _REPORT_TYPES:
        from torchx.specs import _plugin_reports

        return getattr(_plugin_reports, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# --- the process-wide registry -------------------------------------------------------

_LOCK = threading.RLock()
_REGISTRY: Registry | None = None
_BUILDING = False  # True while this process's registry is being built (under _LOCK)
_BUILTINS: list[tuple[str, object]] = []


def build_registry(plugins: Iterable[object] = (), *, entry_points: bool = True) -> Registry:
    """A new registry (not cached) from installed plugins and in-process ones.

    Args:
        plugins: extra plugin objects (modules, classes or instances with
            ``@hookimpl`` functions), added after those of :func:`register_builtin`
        entry_points: also read installed distributions' entry points
    """
    builtins = list(_BUILTINS)
    for plugin in plugins:
        builtins.append((_plugin_label(plugin), plugin))
    from torchx.specs.plugins.build import build
    from torchx.specs.plugins.discovery import entry_point_records

    records = entry_point_records() if entry_points else ()
    return build(records, builtins)


def get_registry() -> Registry:
    """The process-wide registry, discovered on first call and cached."""
    global _REGISTRY, _BUILDING
    registry = _REGISTRY
    if registry is None:
        with _LOCK:
            if _BUILDING:  # re-entered from a plugin module's import or a hook
                raise PluginError(
                    "the plugin registry was used while plugins are being loaded; a plugin "
                    "module or hook must not look up plugins (do it when the entry is used)"
                )
            if _REGISTRY is None:
                _BUILDING = True
                try:
                    _REGISTRY = build_registry()
                finally:
                    _BUILDING = False
            registry = _REGISTRY
    return registry


def reset_registry() -> None:
    """Forget the cached registry and every :func:`register_builtin` plugin (for tests)."""
    global _REGISTRY
    with _LOCK:
        _REGISTRY = None
        _BUILTINS.clear()


def register_builtin(plugin: object, name: str | None = None) -> None:
    """Add an in-process plugin (module or object with ``@hookimpl`` functions).

    Its entries win clashes against installed plugins (they are what this
    process asked for). The next :func:`get_registry` call rebuilds the registry.
    """
    global _REGISTRY
    with _LOCK:
        _BUILTINS.append((name or _plugin_label(plugin), plugin))
        _REGISTRY = None


def _plugin_label(plugin: object) -> str:
    if isinstance(plugin, ModuleType | type):
        return plugin.__name__
    return type(plugin).__name__
