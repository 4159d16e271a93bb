"""The ``torchx`` command: find the subcommand, run it, tell how it ended.

The flow, for ``torchx run -s local utils.echo --msg hi``:

1. :func:`main` takes the arguments and finds the subcommand (``run``) in them.
2. The subcommand is a *command* from the plugin registry: every one, the built-in
   ones included, is contributed through the ``torchx_cli_commands`` hook (torchx-cli
   registers its own through :mod:`torchx.cli.builtin_plugin`), so installing a plugin
   adds commands with no change here. A command (:class:`~torchx.cli.command.Command`)
   is an object with a one-line ``help``, ``add_arguments(parser)`` and
   ``run(args) -> int``; only the one being run is loaded and given a parser
   (``torchx.cli._parser``).
3. The command works through a :class:`~torchx.runner.Runner`: ``run``
   (:mod:`torchx.cli.cmd_run`) materializes the component into an AppDef and submits it
   to the scheduler, printing the app's handle; ``status``, ``log``, ``list``,
   ``cancel`` and ``delete`` take that handle to the same Runner from a later process.
4. Its exit status is the command's; an exception it raises becomes one line on stderr
   and an exit status (``torchx.cli._report``: 2 for input the user can fix, 1 for
   a scheduler's refusal or an app that failed, 3 for the unexpected, naming the
   plugin it came from). Exit statuses are in :mod:`torchx.cli.errors`.

Some command lines are answered without the whole flow, so that ``torchx`` starts
fast (``--version``, a cached ``--help``, ``status``/``log``/``list``/``cancel`` of
some apps, a local supervisor started ahead for ``run``): those shortcuts are in
``torchx.cli._startup``. Debugging (``--log_level DEBUG`` or ``TORCHX_DEBUG=1``)
shows tracebacks instead of the one line. A command plugin that fails to load is
skipped with a note, and never stops the other commands from working.
"""

from __future__ import annotations

import sys

from torchx.cli import _startup
from torchx.cli.errors import EXIT_APP_FAILED, EXIT_INTERRUPTED, EXIT_USAGE, CliError

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs milliseconds to import; --version and --help skip it
    import argparse
    from collections.abc import Sequence

    from torchx.cli.command import Command

# CliError and the exit statuses live in torchx.cli.errors; these names stay importable
# from here, where they were first.
__all__ = ["EXIT_APP_FAILED", "EXIT_USAGE", "CliError", "build_parser", "main", "version"]


def main(argv: Sequence[str] | None = None) -> int:
    """Runs ``torchx`` with ``argv`` (default: the process's arguments) and returns the exit status.

    Output piped into a reader that stops early (``torchx log HANDLE | head``) ends the
    command quietly with status 0, as ``cat`` and ``grep`` do, never with a traceback.
    """
    try:
        return _main(argv)
    except BrokenPipeError:
        _startup.silence_stdout()
        return 0


def _main(argv: Sequence[str] | None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    debug = _startup.debug_requested(args_list)
    if args_list == ["--version"]:
        print(f"torchx {version()}")
        return 0
    command, top_help = _startup.command_of(args_list)
    if command is None and (top_help or not args_list):
        # `torchx --help`, and bare `torchx` (help, exit 2 as a usage error)
        _startup.print_help(debug)
        return 0 if top_help else EXIT_USAGE
    status, remember = _startup.quick_answer(args_list, command, debug)
    if status is not None:
        return status

    # the command, from the registry: only the one being run is loaded and parsed
    from torchx.cli._parser import build_parser as _build
    from torchx.cli._parser import command_names, load_commands

    names = command_names()
    if remember:  # the registry is built now: may the quick path answer next time?
        _startup.remember_quick()
    if command in names:
        parser = _build(load_commands(debug, only=[command]), other_names=[command])
    else:  # unknown command, or only options: argparse explains, with every name
        parser = _build({}, other_names=names)
    try:
        args, extras = parser.parse_known_args(args_list)
        if extras:  # told by the subcommand's parser: its usage, and the option meant
            from torchx.cli._parser import refuse_unknown

            refuse_unknown(getattr(args, "_torchx_parser", parser), extras)
    except SystemExit as e:
        return int(e.code or 0) if not isinstance(e.code, str) else EXIT_USAGE
    if args.log_level or debug:
        import logging

        logging.basicConfig(
            level=args.log_level or "DEBUG", format="%(levelname)s %(name)s: %(message)s"
        )
    cmd: Command | None = getattr(args, "_torchx_command", None)
    if cmd is None:
        if command in names:  # it was named but failed to load (reported above)
            return EXIT_USAGE
        _startup.print_help(debug)
        return EXIT_USAGE

    # the command runs (through a Runner); how it ended is its exit status or one line
    from torchx.cli import _report
    from torchx.cli.output import mask_log_lines, start_masking

    start_masking(bool(getattr(args, "show_secrets", False)))
    mask_log_lines()

    if not debug:
        _report.warnings_as_lines(args.command)
    try:
        return int(cmd.run(args) or 0)
    except KeyboardInterrupt:
        print("torchx: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        _startup.silence_stdout()
        return 0
    except Exception as e:
        if debug:
            raise
        return _report.report(args.command, e)


def build_parser(commands: dict[str, Command]) -> argparse.ArgumentParser:
    """The full parser over ``commands`` (what ``torchx --help`` shows)."""
    from torchx.cli._parser import build_parser as _build

    return _build(commands)


def version() -> str:
    """This distribution's version (``--version`` imports nothing more)."""
    from torchx.cli._version import __version__

    return __version__


def console_main() -> None:
    """The ``torchx`` console script: :func:`main`, then a quick exit (see
    :func:`torchx.cli._startup.exit_quickly`)."""
    _startup.exit_quickly(main())


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
