"""The ``torchx`` entry point: a parser assembled from the installed plugins' commands.

Every subcommand, the built-in ones included, comes from the ``torchx_cli_commands``
plugin hook (torchx-cli registers its own through :mod:`torchx.cli.builtin_plugin`),
so installing a plugin adds commands with no change here. A command is an object
with a one-line ``help``, ``add_arguments(parser)`` and ``run(args) -> int``.

Speed: only the command being run is imported and given a parser
(``torchx.cli._parser``); ``--version`` and ``--help`` (cached by
``torchx.cli._help_cache``) import neither argparse nor the plugin registry, and
neither do ``status``, ``list`` and ``log`` of a local app when no plugin replaces them
or the local scheduler, nor ``status``, ``log`` and ``cancel`` of an app whose
scheduler's plugin has a quick handler (``torchx.cli._quick``,
:mod:`torchx.schedulers.quick`).

Errors are told apart by type (``isinstance``), never by name:

* the project's own errors a user can fix (``torchx.specs.errors.SpecError`` and its
  subclasses, :class:`~torchx.cli.errors.CliError`, an ``OSError`` naming a file) print
  one line and exit 2;
* a scheduler that refuses a request or cannot be reached
  (``torchx.schedulers.errors.SchedulerError``), or a wait that timed out, prints one
  line and exits 1, as does a waited-on app that did not succeed;
* any other exception is unexpected: one line names the plugin (or the torchx
  distribution, or the file) it came from and says how to see the traceback, and the
  exit status is 3.

Debugging (``--log_level DEBUG`` or ``TORCHX_DEBUG=1``) shows tracebacks instead. A
command plugin that fails to load is skipped with a note, and never stops the other
commands from working. Exit statuses are in :mod:`torchx.cli.errors`.
"""

from __future__ import annotations

import os
import sys

from torchx.cli.errors import (
    EXIT_APP_FAILED,
    EXIT_INTERRUPTED,
    EXIT_PLUGIN_FAILED,
    EXIT_UNKNOWN,
    EXIT_USAGE,
    CliError,
)

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs milliseconds to import; --version and --help skip it
    import argparse
    from collections.abc import Sequence
    from types import TracebackType

    from torchx.cli.command import Command

# CliError and the exit statuses live in torchx.cli.errors; these names stay importable
# from here, where they were first.
__all__ = ["EXIT_APP_FAILED", "EXIT_USAGE", "CliError", "build_parser", "main", "version"]

_HELP_FLAGS = ("-h", "--help")
# answered by torchx.cli._quick when the full path is not needed (see there)
_QUICK_COMMANDS = ("status", "list", "log", "cancel")


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
    """This distribution's version (``--version`` imports nothing more)."""
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


#: Options of ``torchx run`` that take a value (the rest are flags), as its parser has them.
_RUN_VALUED = {"-s", "--scheduler", "-cfg", "--scheduler_args", "--workspace", "--parent_run_id"}
_LOCAL_NAMES = {"local", "local_cwd"}


def _may_run_locally(argv: Sequence[str]) -> bool:
    """Whether ``torchx run`` with these arguments may start a local app (a guess).

    Read before any parsing, to start the local supervisor ahead (see
    :mod:`torchx.schedulers.local_warmup`): a wrong yes costs an idle process that exits
    with us, a wrong no only the head start. No for a dry run, help, or another
    scheduler named before the component; the default scheduler is taken to be local
    (unless ``.torchxconfig`` says otherwise, which is not read here).
    """
    args = list(argv)
    i = args.index("run") + 1 if "run" in args else len(args)
    while i < len(args):
        arg = args[i]
        if arg in ("--dryrun", "-h", "--help"):
            return False
        name, eq, value = arg.partition("=")
        if name in ("-s", "--scheduler"):
            chosen = value if eq else (args[i + 1] if i + 1 < len(args) else "")
            return chosen in _LOCAL_NAMES
        if arg.startswith("-s") and not arg.startswith("--") and len(arg) > 2:
            return arg[2:] in _LOCAL_NAMES
        if not arg.startswith("-"):
            return True  # the component: what follows is its own
        i += 2 if arg in _RUN_VALUED else 1
    return True


