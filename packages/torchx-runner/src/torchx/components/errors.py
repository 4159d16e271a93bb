"""Errors raised while finding a component and turning its command line into an AppDef.

Each is a :class:`~torchx.specs.errors.SpecError` (so a ``ValueError``) with a
one-line message saying what is wrong and what would be right; the CLI prints it
as is. This module imports nothing heavy: components raise these errors too.

* :class:`ComponentNotFoundError`: no component of that name, file or function.
* :class:`ComponentLoadError`: the component's file or module fails to load, or
  the object named is not a component.
* :class:`ComponentArgError`: the user's arguments for a component are wrong
  (a bad ``-j``, a missing required option, both ``--script`` and ``-m``...);
  :attr:`~ComponentArgError.usage` holds the component's usage line.
* :class:`ComponentHelpRequested`: not an error: ``--help`` was passed, and the
  exception carries the help text for the caller to print.
"""

from __future__ import annotations

from torchx.specs.errors import SpecError


class ComponentError(SpecError):
    """Base class of the errors of :mod:`torchx.components`."""


class ComponentNotFoundError(ComponentError):
    """No component answers to the name (built-in, plugin, ``file.py:fn`` or ``module:fn``)."""


class ComponentLoadError(ComponentError):
    """A component's file or module fails to import, or the object is not a component."""


class ComponentArgError(ComponentError):
    """The arguments given to a component are wrong.

    ``str(error)`` is one line; :attr:`usage` is the component's usage text
    (``""`` when the error was raised outside a parser, for instance by a
    component function called directly from Python).

    >>> err = ComponentArgError("dist.ddp: argument -j: bad value", usage="usage: dist.ddp ...")
    >>> str(err), err.usage
    ('dist.ddp: argument -j: bad value', 'usage: dist.ddp ...')
    """

    def __init__(self, message: str, usage: str = "") -> None:
        super().__init__(message)
        self.usage = usage


class ComponentHelpRequested(Exception):
    """``--help`` was among a component's arguments; :attr:`help` is the text to print.

    Raised instead of printing and exiting, so that library callers keep control
    (the CLI prints :attr:`help` and exits 0).
    """

    def __init__(self, help: str) -> None:
        super().__init__(help)
        self.help = help
