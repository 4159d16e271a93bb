"""Exceptions raised by ``torchx.specs``.

Every parser in this package raises a specific subclass of :class:`SpecError`
(itself a :class:`ValueError`), so callers can catch bad user input with one
``except ValueError`` and still tell the kinds apart. Messages are one line:
what is wrong, where, and what would be right. The CLI prints them as they are.
"""

from __future__ import annotations

from collections.abc import Iterable


class SpecError(ValueError):
    """Base class of every bad-input error raised by ``torchx.specs``."""


class InvalidRunConfigException(SpecError):
    """A run config (cfg) does not match the scheduler's runopts.

    Raised for a missing required option, a value of the wrong type, a value
    that cannot be cast from its string form, or (strict parsing) an unknown key.
    """


class MalformedAppHandleException(SpecError):
    """An app handle is not of the form ``{scheduler}://{session_name}/{app_id}``."""


class InvalidMountException(SpecError, KeyError):
    """A mount option string passed to :func:`torchx.specs.parse_mounts` is malformed.

    Also a :class:`KeyError`, which upstream TorchX raised for a bad mount option.
    """

    def __str__(self) -> str:  # KeyError would repr() the message
        return str(self.args[0]) if self.args else ""


class InvalidWorkspaceException(SpecError):
    """A workspace string passed to :meth:`torchx.specs.Workspace.from_str` is malformed."""


class InvalidResourceException(SpecError):
    """A resource (raw or named) is malformed, for instance an unknown named resource."""


class UnknownNamedResourceException(InvalidResourceException, KeyError):
    """No named resource is registered under the requested name.

    Also a :class:`KeyError` so that ``named_resources[name]`` behaves like a mapping.
    """

    def __str__(self) -> str:  # KeyError would repr() the message; keep it one readable line
        return str(self.args[0]) if self.args else ""


class UnknownSchedulerError(SpecError, KeyError):
    """No installed scheduler has this name; the message lists the installed ones.

    Also a :class:`KeyError` (upstream raised one for an undefined backend), and
    importable under upstream's name :data:`UnknownSchedulerException`.
    """

    def __str__(self) -> str:  # KeyError would repr() the message
        return str(self.args[0]) if self.args else ""


class UnknownAppError(SpecError):
    """The scheduler does not know the app of this handle (never submitted, or deleted).

    Importable under upstream's name :data:`UnknownAppException` too.
    """


#: Upstream TorchX's names for the same classes: ``except UnknownAppException`` catches
#: what the Runner raises.
UnknownSchedulerException = UnknownSchedulerError
UnknownAppException = UnknownAppError


class ComponentError(SpecError):
    """Base class of the errors of components: finding one, parsing its arguments.

    Raised by :mod:`torchx.specs.builders` and :mod:`torchx.components` (whose
    ``torchx.components.errors`` holds the same classes).
    """


class ComponentNotFoundError(ComponentError):
    """No component answers to the name (built-in, plugin, ``file.py:fn`` or ``module:fn``)."""


class ComponentLoadError(ComponentError):
    """A component's file or module fails to import, or the object is not a component."""


class ComponentRaisedError(ComponentError):
    """The component function itself raised (a bug in the component, not in torchx).

    The message names the component, the exception and where it was raised
    (``component ./comp.py:fn raised RuntimeError: boom (comp.py:12)``); the original
    exception is its ``__cause__``.
    """


class ComponentArgError(ComponentError):
    """The arguments given to a component are wrong.

    ``str(error)`` is one line; ``usage`` is the component's usage text
    (``""`` when the error was raised outside a parser, for instance by a
    component function called directly from Python).

    >>> err = ComponentArgError("dist.ddp: argument -j: bad value", usage="usage: dist.ddp ...")
    >>> str(err), err.usage
    ('dist.ddp: argument -j: bad value', 'usage: dist.ddp ...')
    """

    def __init__(self, message: str, usage: str = "") -> None:
        super().__init__(message)
        self.usage = usage


class ComponentDefaultError(ComponentArgError):
    """A default given for a component (``[component:NAME]`` of ``.torchxconfig``) is wrong.

    ``key`` is the parameter name as the default gave it, so that the caller that
    read the defaults can say where it was set.
    """

    def __init__(self, message: str, key: str, usage: str = "") -> None:
        super().__init__(message, usage=usage)
        self.key = key


class ComponentHelpRequested(Exception):
    """``--help`` was among a component's arguments; :attr:`help` is the text to print.

    Raised instead of printing and exiting, so that library callers keep control
    (the CLI prints :attr:`help` and exits 0).
    """

    def __init__(self, help: str) -> None:
        super().__init__(help)
        self.help = help


class AppStatusError(Exception):
    """Raised by :meth:`torchx.specs.AppStatus.raise_for_status` for an app that did not succeed."""

    def __init__(self, app_status: object, *args: object) -> None:
        super().__init__(app_status, *args)
        self.app_status = app_status

    def __str__(self) -> str:
        return f"app did not succeed: {self.app_status}"


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """Return ``" (did you mean 'x'?)"`` for the nearest choice, or ``""`` when none is near.

    Near is a close spelling, or else the one choice that begins with ``word`` (at least
    three letters of it): ``grace`` for ``grace_period``.
    """
    import difflib  # deferred: only needed on the error path

    options = list(choices)
    close = difflib.get_close_matches(word, options, n=1, cutoff=0.6)
    if not close and len(word) >= 3:
        close = [c for c in options if c.startswith(word)]
        close = close if len(close) == 1 else []
    return f" (did you mean '{close[0]}'?)" if close else ""