def _load_commands(debug: bool) -> dict[str, Command]:
    """Every installed command object by name (see ``torchx.cli._parser.load_commands``)."""
    from torchx.cli._parser import load_commands

    return load_commands(debug)


def build_parser(commands: dict[str, Command]) -> argparse.ArgumentParser:
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


def _report(command: str, e: BaseException) -> int:
    """Prints ``e`` as one line (plus a component's usage, when there is one); the exit status."""
    from torchx.schedulers.errors import SchedulerError
    from torchx.specs.errors import SpecError

    usage = getattr(e, "usage", "")
    if isinstance(e, (SpecError, CliError)) or (isinstance(e, OSError) and e.filename):
        if usage:
            print(usage.rstrip(), file=sys.stderr)
        status = EXIT_USAGE
        message = str(e.args[0]) if isinstance(e, KeyError) and e.args else str(e)
        if isinstance(e, OSError) and e.strerror and e.filename:
            message = f"{e.filename}: {e.strerror}"
    elif _is_outage(e):
        status, message = EXIT_UNKNOWN, str(e)
    elif isinstance(e, SchedulerError) or _is_wait_timeout(e):
        status, message = EXIT_APP_FAILED, str(e)
    else:
        status, message = EXIT_PLUGIN_FAILED, _unexpected(e)
    print(f"torchx {command}: error: {_one_line(message)}", file=sys.stderr)
    return status


def _is_outage(e: BaseException) -> bool:
    """The backend could not be asked: a transient error, or the Runner's retries ran out.

    Told apart by type: ``RetriesExhaustedError`` is looked up where the Runner keeps it
    (only a Runner can have raised it, so no module is imported here for it).
    """
    from torchx.schedulers.errors import TransientSchedulerError

    if isinstance(e, TransientSchedulerError):
        return True
    for name in ("torchx.schedulers.retry", "torchx.runner._retry"):
        module = sys.modules.get(name)
        exhausted = getattr(module, "RetriesExhaustedError", None)
        if isinstance(exhausted, type) and isinstance(e, exhausted):
            return True
    return False


def _is_wait_timeout(e: BaseException) -> bool:
    runner_api = sys.modules.get("torchx.runner.api")  # only a Runner can have raised it
    return runner_api is not None and isinstance(e, runner_api.AppWaitTimeout)


def _warnings_as_lines(command: str) -> None:
    """Python warnings print as ``torchx COMMAND: warning: MESSAGE``, one line each.

    Python's own format names the file and line that warned (a path deep in
    site-packages) and repeats its source line: noise to a user of the command, who
    can do nothing with either. The category is named unless it is a plain
    ``UserWarning``. Debugging (``--log_level DEBUG``, ``TORCHX_DEBUG=1``) keeps
    Python's format. ``warnings`` is imported by the interpreter at startup: free.
    """
    import warnings

    def show(
        message: Warning | str,
        category: type[Warning],
        filename: str,
        lineno: int,
        file: object = None,
        line: str | None = None,
    ) -> None:
        kind = "" if category is UserWarning else f"{category.__name__}: "
        try:
            sys.stderr.write(f"torchx {command}: warning: {kind}{_one_line(str(message))}\n")
        except (OSError, ValueError):  # stderr closed: a warning is not worth failing for
            pass

    warnings.showwarning = show


