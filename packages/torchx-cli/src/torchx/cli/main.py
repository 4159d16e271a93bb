"""The ``torchx`` entry point: a parser assembled from the installed plugins' commands.

Every subcommand, the built-in ones included, comes from the ``torchx_cli_commands``
plugin hook (torchx-cli registers its own through :mod:`torchx.cli.builtin_plugin`),
so installing a plugin adds commands with no change here. A command is an object
with a one-line ``help``, ``add_arguments(parser)`` and ``run(args) -> int``.

Speed: only the command being run is imported and given a parser
(:mod:`torchx.cli._parser`); ``--version`` and ``--help`` (cached by
:mod:`torchx.cli._help_cache`) import neither argparse nor the plugin registry.

Errors a user can fix (bad arguments, an unknown scheduler, a bad handle, ...)
are printed as one line and exit 2 (a scheduler that refuses a request or cannot be
reached: exit 1), without a traceback, unless debugging is on (``--log_level DEBUG``
or ``TORCHX_DEBUG=1``). A waited-on app that did not succeed exits 1. A command
plugin that fails to load is skipped with a note, and never stops the other commands
from working.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs milliseconds to import; --version and --help skip it
    import argparse
    from collections.abc import Sequence
    from typing import Any

#: Exit status for usage and input errors, as argparse uses.
EXIT_USAGE = 2
#: Exit status when a waited-on app did not succeed.
EXIT_APP_FAILED = 1

_HELP_FLAGS = ("-h", "--help")


class CliError(Exception):
    """A user error the CLI reports as one line (exit 2)."""


def _debug_requested(argv: Sequence[str]) -> bool:
    if os.environ.get("TORCHX_DEBUG", "").lower() in ("1", "true", "yes", "on"):
        return True
    for i, arg in enumerate(argv):
        if arg.startswith("--log_level=") and arg.split("=", 1)[1].upper() == "DEBUG":
            return True
        if arg == "--log_level" and i + 1 < len(argv) and argv[i + 1].upper() == "DEBUG":
            return True
    return False


def version() -> str:
    """This distribution's version."""
    from torchx.cli._version import __version__

    return __version__


def _command_of(argv: Sequence[str]) -> tuple[str | None, bool]:
    """(the subcommand named in ``argv``, whether a top-level -h/--help comes before it)."""
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg in _HELP_FLAGS:
            return None, True
        if arg == "--log_level":
            i += 2
            continue
        if not arg.startswith("-"):
            return arg, False
        i += 1
    return None, False


def _load_commands(debug: bool) -> dict[str, Any]:
    """Every installed command object by name (see :func:`torchx.cli._parser.load_commands`)."""
    from torchx.cli._parser import load_commands

    return load_commands(debug)


def build_parser(commands: dict[str, Any]) -> argparse.ArgumentParser:
    """The full parser over ``commands`` (what ``torchx --help`` shows)."""
    from torchx.cli._parser import build_parser as _build

    return _build(commands)


def _full_help(debug: bool) -> tuple[str, str]:
    """(help text, notes about commands that failed to load) of ``torchx --help``."""
    import contextlib
    import io

    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        parser = build_parser(_load_commands(debug))
    return parser.format_help(), err.getvalue()


def _print_help(debug: bool) -> None:
    from torchx.cli import _help_cache

    cached = None if debug else _help_cache.read()
    if cached is None:
        cached = _full_help(debug)
        if not debug:
            _help_cache.write(*cached)
    out, err = cached
    sys.stderr.write(err)
    sys.stdout.write(out)
    sys.stdout.flush()


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


def main(argv: Sequence[str] | None = None) -> int:
    """Runs ``torchx`` with ``argv`` (default: the process's arguments) and returns the exit status."""
    args_list = list(sys.argv[1:] if argv is None else argv)
    debug = _debug_requested(args_list)
    if args_list == ["--version"]:
        print(f"torchx {version()}")
        return 0
    command, top_help = _command_of(args_list)
    if command is None and (top_help or not args_list):
        # `torchx --help`, and bare `torchx` (help, exit 2 as a usage error)
        _print_help(debug)
        return 0 if top_help else EXIT_USAGE
    from torchx.cli._parser import build_parser as _build
    from torchx.cli._parser import command_names, load_commands

    names = command_names()
    if command in names:  # only the command being run is loaded, and has a parser
        parser = _build(load_commands(debug, only=[command]), other_names=[command])
    else:  # unknown command, or only options: argparse explains, with every name
        parser = _build({}, other_names=names)
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
        if command in names:  # it was named but failed to load (reported above)
            return EXIT_USAGE
        _print_help(debug)
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


def console_main() -> None:
    """The ``torchx`` console script: :func:`main`, then a quick exit.

    Tearing down the interpreter (its modules, the attrs and cattrs machinery) costs
    10-20 ms after the work is done. Once stdout and stderr are flushed and the
    ``atexit`` handlers (logging's, a plugin's) have run, nothing is left that the
    user could notice, so the process ends there. When a non-daemon thread is still
    running (a plugin's), the normal exit waits for it as usual.
    """
    status = main()
    threading = sys.modules.get("threading")
    if threading is not None and any(
        t.is_alive() and not t.daemon and t is not threading.main_thread()
        for t in threading.enumerate()
    ):
        sys.exit(status)
    import atexit

    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe (torchx list | head): nothing to do
            pass
    atexit._run_exitfuncs()
    os._exit(status)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
