"""torchx-ui's plugin module: the ``ui`` subcommand, by lazy reference.

The ``torchx`` command imports this module on every start, so it imports only the
``hookimpl`` marker; the command's module is imported when ``ui`` is used or its help
shown, and the server library only when it runs.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from torchx.specs.hookspecs import hookimpl

if TYPE_CHECKING:  # the type checker proves the command has the Command shape
    from torchx.cli.command import Command
    from torchx.ui.command import UiCommand

    _SHAPE: Command = UiCommand()


@hookimpl
def torchx_cli_commands() -> Mapping[str, str]:
    """``torchx ui``."""
    return {"ui": "torchx.ui.command:UiCommand"}
