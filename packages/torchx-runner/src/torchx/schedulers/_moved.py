"""The modules' earlier names, from when ``torchx.schedulers`` was one flat folder.

``torchx.schedulers.api``, ``.errors``, ``.ids``, ``.local_scheduler``, ... (upstream
TorchX's names, and this project's before the modules were grouped into
:mod:`~torchx.schedulers.contract`, :mod:`~torchx.schedulers.helpers` and
:mod:`~torchx.schedulers.local`) still import, for code written against them: each
gives the very module of its new home, not a copy, so every name (private ones too)
and ``mock.patch("torchx.schedulers.api.<name>")`` reach the code that runs:

>>> import torchx.schedulers.api, torchx.schedulers.contract.api
>>> torchx.schedulers.api is torchx.schedulers.contract.api
True

Type checkers read the stub beside each name (``api.pyi``: its new home's names), so
``from torchx.schedulers.api import Scheduler`` checks under ``mypy --strict`` as before.
The package's finder (in ``torchx/schedulers/__init__.py``) calls :func:`find_spec`
for a name of the package that no file answers; new code imports the new homes.
"""

from __future__ import annotations

from importlib import import_module
from importlib.abc import Loader
from importlib.machinery import ModuleSpec
from types import ModuleType

__all__ = ["MOVED", "find_spec"]

#: Each earlier name (the part after ``torchx.schedulers.``) and the module's home now.
MOVED = {
    "api": "contract.api",
    "errors": "contract.errors",
    "capabilities": "contract.capabilities",
    "states": "contract.states",
    **{
        name: f"helpers.{name}"
        for name in (
            "appstore", "clients", "commands", "files", "follow", "ids", "labels", "merge",
            "paged", "polling", "privatedir", "quick", "replica_errors", "retry",
            "scriptroles", "window",
        )
    },
    "local_scheduler": "local.scheduler",
    "local_view": "local.view",
    "local_warmup": "local.warmup",
}  # fmt: skip

_PACKAGE = __name__.rpartition(".")[0]


class _Alias(Loader):
    """Loads an earlier name as its new home's module (imported under the new name)."""

    def create_module(self, spec: ModuleSpec) -> ModuleType:
        return import_module(f"{_PACKAGE}.{MOVED[spec.name.rpartition('.')[2]]}")

    def exec_module(self, module: ModuleType) -> None:
        """Nothing to run: the module ran under its new name."""


_ALIAS = _Alias()


def find_spec(fullname: str) -> ModuleSpec | None:
    """The spec that loads ``fullname`` (an earlier name) as its new home; None if not one."""
    package, _, name = fullname.rpartition(".")
    if package != _PACKAGE or name not in MOVED:
        return None
    return ModuleSpec(fullname, _ALIAS)
