"""The quick path of ``torchx status``, ``list``, ``log`` and ``cancel``: local apps, and plugins' handlers.

Following an app is what users type most, and its work (reading a few small records)
takes a millisecond; what made it slow was getting there: ``attrs`` for the spec types,
pluggy and the plugin registry, argparse and the Scheduler contract. For a ``local://``
handle (and ``list`` of the local scheduler), when nothing installed changes who answers,
these commands (and ``status`` of a sweep, ``sweep://ID``: its record and the full
command's table) are answered from :mod:`torchx.schedulers.local.view`, which reads the
local scheduler's records with the standard library only, and printed exactly as the
full commands (:mod:`torchx.cli.cmd_follow`, :mod:`torchx.cli.cmd_log`) print them.
For another scheduler's handle, ``status``, ``log`` and ``cancel`` (of an app that has
ended) are answered the same way through the *quick handler* its plugin registers
(the ``torchx_quick_handlers`` hook; the contract is :mod:`torchx.schedulers.helpers.quick`),
for the commands it declares: the handler gives plain data, or declines, and this
package prints it as the full commands would.

:func:`run` is the entry (``torchx.cli._startup`` calls it before anything else is
loaded); it reads the command line itself, then hands over to one module per job:

* :mod:`~torchx.cli._quick.marker`: is it ours to answer? The record a full run leaves
  of who answers each command in this environment (a plugin may replace a command or a
  scheduler), and :func:`~torchx.cli._quick.marker.remember`, which writes it;
* :mod:`~torchx.cli._quick.local`: the local scheduler's apps;
* :mod:`~torchx.cli._quick.plugin`: another scheduler's apps, through its handler;
* :mod:`~torchx.cli._quick.standins`: what ``torchx.cli.logs`` reads of a status and a
  Runner, as plain values.

Whenever anything is not plainly the common case, the quick path declines before it
prints anything and the full command runs: options it does not handle (``--json``,
``--roles``, ``--regex``, ``--log_level``...), following a running app, another
scheduler, a ``.torchxconfig`` that could name another default scheduler for ``list``,
an app that does not exist or whose records need the scheduler's attention (a
supervisor that died), a record it cannot read, the status of a FAILED app (whose
error is read from its logs: ``torchx.runner.failures``). Errors are thus always the full
command's, word for word and with its exit status.
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False  # typing costs milliseconds; this package exists to save them
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import Any

    from torchx.specs.handles import Handle

#: The commands answered here, and the reference the registry must resolve each to.
COMMANDS = {
    "status": "torchx.cli.cmd_follow:StatusCommand",
    "list": "torchx.cli.cmd_follow:ListCommand",
    "log": "torchx.cli.cmd_log:LogCommand",
    "cancel": "torchx.cli.cmd_follow:CancelCommand",
}
#: The scheduler answered here, and the reference the registry must resolve it to.
SCHEDULER = "local"
LOCAL_FACTORY = "torchx.schedulers.local_scheduler:create_scheduler"
#: The session of the handles ``list`` prints (the Runner's default session name).
SESSION = "torchx"
#: The commands a local app's quick path answers (cancel is the scheduler's).
LOCAL_COMMANDS = frozenset({"status", "list", "log"})

#: The options handled, per command (a value kind of None is a switch).
_FLAGS: dict[str, dict[str, str | None]] = {
    "status": {"--show-secrets": None},
    "list": {"-s": "value", "--scheduler": "value", "--state": "value", "--limit": "value"},
    "log": {
        "--streams": "value",
        "--since": "value",
        "--until": "value",
        "-t": None,
        "--tail": None,
        "-f": None,
        "--follow": None,
        "--color": "value",
    },
    "cancel": {},
}
#: The options handled for a plugin's scheduler (through its quick handler), per command.
_PLUGIN_FLAGS: dict[str, dict[str, str | None]] = {
    "status": {"--show-secrets": None},
    "log": {"--streams": "value", "--color": "value"},
    "cancel": {},
}


class Decline(Exception):
    """The quick path cannot answer this: the full command runs."""


def print_text(text: str) -> int:
    """Prints an answer prepared beforehand; the command's exit status."""
    sys.stdout.write(text)
    return 0


