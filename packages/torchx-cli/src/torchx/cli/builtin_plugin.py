"""torchx-cli's own commands, registered through the same hook as any plugin's."""

from __future__ import annotations

from collections.abc import Mapping

from torchx.specs.hookspecs import hookimpl

_COMMANDS = {
    "run": "torchx.cli.cmd_run:RunCommand",
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
