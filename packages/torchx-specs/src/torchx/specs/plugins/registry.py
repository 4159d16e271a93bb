"""The :class:`Registry`: what the installed plugins contribute, by kind and name.

One table per kind (schedulers, named resources, components, CLI commands, quick
handlers), each holding the winner of any clash (:func:`rank`: in-process
registrations, then the ``torchx`` group, then the legacy groups, then the
distribution name), plus the failures and clashes found while building it. Lookups
suggest the nearest name; component groups are expanded on demand. Built by
:mod:`torchx.specs.plugins.build`; get the process's one with
:func:`torchx.specs.plugins.get_registry`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from types import MappingProxyType, ModuleType
from typing import TYPE_CHECKING, Any

import attrs

from torchx.specs.errors import did_you_mean
from torchx.specs.plugins.entries import (
    ENTRY_POINT_GROUP,
    IN_PROCESS,
    KINDS,
    LABELS,
    Entry,
    Kind,
    PluginError,
    PluginLoadError,
    Record,
    UnknownPluginEntry,
    canonical,
    one_line,
)

if TYPE_CHECKING:
    from torchx.specs._plugin_reports import Clash, Failure, PluginDistribution


def rank(entry: Entry) -> tuple[int, str, str, str]:
    """Clash order: in-process, then the torchx group, then legacy; then distribution name."""
    group_rank = 0 if entry.group == IN_PROCESS else 1 if entry.group == ENTRY_POINT_GROUP else 2
    return (group_rank, canonical(entry.distribution or ""), entry.group, entry.entry_point)


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
        records: Iterable[Record] = (),
    ) -> None:
        by_key: dict[tuple[Kind, str], list[Entry]] = {}
        for entry in candidates:
            by_key.setdefault((entry.kind, entry.name), []).append(entry)
        tables: dict[Kind, dict[str, Entry]] = {kind: {} for kind in KINDS}
        clashes: list[Clash] = []
        for (kind, name), entries in sorted(by_key.items()):
            entries.sort(key=rank)
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
        (``torchx.schedulers.helpers.quick``; used by the ``torchx`` command only)."""
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
        for record in sorted(self._records, key=lambda r: (canonical(r.distribution), r)):
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
        groups.sort(key=lambda e: (-len(e.prefix), rank(e)))
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
                    f"cannot load component group {group.name!r} from {group.source}: {one_line(e)}"
                ) from e
            # a prefix-less group: report it (as list_components does) and try the others
            self._add_failure(
                group, f"component module {module_name!r} failed to import: {one_line(e)}"
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
                group, f"component module {module_name!r} failed to import: {one_line(e)}"
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
