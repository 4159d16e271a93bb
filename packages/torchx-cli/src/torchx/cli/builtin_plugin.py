"""torchx-cli's own commands, registered through the same hook as any plugin's."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from torchx.specs.hookspecs import hookimpl

if TYPE_CHECKING:  # the type checker proves each built-in command has the Command shape
    from torchx.cli import cmd_completion, cmd_follow, cmd_info, cmd_log, cmd_run, cmd_sweep
    from torchx.cli.command import Command

    _SHAPES: list[Command] = [
        cmd_run.RunCommand(),
        cmd_sweep.SweepCommand(),
        cmd_follow.StatusCommand(),
        cmd_follow.DescribeCommand(),
        cmd_follow.ListCommand(),
        cmd_follow.CancelCommand(),
        cmd_follow.DeleteCommand(),
        cmd_log.LogCommand(),
        cmd_info.RunoptsCommand(),
        cmd_info.BuiltinsCommand(),
        cmd_info.PluginsCommand(),
        cmd_info.ConfigureCommand(),
        cmd_completion.CompletionCommand(),
    ]

_COMMANDS = {
    "run": "torchx.cli.cmd_run:RunCommand",
    "sweep": "torchx.cli.cmd_sweep:SweepCommand",
    "status": "torchx.cli.cmd_follow:StatusCommand",
    "describe": "torchx.cli.cmd_follow:DescribeCommand",
    "list": "torchx.cli.cmd_follow:ListCommand",
    "cancel": "torchx.cli.cmd_follow:CancelCommand",
    "delete": "torchx.cli.cmd_follow:DeleteCommand",
    "log": "torchx.cli.cmd_log:LogCommand",
    "runopts": "torchx.cli.cmd_info:RunoptsCommand",
    "builtins": "torchx.cli.cmd_info:BuiltinsCommand",
    "plugins": "torchx.cli.cmd_info:PluginsCommand",
    "configure": "torchx.cli.cmd_info:ConfigureCommand",
    "completion": "torchx.cli.cmd_completion:CompletionCommand",
}


@hookimpl
def torchx_cli_commands() -> Mapping[str, str]:
    """The built-in ``torchx`` subcommands."""
    return dict(_COMMANDS)
