"""The start-up shortcuts of ``torchx``: what it does so that a command starts (and ends) fast.

None of this changes what a command does; each piece saves time around it:

* the subcommand and ``--log_level DEBUG`` are read from the raw arguments
  (:func:`command_of`, :func:`debug_requested`), so that nothing is parsed, and only
  the command being run is loaded and given a parser;
* ``torchx --help`` is served from a cache (``torchx.cli._help_cache``) and imports
  neither argparse nor the plugin registry (:func:`print_help`);
* ``status``, ``list``, ``log`` and ``cancel`` may be answered without the registry or
  the spec types (:func:`quick_answer`): ``status``, ``list`` and ``log`` of a local app
  when no plugin replaces them or the local scheduler, and ``status``, ``log`` and
  ``cancel`` of an app whose scheduler's plugin has a quick handler
  (``torchx.cli._quick``, :mod:`torchx.schedulers.helpers.quick`);
* ``torchx run`` that may start a local app starts the local supervisor ahead
  (:func:`may_run_locally`, :mod:`torchx.schedulers.local.warmup`);
* at the end, the process exits without tearing down the interpreter
  (:func:`exit_quickly`), and output piped into a reader that stopped early ends
  quietly (:func:`silence_stdout`).
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs milliseconds to import; --version and --help skip it
    from collections.abc import Sequence


_HELP_FLAGS = ("-h", "--help")
# answered by torchx.cli._quick when the full path is not needed (see there)
QUICK_COMMANDS = ("status", "list", "log", "cancel")


def debug_requested(argv: Sequence[str]) -> bool:
    if os.environ.get("TORCHX_DEBUG", "").lower() in ("1", "true", "yes", "on"):
        return True
    for i, arg in enumerate(argv):
        if arg.startswith("--log_level=") and arg.split("=", 1)[1].upper() == "DEBUG":
            return True
        if arg == "--log_level" and i + 1 < len(argv) and argv[i + 1].upper() == "DEBUG":
            return True
    return False


def command_of(argv: Sequence[str]) -> tuple[str | None, bool]:
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


def may_run_locally(argv: Sequence[str]) -> bool:
    """Whether ``torchx run`` with these arguments may start a local app (a guess).

    Read before any parsing, to start the local supervisor ahead (see
    :mod:`torchx.schedulers.local.warmup`): a wrong yes costs an idle process that exits
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


def full_help(debug: bool) -> tuple[str, str]:
    """(help text, notes about commands that failed to load) of ``torchx --help``."""
    import contextlib
    import io

    from torchx.cli._parser import build_parser, load_commands

    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        parser = build_parser(load_commands(debug))
    return parser.format_help(), err.getvalue()


def print_help(debug: bool) -> None:
    from torchx.cli import _help_cache

    cached = None if debug else _help_cache.read()
    if cached is None:
        cached = full_help(debug)
        if not debug:
            _help_cache.write(*cached)
    out, err = cached
    sys.stderr.write(err)
    sys.stdout.write(out)
    sys.stdout.flush()


def quick_answer(args: Sequence[str], command: str | None, debug: bool) -> tuple[int | None, bool]:
    """(the exit status of a command answered without the full path, or None; whether the
    quick path should be told, once the registry is built, if it may answer next time).

    Starts the local supervisor ahead first for a ``torchx run`` that may start a local
    app (its start then overlaps ours).
    """
    if command == "run" and may_run_locally(args):
        from torchx.schedulers.local import warmup as local_warmup

        local_warmup.start()  # the supervisor's start overlaps ours (see local_warmup)
    if command not in QUICK_COMMANDS or debug:
        return None, False
    from torchx.cli import _quick

    status = _quick.run(list(args))
    if status is not None:
        return status, False
    return None, _quick.stale


def remember_quick() -> None:
    """The registry is built: let the quick path learn whether it may answer next time."""
    from torchx.cli._quick import marker

    marker.remember()


def silence_stdout() -> None:
    """Points stdout at /dev/null: what is still buffered for the closed pipe goes nowhere.

    Otherwise the interpreter's last flush would fail again, and print a traceback.
    """
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):  # no real stdout (a test's StringIO)
        pass


def exit_quickly(status: int) -> None:
    """Ends the process with ``status`` once the work is done, skipping the interpreter's teardown.

    Tearing down the interpreter (its modules, the attrs and cattrs machinery) costs
    10-20 ms after the work is done. Once stdout and stderr are flushed and the
    ``atexit`` handlers (logging's, a plugin's) have run, nothing is left that the
    user could notice, so the process ends there. When a non-daemon thread is still
    running (a plugin's), the normal exit waits for it as usual.
    """
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
