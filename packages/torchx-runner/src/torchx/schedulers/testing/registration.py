"""Checks of how a plugin is found and what it costs to import, for its own tests.

Every scheduler plugin proves the same three things (docs/plugins.md): its ``torchx``
entry point names its plugin module, the registry creates its scheduler by name, and
importing the plugin module (which ``torchx`` does for every command) or following an
app imports nothing heavy. These helpers answer those questions in a fresh interpreter,
so the test sees what a user's ``torchx`` process loads, not what the test session has
already imported::

    def test_the_entry_point_names_the_plugin_module():
        assert entry_point("acme") == "acme_torchx.plugin"

    def test_the_plugin_module_imports_nothing_heavy():
        loaded = modules_after("import acme_torchx.plugin as p; p.torchx_schedulers()")
        assert [m for m in loaded if m.startswith("acme_torchx")] == [
            "acme_torchx", "acme_torchx._version", "acme_torchx.plugin"]
"""

from __future__ import annotations

import ast
import subprocess
import sys
from importlib.metadata import entry_points

__all__ = ["entry_point", "modules_after"]


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
