"""The shape of a ``torchx`` subcommand, for type checkers: :class:`Command`.

A plugin contributes subcommands through the ``torchx_cli_commands`` hook
(:mod:`torchx.specs.hookspecs`): each is an object (or a class the CLI instantiates
with no arguments) with a one-line ``help``, ``add_arguments(parser)`` and
``run(args) -> int``. Nothing inherits from :class:`Command`: it is a
:class:`~typing.Protocol` that a type checker matches against the object. Import it
only for typing, so that it costs nothing when ``torchx`` runs::

    from typing import TYPE_CHECKING

    if TYPE_CHECKING:
        from torchx.cli.command import Command

    class SizesCommand:
        help = "list the instance sizes"
        def add_arguments(self, parser: argparse.ArgumentParser) -> None: ...
        def run(self, args: argparse.Namespace) -> int: ...

    _check: Command = SizesCommand()  # inside `if TYPE_CHECKING:` too

``run`` returns the exit status (see :mod:`torchx.cli.errors`); a user mistake is
raised as ``CliError``/``SpecError`` with a one-line message. An optional
``description`` attribute is the longer text of the subcommand's ``--help``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    import argparse

__all__ = ["Command"]


class Command(Protocol):
    """A ``torchx`` subcommand: what the ``torchx_cli_commands`` hook's references name."""

    #: One line, shown in ``torchx --help``.
    help: str

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        """Adds the subcommand's options and positionals to its own parser."""

    def run(self, args: argparse.Namespace) -> int:
        """Runs the subcommand with the parsed ``args``; returns the exit status."""
