"""torchx-runner's own plugin: the local scheduler and the built-in components.

Registered through the ``torchx`` entry-point group like any third-party plugin,
so built-ins and plugins are found, listed and overridden the same way. Only names
and lazy ``module:attr`` references live here; nothing is imported until used.
"""

from __future__ import annotations

from collections.abc import Mapping

from torchx.specs.hookspecs import hookimpl

_LOCAL = "torchx.schedulers.local_scheduler:create_scheduler"


@hookimpl
def torchx_schedulers() -> Mapping[str, str]:
    """``local`` (and upstream's name for it, ``local_cwd``): apps as local processes."""
    return {"local": _LOCAL, "local_cwd": _LOCAL}


@hookimpl
def torchx_components() -> Mapping[str, str]:
    """The built-in component groups: ``dist.*``, ``utils.*``, ``metrics.*``, ``serve.*``."""
    return {
        "dist": "torchx.components.dist",
        "utils": "torchx.components.utils",
        "metrics": "torchx.components.metrics",
        "serve": "torchx.components.serve",
    }
