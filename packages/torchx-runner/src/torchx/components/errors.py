"""Errors raised while finding a component and turning its command line into an AppDef.

Each is a :class:`~torchx.specs.errors.SpecError` (so a ``ValueError``) with a
one-line message saying what is wrong and what would be right; the CLI prints it
as is. The classes live in :mod:`torchx.specs.errors` (the argument parser,
:mod:`torchx.specs.builders`, raises them); this module is their home for
component authors. It imports nothing heavy: components raise these errors too.

* :class:`ComponentNotFoundError`: no component of that name, file or function.
* :class:`ComponentLoadError`: the component's file or module fails to load, or
  the object named is not a component.
* :class:`ComponentRaisedError`: the component function itself raised (a bug in the
  component, not in torchx); the original exception is its ``__cause__``.
* :class:`ComponentArgError`: the user's arguments for a component are wrong
  (a bad ``-j``, a missing required option, both ``--script`` and ``-m``...);
  :attr:`~ComponentArgError.usage` holds the component's usage line.
  :class:`ComponentDefaultError` is one about a default from ``.torchxconfig``.
* :class:`ComponentHelpRequested`: not an error: ``--help`` was passed, and the
  exception carries the help text for the caller to print.
"""

from __future__ import annotations

from torchx.specs.errors import (
    ComponentArgError,
    ComponentDefaultError,
    ComponentError,
    ComponentHelpRequested,
    ComponentLoadError,
    ComponentNotFoundError,
    ComponentRaisedError,
)

__all__ = [
    "ComponentArgError",
    "ComponentDefaultError",
    "ComponentError",
    "ComponentHelpRequested",
    "ComponentLoadError",
    "ComponentNotFoundError",
    "ComponentRaisedError",
]
