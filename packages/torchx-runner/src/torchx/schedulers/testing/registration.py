"""Checks of how a plugin is found and what it costs to import, for its own tests.

Every scheduler plugin proves the same things (docs/plugins.md): its ``torchx`` entry
point names its plugin module, that module names its schedulers as lazy references,
the registry creates each scheduler by name, and importing the plugin module (which
``torchx`` does for every command) imports nothing heavy. :class:`PluginRegistration`
holds those tests; a plugin's ``tests/test_plugin.py`` declares what to expect::

    class TestRegistration(PluginRegistration):
        name = "acme"                                  # the entry point
        plugin_module = "acme_torchx.plugin"
        schedulers = {"acme": "acme_torchx.scheduler:create_scheduler"}
        scheduler_classes = {"acme": AcmeScheduler}
        heavy = ("acme_sdk",)                           # never loaded by the plugin module

The helpers answer in a fresh interpreter, so a test sees what a user's ``torchx``
process loads, not what the test session has already imported::

    def test_a_dry_run_imports_no_sdk():
        loaded = modules_after("from acme_torchx.scheduler import create_scheduler")
        assert "acme_sdk" not in loaded
"""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from collections.abc import Mapping, Sequence
from importlib.metadata import entry_points
from typing import ClassVar

__all__ = ["PluginRegistration", "entry_point", "modules_after"]


def entry_point(name: str, group: str = "torchx") -> str:
    """The value (``module`` or ``module:attr``) of the one entry point ``name`` of ``group``."""
    found = [ep for ep in entry_points(group=group) if ep.name == name]
    assert len(found) == 1, f"{len(found)} entry points {name!r} in group {group!r}: {found}"
    return found[0].value


def modules_after(code: str, timeout: float = 60) -> list[str]:
    """The sorted names in ``sys.modules`` of a fresh interpreter after it ran ``code``.

    >>> loaded = modules_after("import json")
    >>> "json" in loaded, "csv" in loaded
    (True, False)
    """
    # sys is always loaded: printing through it adds no module to the answer
    child = f"{code}\nimport sys as _s\nprint(sorted(_s.modules))"
    proc = subprocess.run(
        [sys.executable, "-c", child], capture_output=True, text=True, timeout=timeout
    )
    assert proc.returncode == 0, f"the code failed (exit {proc.returncode}):\n{proc.stderr}"
    names = ast.literal_eval(proc.stdout.splitlines()[-1])
    return [str(n) for n in names]


def _within(module: str, packages: Sequence[str]) -> bool:
    return any(module == p or module.startswith(p + ".") for p in packages)


class PluginRegistration:
    """How a scheduler plugin is found and what importing it costs; subclass as ``Test*``.

    Set ``name``, ``plugin_module`` and ``schedulers``; ``scheduler_classes`` and
    ``heavy`` say more where the plugin has them.
    """

    #: The name of the plugin's entry point in the ``torchx`` group.
    name: ClassVar[str]
    #: The plugin module that entry point names (``"acme_torchx.plugin"``).
    plugin_module: ClassVar[str]
    #: Exactly what the plugin module's ``torchx_schedulers()`` returns: scheduler name
    #: -> lazy ``"module:factory"`` reference into the plugin's own package.
    schedulers: ClassVar[Mapping[str, str]]
    #: The class the registry's factory must create, by scheduler name (every one is a
    #: ``Scheduler`` of the plugin's package in any case).
    scheduler_classes: ClassVar[Mapping[str, type]] = {}
    #: Packages or modules that importing the plugin module must not load (its SDK).
    heavy: ClassVar[Sequence[str]] = ()
    #: The plugin's own modules importing the plugin module loads; None: the package,
    #: its ``_version`` and the plugin module.
    plugin_imports: ClassVar[Sequence[str] | None] = None

    @property
    def _package(self) -> str:
        return self.plugin_module.split(".")[0]

    def test_the_entry_point_names_the_plugin_module(self) -> None:
        assert entry_point(self.name) == self.plugin_module

    def test_every_scheduler_is_a_lazy_reference_into_the_plugin(self) -> None:
        refs = importlib.import_module(self.plugin_module).torchx_schedulers()
        assert dict(refs) == dict(self.schedulers)
        for ref in refs.values():
            module, _, factory = ref.partition(":")
            assert _within(module, [self._package]) and factory, ref

    def test_the_registry_creates_each_scheduler(self) -> None:
        from torchx.schedulers.contract.api import Scheduler
        from torchx.specs.plugins import get_registry

        registry = get_registry()
        for name in self.schedulers:
            sched = registry.scheduler_factory(name)("sess")
            assert isinstance(sched, self.scheduler_classes.get(name, Scheduler)), (name, sched)
            assert isinstance(sched, Scheduler) and sched.session_name == "sess", sched
            assert _within(type(sched).__module__, [self._package]), type(sched)

    def test_the_plugin_module_imports_nothing_heavy(self) -> None:
        loaded = modules_after(f"import {self.plugin_module} as p\np.torchx_schedulers()")
        own = self.plugin_imports
        if own is None:
            own = [self._package, f"{self._package}._version", self.plugin_module]
        assert [m for m in loaded if _within(m, [self._package])] == sorted(own)
        assert not [m for m in loaded if _within(m, self.heavy)]
