"""The ``torchx`` entry point: a parser assembled from the installed plugins' commands.

Every subcommand, the built-in ones included, comes from the ``torchx_cli_commands``
plugin hook (torchx-cli registers its own through :mod:`torchx.cli.builtin_plugin`),
so installing a plugin adds commands with no change here. A command is an object
with a one-line ``help``, ``add_arguments(parser)`` and ``run(args) -> int``.

Errors a user can fix (bad arguments, an unknown scheduler, a bad handle, ...)
are printed as one line and exit 2 (a scheduler that refuses a request or cannot be
reached: exit 1), without a traceback, unless debugging is on (``--log_level DEBUG``
or ``TORCHX_DEBUG=1``). A waited-on app that did not succeed exits 1. A command plugin that fails to load
is skipped with a note, and never stops the other commands from working.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from typing import Any

#: Exit status for usage and input errors, as argparse uses.
EXIT_USAGE = 2
#: Exit status when a waited-on app did not succeed.
EXIT_APP_FAILED = 1

_EPILOG = """\
examples:
  torchx run utils.echo --msg hello            run a component on the local scheduler
  torchx run --log dist.ddp -j 1x2 --script train.py
  torchx status local://torchx/echo-abc123     follow an app from any later shell
  torchx log -t local://torchx/echo-abc123     stream its logs
  torchx builtins                              list the components you can run
  torchx runopts local                         the options of a scheduler

Set TORCHX_DEBUG=1 to see tracebacks."""


class CliError(Exception):
    """A user error the CLI reports as one line (exit 2)."""


class _Parser(argparse.ArgumentParser):
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


def _debug_requested(argv: Sequence[str]) -> bool:
    if os.environ.get("TORCHX_DEBUG", "").lower() in ("1", "true", "yes", "on"):
        return True
    for i, arg in enumerate(argv):
        if arg.startswith("--log_level=") and arg.split("=", 1)[1].upper() == "DEBUG":
            return True
        if arg == "--log_level" and i + 1 < len(argv) and argv[i + 1].upper() == "DEBUG":
            return True
    return False


def _version() -> str:
    from torchx.cli._version import __version__

    return __version__


def _load_commands(debug: bool) -> dict[str, Any]:
    """Every installed command object by name; broken ones are reported and skipped."""
    from torchx.specs.plugins import get_registry

    registry = get_registry()
    commands: dict[str, Any] = {}
    for name in sorted(registry.cli_commands):
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


def build_parser(commands: dict[str, Any]) -> argparse.ArgumentParser:
    parser = _Parser(
        prog="torchx",
        description="Launch and follow distributed PyTorch (and any other) apps on any scheduler.",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"torchx {_version()}")
    parser.add_argument(
        "--log_level",
        default=None,
        choices=["DEBUG", "INFO", "WARNING", "ERROR"],
        type=str.upper,
        help="log level (DEBUG also shows tracebacks)",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", title="commands")
    for name, cmd in commands.items():
        sp = sub.add_parser(
            name,
            help=cmd.help,
            description=getattr(cmd, "description", None) or cmd.help,
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        cmd.add_arguments(sp)
        sp.set_defaults(_torchx_command=cmd)
    return parser


def _user_error_types() -> tuple[type[BaseException], ...]:
    from torchx.specs.errors import SpecError

    return (SpecError, CliError, OSError, ValueError, KeyError)


def _is_scheduler_error(e: BaseException) -> bool:
    """A backend failure (submit refused, scheduler unreachable): exit 1, not a usage error."""
    return any(c.__name__ == "SchedulerError" for c in type(e).__mro__)


def _report(command: str, e: BaseException) -> int:
    """Prints a user error as one line (plus the component's usage, when there is one)."""
    usage = getattr(e, "usage", "")
    if usage:
        print(usage.rstrip(), file=sys.stderr)
    message = str(e.args[0]) if isinstance(e, KeyError) and e.args else str(e)
    if isinstance(e, OSError) and e.strerror and e.filename:
        message = f"{e.filename}: {e.strerror}"
    print(f"torchx {command}: error: {message}", file=sys.stderr)
    return EXIT_APP_FAILED if _is_scheduler_error(e) else EXIT_USAGE


def _put_own_bin_on_path() -> None:
    """Puts the directory of this interpreter's scripts first on PATH, if it is not on it.

    ``torchx`` run from a venv that is not activated (``.venv/bin/torchx run dist.ddp ...``)
    then starts the venv's ``torchrun`` and ``python`` for local apps, which are the ones
    that have the user's packages, instead of failing with "torchrun: command not found".
    """
    bin_dir = os.path.dirname(sys.executable)
    path = os.environ.get("PATH", "")
    if bin_dir and bin_dir not in path.split(os.pathsep):
        os.environ["PATH"] = bin_dir + (os.pathsep + path if path else "")


def main(argv: Sequence[str] | None = None) -> int:
    """Runs ``torchx`` with ``argv`` (default: the process's arguments) and returns the exit status."""
    args_list = list(sys.argv[1:] if argv is None else argv)
    _put_own_bin_on_path()
    debug = _debug_requested(args_list)
    commands = _load_commands(debug)
    parser = build_parser(commands)
    try:
        args = parser.parse_args(args_list)
    except SystemExit as e:
        return int(e.code or 0) if not isinstance(e.code, str) else EXIT_USAGE
    if args.log_level or debug:
        import logging

        logging.basicConfig(
            level=args.log_level or "DEBUG", format="%(levelname)s %(name)s: %(message)s"
        )
    cmd = getattr(args, "_torchx_command", None)
    if cmd is None:
        parser.print_help()
        return EXIT_USAGE
    try:
        return int(cmd.run(args) or 0)
    except KeyboardInterrupt:
        print("torchx: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    except Exception as e:
        if debug or not (isinstance(e, _user_error_types()) or _is_scheduler_error(e)):
            raise
        return _report(args.command, e)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