def run(argv: Sequence[str]) -> int | None:
    """The exit status of ``torchx *argv`` answered here, or None: run the full command.

    Declines (None) before printing anything. Whether the marker was missing or stale
    is kept in :data:`stale`, so that the full run can call
    :func:`~torchx.cli._quick.marker.remember`.
    """
    global stale
    stale = False
    if not argv or argv[0] not in _FLAGS:
        return None
    command = argv[0]
    handle = None
    sweep = None
    try:
        # options it does not handle: decline at once, before importing anything
        positionals, options = _options(argv[1:], _FLAGS[command])
        if command == "status" and positionals[:1] and positionals[0].startswith("sweep://"):
            if len(positionals) != 1 or options:
                return None
            sweep = positionals[0]  # a sweep's record: read below, once the marker agrees
            scheduler = ""
        elif command == "list":
            if positionals:
                return None
            scheduler = options.get("-s", options.get("--scheduler", SCHEDULER))
        elif len(positionals) == 1:
            # parsed here, once; what follows reads its parts
            handle = _parsed(positionals[0], target=command == "log")
            scheduler = handle.scheduler_backend
        else:
            return None
        if sweep is not None:
            import torchx.sweeps.record  # (an older torchx-runner lacks it)
        elif scheduler == SCHEDULER:
            if command not in LOCAL_COMMANDS:
                return None
            import torchx.schedulers.local.view  # noqa: F401  (an older torchx-runner lacks it)
        elif command not in _PLUGIN_FLAGS or not set(options) <= set(_PLUGIN_FLAGS[command]):
            return None
    except (Decline, ImportError):
        return None
    from torchx.cli._quick.marker import remembered

    found = remembered()
    if found is None:
        stale = True
        return None
    commands, local, handlers = found
    if command not in commands:
        return None
    try:
        emit: Callable[[], int] | None
        if sweep is not None:
            emit = _sweep_status(sweep)
        elif scheduler == SCHEDULER:
            from torchx.cli._quick import local as answers

            if not local:
                emit = None
            elif handle is None:
                emit = answers.app_list(options)
            else:
                emit = answers.BY_HANDLE[command](handle, options)
        else:
            ref = handlers.get(scheduler)
            if ref is None or handle is None:
                return None
            from torchx.cli._quick.plugin import answer

            emit = answer(ref, command, handle, options)
    except Exception:  # Decline, local_view.Unsure, a handler's doubt...: the full command says
        return None
    return None if emit is None else emit()


def _sweep_status(handle: str) -> Callable[[], int]:
    """``torchx status sweep://ID``: the sweep's record read and its table made here, by
    the full command's own functions (:mod:`torchx.cli.cmd_sweep`); a sweep that cannot
    be read raises (declines: the full command says why)."""
    from torchx.cli.cmd_sweep import format_sweep
    from torchx.sweeps import status

    text = format_sweep(status(handle))
    return lambda: print_text(text)


#: Set by :func:`run` when the quick path declined for want of a valid marker.
stale = False


def _parsed(text: str, target: bool) -> Handle:
    """``text`` parsed once, by the full path's parser: a handle, or with ``target``
    ``HANDLE[/ROLE[/N,M]]`` (``torchx log``); declines what it refuses (the full
    command says what is wrong)."""
    from torchx.specs.handles import parse_handle, parse_target

    try:
        return parse_target(text) if target else parse_handle(text)
    except ValueError:
        raise Decline(text) from None


def _options(args: Sequence[str], flags: dict[str, str | None]) -> tuple[list[str], dict[str, Any]]:
    """(positionals, options) of ``args``; ``flags`` maps each option to its value kind.

    A kind of None is a switch; ``"value"`` takes the next argument. Anything else
    (another option, ``--opt=value``, an abbreviation, ``--``) declines.
    """
    positionals: list[str] = []
    options: dict[str, Any] = {}
    i = 0
    while i < len(args):
        arg = args[i]
        if arg.startswith("-"):
            if arg not in flags or arg in options:
                raise Decline(arg)
            if flags[arg] is None:
                options[arg] = True
            else:
                if i + 1 >= len(args) or args[i + 1].startswith("-"):
                    raise Decline(arg)
                options[arg] = args[i + 1]
                i += 1
        else:
            positionals.append(arg)
        i += 1
    return positionals, options
