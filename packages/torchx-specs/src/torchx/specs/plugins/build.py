"""Building a :class:`~torchx.specs.plugins.registry.Registry` from plugins: the pluggy glue.

``build()`` registers each plugin module (from the ``torchx`` entry-point group, or
in-process) with a pluggy manager specialised to torchx's hooks, calls every hook,
checks each answer (a mapping of well-formed names to lazy references) and turns it
into entries; legacy entry points become entries directly. Whatever is wrong becomes
a ``Failure`` naming the plugin, never an exception: a broken plugin is reported, the
rest works. pluggy is imported only here, on the first registry build.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from types import FunctionType, ModuleType
from typing import TYPE_CHECKING, Any, Final, NamedTuple

from torchx.specs import hookspecs
from torchx.specs.errors import did_you_mean
from torchx.specs.hookspecs import HOOKS
from torchx.specs.plugins.entries import (
    ENTRY_POINT_GROUP,
    IN_PROCESS,
    LEGACY_GROUPS,
    Entry,
    InvalidPluginReference,
    Kind,
    PluginError,
    Record,
    canonical,
    load_ref,
    one_line,
    parse_ref,
)
from torchx.specs.plugins.registry import Registry

if TYPE_CHECKING:
    import pluggy

    from torchx.specs._plugin_reports import Failure

_HOOK_KIND: Final[Mapping[str, Kind]] = {name: hook.kind for name, hook in HOOKS.items()}


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


def _legacy_entry(record: Record) -> tuple[Entry | None, Failure | None]:
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
        failures.append(origin.failure(f"cannot register plugin: {one_line(e)}"))
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


def build(records: Sequence[Record], builtins: Sequence[tuple[str, object]]) -> Registry:
    pm = _plugin_manager()
    failures: list[Failure] = []
    candidates: list[Entry] = []
    origins: dict[str, _Origin] = {}

    for label, plugin in builtins:
        origin = _Origin(None, None, IN_PROCESS, label)
        name = _register(pm, plugin, origin, failures)
        if name is not None:
            origins[name] = origin

    for record in sorted(records, key=lambda r: (canonical(r.distribution), r)):
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
                failures.append(origin.failure(f"{hook}() raised {one_line(e)}"))
                continue
            entries, problem = _entries_from_hook(result, kind, origin, hook)
            if problem is not None:
                failures.append(origin.failure(problem))
            candidates.extend(entries)

    failures.sort(key=lambda f: (canonical(f.distribution or ""), f.group, f.entry_point))
    return Registry(candidates, failures, records)