def _one_line(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return " ".join(lines) if len(lines) <= 3 else " ".join([*lines[:3], "..."])


def _unexpected(e: BaseException) -> str:
    """One line for an exception nobody expected: what, who raised it, how to see more."""
    what = f"{type(e).__name__}: {e}" if str(e) else type(e).__name__
    hint = "rerun with --log_level DEBUG (or TORCHX_DEBUG=1) to see the traceback"
    culprit = _culprit(e.__traceback__)
    if culprit is None:
        return f"unexpected {what}; {hint}"
    who, core = culprit
    if core:
        return f"unexpected {what} in {who} (a bug of torchx: please report it); {hint}"
    return f"unexpected {what} from {who}, not caused by your input; {hint}"


def _culprit(tb: TracebackType | None) -> tuple[str, bool] | None:
    """(who raised it, whether it is torchx itself) from the innermost frame we can place.

    A frame belongs to a plugin when its module is in a package that one of the plugin
    registry's entries names (``acme_torchx.scheduler:create_scheduler`` places every
    ``acme_torchx`` module in acme-torchx); frames of the standard library and SDKs
    place nothing, so an SDK's exception inside a plugin names the plugin. Failing
    that, the innermost frame outside the standard library names the file.
    """
    import traceback

    frames = [frame for frame, _ in traceback.walk_tb(tb)]
    if not frames:
        return None
    owners = _package_owners()
    core = {"torchx-specs", "torchx-runner", "torchx-cli"}
    for frame in reversed(frames):
        module = str(frame.f_globals.get("__name__", ""))
        parts = module.split(".")
        for key in (".".join(parts[:2]), parts[0]):
            owner = owners.get(key)
            if owner is not None:
                dist = owner.split(" ")[0]
                label = owner if dist in core else f"the plugin {owner}"
                return f"{label} ({module})", dist in core
        if parts[0] == "torchx":
            return f"torchx ({module})", True
    import sysconfig

    stdlib = sysconfig.get_paths()["stdlib"]
    for frame in reversed(frames):
        filename = frame.f_code.co_filename
        if not filename.startswith(stdlib) and not filename.startswith("<"):
            return f"{filename}:{frame.f_lineno}", False
    return None


def _package_owners() -> dict[str, str]:
    """Package (``acme_torchx``, or ``torchx.schedulers`` in the shared namespace) -> ``"dist version"``."""
    from torchx.specs.plugins import get_registry

    owners: dict[str, str] = {}
    try:
        distributions = get_registry().distributions
    except Exception:
        return owners
    for dist in distributions.values():
        for entry in dist.entries:
            if entry.ref is None:
                continue
            parts = entry.ref.split(":")[0].split(".")
            key = ".".join(parts[:2]) if parts[0] == "torchx" else parts[0]
            owners.setdefault(key, f"{dist.name} {dist.version}".strip())
    return owners


def main(argv: Sequence[str] | None = None) -> int:
    """Runs ``torchx`` with ``argv`` (default: the process's arguments) and returns the exit status.

    Output piped into a reader that stops early (``torchx log HANDLE | head``) ends the
    command quietly with status 0, as ``cat`` and ``grep`` do, never with a traceback.
    """
    try:
        return _main(argv)
    except BrokenPipeError:
        _silence_stdout()
        return 0


def _silence_stdout() -> None:
    """Points stdout at /dev/null: what is still buffered for the closed pipe goes nowhere.

    Otherwise the interpreter's last flush would fail again, and print a traceback.
    """
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):  # no real stdout (a test's StringIO)
        pass


def _main(argv: Sequence[str] | None) -> int:
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
    if command == "run" and _may_run_locally(args_list):
        from torchx.schedulers import local_warmup

        local_warmup.start()  # the supervisor's start overlaps ours (see local_warmup)
    remember = False
    if command in _QUICK_COMMANDS and not debug:
        from torchx.cli import _quick

        status = _quick.run(args_list)
        if status is not None:
            return status
        remember = _quick.stale
    from torchx.cli._parser import build_parser as _build
    from torchx.cli._parser import command_names, load_commands

    names = command_names()
    if remember:  # the registry is built now: may the quick path answer next time?
        _quick.remember()
    if command in names:  # only the command being run is loaded, and has a parser
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
        _print_help(debug)
        return EXIT_USAGE
    if not debug:
        _warnings_as_lines(args.command)
    try:
        return int(cmd.run(args) or 0)
    except KeyboardInterrupt:
        print("torchx: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        _silence_stdout()
        return 0
    except Exception as e:
        if debug:
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
