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
torchx.specs.plugins.UnknownPluginEntry: unknown scheduler 'locl' (did you mean 'local'?); installed: local
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from types import FunctionType, MappingProxyType, ModuleType
from typing import TYPE_CHECKING, Any, Final, NamedTuple, TypeAlias

import attrs

from torchx.specs import hookspecs
from torchx.specs.errors import SpecError, did_you_mean
from torchx.specs.hookspecs import HOOKS

if TYPE_CHECKING:
    import pluggy

    from torchx.specs._plugin_reports import Clash, Failure, PluginDistribution

# defined in _plugin_reports (imported on first need, see __getattr__ below)
_REPORT_TYPES: Final = ("Clash", "Failure", "PluginDistribution")


def __getattr__(name: str) -> Any:
    if name in _REPORT_TYPES:
        from torchx.specs import _plugin_reports

        return getattr(_plugin_reports, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


#: What an entry provides: the ``kind`` of a hook in :data:`torchx.specs.hookspecs.HOOKS`
#: (``"scheduler"``, ``"named_resource"``, ``"component"``, ``"cli_command"``,
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

#: The ``group`` of entries contributed by plugins passed to :func:`register_builtin`.
IN_PROCESS: Final = hookspecs.IN_PROCESS

#: Set to a non-empty value to disable the on-disk entry-point cache.
NO_CACHE_ENV: Final = "TORCHX_NO_PLUGIN_CACHE"

#: How messages name each kind ("named resource", "CLI command").
LABELS: Final[Mapping[Kind, str]] = MappingProxyType(
    {hook.kind: hook.label for hook in HOOKS.values()}
)

_HOOK_KIND: Final[Mapping[str, Kind]] = {name: hook.kind for name, hook in HOOKS.items()}


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
    torchx.specs.plugins.InvalidPluginReference: invalid reference 'my.components:': expected 'package.module' or 'package.module:attribute'
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


def _one_line(exc: BaseException) -> str:
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
        raise PluginLoadError(f"cannot import {module_name!r} for {ref!r}: {_one_line(e)}") from e
    for part in attr.split(".") if attr else ():
        try:
            obj = getattr(obj, part)
        except AttributeError as e:
            raise PluginLoadError(
                f"cannot load {ref!r}: {module_name!r} has no attribute {attr!r}"
            ) from e
    return obj


# --- records ------------------------------------------------------------------------


def _canonical(dist_name: str) -> str:
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
    came from (``None`` for :func:`register_builtin` plugins), ``group`` which
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


class _Record(NamedTuple):
    """One entry point in a group the registry reads (also the on-disk cache row)."""

    group: str
    name: str
    value: str
    distribution: str
    version: str


# --- the registry -------------------------------------------------------------------


def _rank(entry: Entry) -> tuple[int, str, str, str]:
    """Clash order: in-process, then the torchx group, then legacy; then distribution name."""
    group_rank = 0 if entry.group == IN_PROCESS else 1 if entry.group == ENTRY_POINT_GROUP else 2
    return (group_rank, _canonical(entry.distribution or ""), entry.group, entry.entry_point)


class Registry:
    """Everything the installed plugins contribute, by kind and name.

    Built by :func:`get_registry` (cached) or :func:`build_registry`, not
    directly. The four
    mappings hold one :class:`Entry` per name (the winner of any clash), sorted
    by name; nothing they reference is imported until :meth:`Entry.load`.
    """

    def __init__(
        self,
        candidates: Iterable[Entry],
        failures: Iterable[Failure] = (),
        records: Iterable[_Record] = (),
    ) -> None:
        by_key: dict[tuple[Kind, str], list[Entry]] = {}
        for entry in candidates:
            by_key.setdefault((entry.kind, entry.name), []).append(entry)
        tables: dict[Kind, dict[str, Entry]] = {kind: {} for kind in KINDS}
        clashes: list[Clash] = []
        for (kind, name), entries in sorted(by_key.items()):
            entries.sort(key=_rank)
            winner, losers = entries[0], tuple(entries[1:])
            tables[kind][name] = winner
            if any(e.distribution != winner.distribution or e.distribution is None for e in losers):
                from torchx.specs._plugin_reports import Clash

                clashes.append(Clash(name=name, kind=kind, winner=winner, losers=losers))
        self._tables: dict[Kind, Mapping[str, Entry]] = {
            kind: MappingProxyType(table) for kind, table in tables.items()
        }
        self._failures = list(failures)
        self._clashes = tuple(clashes)
        self._candidates = tuple(e for entries in by_key.values() for e in entries)
        self._records = tuple(records)
        self._components: Mapping[str, Entry] | None = None

    # -- what is installed

    @property
    def schedulers(self) -> Mapping[str, Entry]:
        """Scheduler name -> entry whose :meth:`~Entry.load` gives ``create_scheduler``."""
        return self._tables["scheduler"]

    @property
    def named_resources(self) -> Mapping[str, Entry]:
        """Named resource -> entry whose :meth:`~Entry.load` gives a ``() -> Resource`` function."""
        return self._tables["named_resource"]

    @property
    def components(self) -> Mapping[str, Entry]:
        """Component name or group prefix -> entry, as declared (groups not expanded).

        See :meth:`list_components` for every component name and
        :meth:`find_component` to resolve one.
        """
        return self._tables["component"]

    @property
    def cli_commands(self) -> Mapping[str, Entry]:
        """Subcommand name -> entry whose :meth:`~Entry.load` gives the command object or class."""
        return self._tables["cli_command"]

    @property
    def quick_handlers(self) -> Mapping[str, Entry]:
        """Scheduler name -> entry whose :meth:`~Entry.load` gives its quick handler
        (``torchx.schedulers.quick``; used by the ``torchx`` command only)."""
        return self._tables["quick_handler"]

    @property
    def failures(self) -> tuple[Failure, ...]:
        """Plugins, hooks and component modules that could not be used, with the reason."""
        return tuple(self._failures)

    @property
    def failed_plugins(self) -> tuple[str, ...]:
        """The distributions (or entry points) with a failure, sorted: for hints such as
        "plugins that failed to load: ..." after an unknown name."""
        return tuple(sorted({f.distribution or f.entry_point for f in self._failures}))

    @property
    def clashes(self) -> tuple[Clash, ...]:
        """Names given by more than one source, with the winner and the losers."""
        return self._clashes

    @property
    def distributions(self) -> Mapping[str, PluginDistribution]:
        """Installed distribution name -> what it declares, contributes and failed to do."""
        from torchx.specs._plugin_reports import PluginDistribution

        out: dict[str, PluginDistribution] = {}
        for record in sorted(self._records, key=lambda r: (_canonical(r.distribution), r)):
            dist = out.get(record.distribution)
            declared = f"{record.group}: {record.name} = {record.value}"
            if dist is None:
                out[record.distribution] = PluginDistribution(
                    name=record.distribution,
                    version=record.version,
                    entry_points=(declared,),
                    entries=tuple(
                        sorted(
                            (e for e in self._candidates if e.distribution == record.distribution),
                            key=lambda e: (KINDS.index(e.kind), e.name, e.group),
                        )
                    ),
                    failures=tuple(
                        f for f in self._failures if f.distribution == record.distribution
                    ),
                )
            else:
                out[record.distribution] = attrs.evolve(
                    dist, entry_points=(*dist.entry_points, declared)
                )
        return MappingProxyType(out)

    def entries(self, kind: Kind) -> Mapping[str, Entry]:
        """The mapping for ``kind`` (``"scheduler"``, ``"named_resource"``, ...)."""
        try:
            return self._tables[kind]
        except KeyError:
            raise PluginError(
                f"unknown plugin kind {kind!r}{did_you_mean(str(kind), KINDS)}; "
                f"expected one of {', '.join(KINDS)}"
            ) from None

    # -- lookups

    def _unknown(self, kind: Kind, name: str, names: Iterable[str]) -> UnknownPluginEntry:
        known = sorted(names)
        shown = ", ".join(known[:40]) + (
            f", ... ({len(known) - 40} more)" if len(known) > 40 else ""
        )
        message = f"unknown {LABELS[kind]} {name!r}{did_you_mean(name, known)}; installed: {shown or 'none'}"
        if self.failed_plugins:
            message += f"; plugins that failed to load: {', '.join(self.failed_plugins)}"
        return UnknownPluginEntry(message)

    def get(self, kind: Kind, name: str) -> Entry:
        """The entry for ``name``; :class:`UnknownPluginEntry` with a suggestion when there is none.

        For components this is :meth:`find_component` (it resolves group members).
        """
        if kind == "component":
            return self.find_component(name)
        table = self.entries(kind)
        entry = table.get(name)
        if entry is None:
            raise self._unknown(kind, name, table)
        return entry

    def scheduler_factory(self, name: str) -> Callable[..., Any]:
        """The ``create_scheduler(session_name, **kwargs)`` factory of scheduler ``name``."""
        factory = self.get("scheduler", name).load()
        if not callable(factory):
            raise PluginLoadError(
                f"scheduler {name!r} from {self.schedulers[name].source} is not callable "
                f"(got {type(factory).__name__}); expected create_scheduler(session_name, **kwargs)"
            )
        return factory  # type: ignore[no-any-return]

    def named_resource_factory(self, name: str) -> Callable[[], Any]:
        """The function returning the Resource named ``name`` (not called)."""
        factory = self.get("named_resource", name).load()
        if not callable(factory):
            raise PluginLoadError(
                f"named resource {name!r} from {self.named_resources[name].source} is not "
                f"callable (got {type(factory).__name__}); expected a function returning a Resource"
            )
        return factory  # type: ignore[no-any-return]

    def cli_command(self, name: str) -> Any:
        """The command object (or class) of subcommand ``name``."""
        return self.get("cli_command", name).load()

    def component(self, name: str) -> Callable[..., Any]:
        """The component function ``name`` (e.g. ``"dist.ddp"``), imported now."""
        fn = self.find_component(name).load()
        if not callable(fn):
            raise PluginLoadError(
                f"component {name!r} is not callable (got {type(fn).__name__}); "
                "expected a function returning an AppDef"
            )
        return fn  # type: ignore[no-any-return]

    # -- components: single entries and groups

    def _groups(self) -> list[Entry]:
        """Component groups in lookup order: longest prefix first, then clash order."""
        groups = [e for e in self.components.values() if e.is_group]
        groups.sort(key=lambda e: (-len(e.prefix), _rank(e)))
        return groups

    def find_component(self, name: str) -> Entry:
        """The entry of component ``name``, resolving members of groups to ``"module:function"``.

        A single component entry wins over group members; among groups the
        longest matching prefix wins. Imports the candidate group modules.
        """
        entry = self.components.get(name)
        if entry is not None and not entry.is_group:
            return entry
        for group in self._groups():
            if group.prefix:
                if not name.startswith(group.prefix + "."):
                    continue
                rest = name[len(group.prefix) + 1 :]
            else:
                rest = name
            found = self._find_in_group(group, name, rest)
            if found is not None:
                return found
        raise self._unknown("component", name, self.list_components())

    def _find_in_group(self, group: Entry, name: str, rest: str) -> Entry | None:
        parts = rest.split(".")
        if not all(p.isidentifier() and not p.startswith("_") for p in parts):
            return None
        assert isinstance(group.value, str)
        module_name = ".".join([group.value, *parts[:-1]])
        import importlib

        try:
            module = importlib.import_module(module_name)
        except Exception as e:
            missing = getattr(e, "name", None) if isinstance(e, ModuleNotFoundError) else None
            if (
                missing
                and missing.startswith(group.value + ".")
                and (module_name == missing or module_name.startswith(missing + "."))
            ):
                return None  # no such submodule in the group
            if group.prefix:  # the user named this group: say what is wrong with it
                raise PluginLoadError(
                    f"cannot load component group {group.name!r} from {group.source}: "
                    f"{_one_line(e)}"
                ) from e
            # a prefix-less group: report it (as list_components does) and try the others
            self._add_failure(
                group, f"component module {module_name!r} failed to import: {_one_line(e)}"
            )
            return None
        if parts[-1] not in _component_functions(module):
            return None
        return attrs.evolve(group, name=name, value=f"{module_name}:{parts[-1]}")

    def _add_failure(self, entry: Entry, reason: str) -> None:
        from torchx.specs._plugin_reports import Failure

        failure = Failure(entry.distribution, entry.version, entry.group, entry.entry_point, reason)
        if failure not in self._failures:
            self._failures.append(failure)

    def list_components(self) -> Mapping[str, Entry]:
        """Every component name -> its entry, expanding groups (imports their modules, once).

        A group module (or submodule) that fails to import is added to
        :attr:`failures` and skipped.
        """
        if self._components is not None:
            return self._components
        out: dict[str, Entry] = {name: e for name, e in self.components.items() if not e.is_group}
        for group in self._groups():
            assert isinstance(group.value, str)
            for rel, module_name, fn in self._expand(group, group.value, ""):
                full = ".".join(p for p in (group.prefix, rel, fn) if p)
                out.setdefault(full, attrs.evolve(group, name=full, value=f"{module_name}:{fn}"))
        self._components = MappingProxyType(dict(sorted(out.items())))
        return self._components

    def _expand(self, group: Entry, module_name: str, rel: str) -> list[tuple[str, str, str]]:
        import importlib

        try:
            module = importlib.import_module(module_name)
        except Exception as e:
            self._add_failure(
                group, f"component module {module_name!r} failed to import: {_one_line(e)}"
            )
            return []
        found = [(rel, module_name, fn) for fn in _component_functions(module)]
        path = getattr(module, "__path__", None)
        if path is not None:
            import pkgutil

            for info in sorted(pkgutil.iter_modules(path), key=lambda i: i.name):
                if not info.name.startswith("_"):
                    sub_rel = f"{rel}.{info.name}" if rel else info.name
                    found += self._expand(group, f"{module_name}.{info.name}", sub_rel)
        return found

    def __repr__(self) -> str:
        counts = ", ".join(f"{len(self._tables[k])} {k}s" for k in KINDS)
        return f"<Registry {counts}, {len(self._failures)} failures, {len(self._clashes)} clashes>"


def _component_functions(module: ModuleType) -> list[str]:
    """Public functions defined in ``module`` (not imported into it), sorted."""
    import inspect

    return sorted(
        name
        for name, obj in vars(module).items()
        if not name.startswith("_")
        and inspect.isfunction(obj)
        and obj.__module__ == module.__name__
    )


# --- building a registry from plugins -----------------------------------------------


class _Origin(NamedTuple):
    """Where a plugin came from; stamps its entries and failures."""

    distribution: str | None
    version: str | None
    group: str
    entry_point: str

    def failure(self, reason: str) -> Failure:
        from torchx.specs._plugin_reports import Failure

        return Failure(self.distribution, self.version, self.group, self.entry_point, reason)

    def entry(self, name: str, kind: Kind, value: str | Callable[..., Any]) -> Entry:
        return Entry(
            name, kind, value, self.distribution, self.version, self.group, self.entry_point
        )


def _check_name(name: object) -> str | None:
    if not isinstance(name, str) or not name or any(c.isspace() for c in name):
        return f"bad name {name!r}: expected a non-empty string without whitespace"
    return None


def _check_value(kind: Kind, value: object) -> tuple[str | Callable[..., Any] | None, str | None]:
    """(normalized value, None) or (None, why it is bad)."""
    if isinstance(value, str):
        try:
            module, attr = parse_ref(value)
        except InvalidPluginReference as e:
            return None, str(e)
        if attr is None and kind != "component":
            return None, f"reference {value!r} names a module; expected 'package.module:attribute'"
        return (f"{module}:{attr}" if attr else module), None
    if kind == "named_resource" and callable(value):
        return value, None
    expected = (
        "a 'module:attr' reference or a function"
        if kind == "named_resource"
        else "a 'module:attr' reference"
    )
    shown = repr(value) if len(repr(value)) <= 60 else repr(value)[:57] + "..."
    return None, f"got {type(value).__name__} {shown}; expected {expected}"


def _entries_from_hook(
    result: object, kind: Kind, origin: _Origin, hook: str
) -> tuple[list[Entry], str | None]:
    """The entries of one hook's result, or ([], reason) when it is malformed."""
    if not isinstance(result, Mapping):
        return (
            [],
            f"{hook}() returned {type(result).__name__}, expected a mapping of name to reference",
        )
    entries: list[Entry] = []
    for name, value in result.items():
        problem = _check_name(name)
        normal, why = _check_value(kind, value)
        if problem is None and normal is None:
            problem = f"bad value for {name!r}: {why}"
        if problem is not None:
            return [], f"{hook}() returned a {problem}"
        assert normal is not None
        key = name
        if (
            kind == "component"
            and isinstance(normal, str)
            and ":" not in normal
            and name.startswith("_")
        ):
            key = f"{name}@{origin.distribution or origin.entry_point}"  # "_" groups never clash
        entries.append(origin.entry(key, kind, normal))
    return entries, None


def _legacy_entry(record: _Record) -> tuple[Entry | None, Failure | None]:
    kind = LEGACY_GROUPS[record.group]
    origin = _Origin(record.distribution, record.version, record.group, record.name)
    problem = _check_name(record.name)
    if problem is not None:
        return None, origin.failure(problem)
    normal, why = _check_value(kind, record.value)
    if normal is None:
        return None, origin.failure(why or "bad value")
    if kind == "component" and not (isinstance(normal, str) and ":" not in normal):
        return None, origin.failure(
            f"reference {record.value!r} is not a module; a torchx.components entry point names a module"
        )
    name = record.name
    if kind == "component" and name.startswith("_"):
        name = f"{name}@{record.distribution}"  # "_" groups add no prefix and never clash
    return origin.entry(name, kind, normal), None


def _register(
    pm: pluggy.PluginManager, plugin: object, origin: _Origin, failures: list[Failure]
) -> str | None:
    """Register one plugin object with pluggy; returns its pluggy name or None on failure."""
    label = f"{origin.group}:{origin.distribution}:{origin.entry_point}:{len(pm.get_plugins())}"
    try:
        name = pm.register(plugin, name=label)
    except Exception as e:  # PluginValidationError, or the same module registered twice
        failures.append(origin.failure(f"cannot register plugin: {_one_line(e)}"))
        return None
    if name is None:  # pragma: no cover - blocked names are never used here
        return None
    for caller in pm.get_hookcallers(plugin) or []:
        if not caller.has_spec():
            failures.append(
                origin.failure(
                    f"unknown hook {caller.name!r}{did_you_mean(caller.name, hookspecs.HOOK_NAMES)}"
                )
            )
    for hook in hookspecs.HOOK_NAMES:
        fn = getattr(plugin, hook, None)
        if callable(fn) and getattr(fn, f"{hookspecs.PROJECT_NAME}_impl", None) is None:
            failures.append(
                origin.failure(
                    f"{hook} is not marked with @hookimpl (from torchx.specs.hookspecs) and is ignored"
                )
            )
    return name


def _plugin_manager() -> pluggy.PluginManager:
    import pluggy

    impl_attr = f"{hookspecs.PROJECT_NAME}_impl"
    hook_prefix = f"{hookspecs.PROJECT_NAME}_"

    class _Manager(pluggy.PluginManager):
        def parse_hookimpl_opts(self, plugin: object, name: str) -> Any:
            # pluggy inspects every attribute of a plugin with inspect.getattr_static,
            # which is most of the cost of registering a module full of imports. Only
            # hook-named attributes and marked plain functions can be implementations.
            if not name.startswith(hook_prefix) and isinstance(plugin, ModuleType):
                obj = vars(plugin).get(name)
                if not (isinstance(obj, FunctionType) and impl_attr in vars(obj)):
                    return None
            return super().parse_hookimpl_opts(plugin, name)

        def parse_hookspec_opts(self, module_or_class: Any, name: str) -> Any:
            if not name.startswith(hook_prefix):  # same cost saving for the spec module
                return None
            return super().parse_hookspec_opts(module_or_class, name)

    pm = _Manager(hookspecs.PROJECT_NAME)
    pm.add_hookspecs(hookspecs)
    return pm


def _build(records: Sequence[_Record], builtins: Sequence[tuple[str, object]]) -> Registry:
    pm = _plugin_manager()
    failures: list[Failure] = []
    candidates: list[Entry] = []
    origins: dict[str, _Origin] = {}

    for label, plugin in builtins:
        origin = _Origin(None, None, IN_PROCESS, label)
        name = _register(pm, plugin, origin, failures)
        if name is not None:
            origins[name] = origin

    for record in sorted(records, key=lambda r: (_canonical(r.distribution), r)):
        if record.group == ENTRY_POINT_GROUP:
            origin = _Origin(record.distribution, record.version, record.group, record.name)
            try:
                plugin = load_ref(record.value)
            except PluginError as e:
                failures.append(origin.failure(f"plugin module failed to load: {e}"))
                continue
            if any(plugin is own for _, own in builtins):
                # registered in-process too (a plugin's own tests, with the plugin
                # installed): the same module, whose in-process registration wins
                continue
            name = _register(pm, plugin, origin, failures)
            if name is not None:
                origins[name] = origin
        elif record.group in LEGACY_GROUPS:
            entry, failure = _legacy_entry(record)
            if entry is not None:
                candidates.append(entry)
            if failure is not None:
                failures.append(failure)

    for hook in hookspecs.HOOK_NAMES:
        kind = _HOOK_KIND[hook]
        for impl in getattr(pm.hook, hook).get_hookimpls():
            origin = origins[impl.plugin_name]
            if impl.wrapper or impl.hookwrapper:
                failures.append(origin.failure(f"{hook}: hook wrappers are not supported"))
                continue
            try:
                result = impl.function()
            except Exception as e:
                failures.append(origin.failure(f"{hook}() raised {_one_line(e)}"))
                continue
            entries, problem = _entries_from_hook(result, kind, origin, hook)
            if problem is not None:
                failures.append(origin.failure(problem))
            candidates.extend(entries)

    failures.sort(key=lambda f: (_canonical(f.distribution or ""), f.group, f.entry_point))
    return Registry(candidates, failures, records)


# --- discovering entry points (with the on-disk cache) -------------------------------

_CACHE_FORMAT: Final = 1
_CACHE_MAGIC: Final = "torchx-plugin-entry-points"
_GROUPS: Final = (ENTRY_POINT_GROUP, *LEGACY_GROUPS)


def _scan() -> tuple[_Record, ...]:
    """Entry points of the groups we read, from importlib.metadata (slow: reads every dist)."""
    from importlib.metadata import entry_points

    found: list[_Record] = []
    all_eps = entry_points()
    for group in _GROUPS:
        for ep in all_eps.select(group=group):
            dist = ep.dist
            try:
                dist_name = (dist.name if dist is not None else None) or "<unknown>"
                version = (dist.version if dist is not None else None) or ""
            except Exception:  # unreadable metadata: still usable, just unnamed
                dist_name, version = "<unknown>", ""
            found.append(_Record(group, ep.name, ep.value, dist_name, version))
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


def _read_cache(path: str, key: str) -> tuple[_Record, ...] | None:
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
    records: list[_Record] = []
    for line in lines[2:-2]:
        fields = line.split("\t")
        if len(fields) != 5:
            return None
        records.append(_Record(*fields))
    return tuple(records)


def _write_cache(path: str, key: str, records: Sequence[_Record]) -> None:
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


def _entry_point_records() -> tuple[_Record, ...]:
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
    records = _entry_point_records() if entry_points else ()
    return _build(records, builtins)


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
