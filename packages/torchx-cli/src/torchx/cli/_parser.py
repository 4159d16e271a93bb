"""Building the ``torchx`` argument parser from the installed commands.

Split from :mod:`torchx.cli.main` so that the paths that need no parser (``--version``,
a cached ``--help``) never import argparse. A command is loaded (its module imported)
only when it is the one being run, or when the full help is shown.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from torchx.cli.errors import EXIT_USAGE

if TYPE_CHECKING:
    from torchx.cli.command import Command

# argparse passes each of its messages through gettext, which looks for translation
# catalogs on disk for every string (about 5 ms per torchx command); none exist for
# argparse, so skip the lookups.
# (identity, not str: argparse passes None through it too, which str would make "None")
argparse._ = lambda message: message  # type: ignore[attr-defined]
argparse.ngettext = lambda singular, plural, n: singular if n == 1 else plural  # type: ignore[attr-defined]

DESCRIPTION = "Launch and follow distributed PyTorch (and any other) apps on any scheduler."

EPILOG = """\
examples:
  torchx run utils.echo --msg hello               run a component on the local scheduler
  torchx run --log dist.ddp -j 1x2 --script train.py
  torchx status local://torchx/echo-k3x9q2m7bw    follow an app from any later shell
  torchx log -t local://torchx/echo-k3x9q2m7bw    stream its logs
  torchx builtins                                 list the components you can run
  torchx runopts local                            the options of a scheduler

exit status: 0 success (a waited-on app SUCCEEDED), 1 the app did not succeed or
the scheduler refused, 2 usage or input error, 3 unexpected error of a plugin (or
torchx), 4 the scheduler could not be reached: the app's state is unknown (not
failed), 130 interrupted (the app keeps running).
Set TORCHX_DEBUG=1 (or --log_level DEBUG) to see tracebacks."""


class Parser(argparse.ArgumentParser):
    """argparse, but usage errors name the subcommand and point at its --help."""

    def error(self, message: str) -> Any:
        import re

        bad = re.search(r"invalid choice: '([^']*)' \(choose from (.*)\)", message)
        if bad:
            from torchx.specs.errors import did_you_mean

            choices = re.findall(r"'([^']*)'", bad.group(2))
            message = (
                f"unknown {'command' if 'COMMAND' in message else 'choice'} '{bad.group(1)}'"
                f"{did_you_mean(bad.group(1), choices)}; choose from {', '.join(choices)}"
            )
        self.print_usage(sys.stderr)
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def refuse_unknown(parser: argparse.ArgumentParser, extras: list[str]) -> None:
    """Exits 2 for arguments ``parser`` (a subcommand's, when one was named) does not know.

    Its own usage is printed, not the top-level one, and an option that looks like one
    of its own gets a "did you mean" (``--dry-run`` for ``--dryrun``).
    """
    from torchx.specs.errors import did_you_mean

    known = [o for action in parser._actions for o in action.option_strings]
    hint = ""
    for extra in extras:
        if extra.startswith("-"):
            hint = did_you_mean(extra.split("=", 1)[0], known)
            if hint:
                break
    parser.error(f"unrecognized arguments: {' '.join(extras)}{hint}")


def add_color_argument(parser: argparse.ArgumentParser) -> None:
    """``--color auto|always|never`` on a command's parser (``NO_COLOR`` is honoured by auto).

    Here, where the parser is built, so that adding it imports nothing more.
    """
    parser.add_argument(
        "--color",
        choices=["auto", "always", "never"],
        default="auto",
        help="color the replica prefixes: auto (a terminal, unless NO_COLOR is set), always, never",
    )


def command_names() -> list[str]:
    """Names of every installed command (nothing imported but the plugin modules)."""
    from torchx.specs.plugins import get_registry

    return sorted(get_registry().cli_commands)


def version() -> str:
    """torchx-cli's version."""
    from torchx.cli._version import __version__

    return __version__


def load_commands(debug: bool, only: Iterable[str] | None = None) -> dict[str, Command]:
    """Installed command objects by name (all, or ``only`` those); broken ones are skipped.

    A command that fails to load is reported on stderr with its distribution and
    skipped: a broken plugin never stops the other commands from working.
    """
    from torchx.specs.plugins import get_registry

    registry = get_registry()
    wanted = sorted(registry.cli_commands) if only is None else sorted(only)
    commands: dict[str, Command] = {}
    for name in wanted:
        if name not in registry.cli_commands:
            continue
        try:
            cmd = registry.cli_command(name)
            if isinstance(cmd, type):
                cmd = cmd()
            for attr in ("help", "add_arguments", "run"):
                if not hasattr(cmd, attr):
                    raise TypeError(f"command object has no {attr!r}")
        except Exception as e:  # a broken plugin must not break the other commands
            entry = registry.cli_commands[name]
            if debug:
                import traceback

                traceback.print_exc()
            print(
                f"torchx: note: command '{name}' from {entry.distribution} could not be "
                f"loaded ({type(e).__name__}: {e}); see 'torchx plugins'",
                file=sys.stderr,
            )
            continue
        commands[name] = cmd
    return commands


def build_parser(
    commands: dict[str, Command], other_names: Iterable[str] = ()
) -> argparse.ArgumentParser:
    """The parser: one subcommand per loaded command, plus bare ``other_names``.

    ``other_names`` (commands not loaded for this run) are still valid choices, so an
    unknown command gets the full list and a "did you mean", but they have no options.
    """
    # imported here: `torchx --help` answers from its cache without building a parser
    from torchx.specs.help_formatter import HelpFormatter

    parser = Parser(
        prog="torchx",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=HelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"torchx {version()}")
    parser.add_argument(
        "--log_level",
        default=None,
        choices=["DEBUG", "INFO", "WARNING", "ERROR"],
        type=str.upper,
        help="log level (DEBUG also shows tracebacks)",
    )
    sub = parser.add_subparsers(
        dest="command",
        metavar="COMMAND",
        title="commands",
        help="one of these ('torchx COMMAND --help' shows its options)",
    )
    names = sorted({*commands, *other_names})
    for name in names:
        cmd = commands.get(name)
        if cmd is None:
            sub.add_parser(name, formatter_class=HelpFormatter)
            continue
        sp = sub.add_parser(
            name,
            help=cmd.help,
            description=getattr(cmd, "description", None) or cmd.help,
            formatter_class=HelpFormatter,
        )
        cmd.add_arguments(sp)
        sp.set_defaults(_torchx_command=cmd, _torchx_parser=sp)
    return parser
