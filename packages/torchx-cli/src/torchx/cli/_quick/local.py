"""The quick path's answers for the local scheduler's apps: ``status``, ``list`` and ``log``.

Read from the local scheduler's records with the standard library only
(:mod:`torchx.schedulers.local.view`) and printed through the full commands' own
formatters (:func:`torchx.specs.status.format_handle_status`,
:func:`torchx.cli.output.format_app_list`, :func:`torchx.cli.logs.stream`), so the
output is the same byte for byte. Each function prepares all it prints and returns
the printing; anything not plainly the common case raises (:class:`~torchx.cli._quick.Decline`,
or the reader's own doubt) before that, and the full command answers: a FAILED app
(whose error is read from its logs: ``torchx.runner.failures``), a ``.torchxconfig``
that could name another scheduler or state directory for ``list``, a bad filter.
"""

from __future__ import annotations

import os

from torchx.cli._quick import SCHEDULER, SESSION, Decline, print_text

TYPE_CHECKING = False  # typing costs milliseconds; the quick path exists to save them
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from torchx.specs.handles import Handle

_CONFIG_FILE = ".torchxconfig"


def status(handle: Handle, options: dict[str, Any]) -> Callable[[], int]:
    """``torchx status HANDLE [--show-secrets]`` of a local app."""
    from torchx.schedulers.local import view as local_view
    from torchx.specs.status import format_handle_status

    app_id = handle.app_id
    record = local_view.status(app_id)
    if record["state"] == "FAILED":
        raise Decline("a failed app: the full command finds and shows its error")
    text = format_handle_status(handle, record)
    if not options.get("--show-secrets"):
        from torchx.cli.output import mask_values

        text = mask_values(text, local_view.role_envs(app_id))
    return lambda: print_text(text)


def app_list(options: dict[str, Any]) -> Callable[[], int]:
    """``torchx list [-s local] [--state S] [--limit N]``."""
    from torchx.schedulers.local import view as local_view

    scheduler = options.get("-s") or options.get("--scheduler")
    if "-s" in options and "--scheduler" in options:
        raise Decline("arguments")
    if scheduler not in (None, SCHEDULER):
        raise Decline(str(scheduler))
    if _config_files_exist():
        # [cli:run] may name another scheduler, [local] another state_dir to list
        raise Decline("config files")
    from torchx.cli.output import format_app_list, parse_limit, parse_states, select_apps

    # a bad filter raises: the full command says so, in its words
    states = parse_states(options["--state"]) if "--state" in options else None
    limit = parse_limit(options["--limit"]) if "--limit" in options else None
    # each handle names the scheduler the app was submitted under (local or local_cwd)
    rows = select_apps(local_view.list_apps_with_handles(SESSION), states, limit)
    from torchx.sweeps import trial_sweeps

    text = format_app_list(rows, trial_sweeps())  # the trials of sweeps grouped
    return lambda: print_text(text)


def log(handle: Handle, options: dict[str, Any]) -> Callable[[], int]:
    """``torchx log HANDLE[/ROLE[/N,M]]`` of a local app, with ``--streams``, ``--since``,
    ``--until``, ``-t``/``--tail`` (``-f``/``--follow``) and ``--color``."""
    from torchx.cli._quick.standins import OpenedLogs, Roles, log_options
    from torchx.cli.logs import check_selection, parse_time, replicas_of, stream
    from torchx.schedulers.local import view as local_view

    streams, color = log_options(options)
    since = parse_time(options["--since"]) if "--since" in options else None
    until = parse_time(options["--until"]) if "--until" in options else None
    check_selection(None, since, until)
    tail = any(options.get(flag) for flag in ("-t", "--tail", "-f", "--follow"))
    app_id = handle.app_id
    pairs = replicas_of(Roles(local_view.status(app_id)["roles"]), handle.role, handle.replica_ids)
    opened = {
        (r, k): local_view.log_lines(app_id, r, k, streams, since, until, tail) for r, k in pairs
    }

    def emit() -> int:
        unread = stream(
            OpenedLogs(opened), handle, pairs, since=since, until=until, tail=tail, color=color
        )
        return unread.exit_status

    return emit


def _config_files_exist() -> bool:
    """True if ``.torchxconfig`` could be read (see ``torchx.runner.config.find_configs``)."""
    if os.environ.get("TORCHXCONFIG"):
        return True
    here = os.path.abspath(os.getcwd())
    while True:
        if os.path.lexists(os.path.join(here, _CONFIG_FILE)):
            return True
        parent = os.path.dirname(here)
        if parent == here:
            break
        here = parent
    home = os.path.expanduser("~")
    return home != "~" and os.path.lexists(os.path.join(home, _CONFIG_FILE))


#: The commands of a local app's handle (``list`` has no handle), by name.
BY_HANDLE = {"status": status, "log": log}
