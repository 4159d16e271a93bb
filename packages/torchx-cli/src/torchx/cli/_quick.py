"""The quick path of ``torchx status``, ``list``, ``log`` and ``cancel``: local apps, and plugins' handlers.

Following an app is what users type most, and its work (reading a few small records)
takes a millisecond; what made it slow was getting there: ``attrs`` for the spec types,
pluggy and the plugin registry, argparse and the Scheduler contract. For a ``local://``
handle (and ``list`` of the local scheduler), when nothing installed changes who answers,
these commands are answered from :mod:`torchx.schedulers.local_view`, which reads the
local scheduler's records with the standard library only, and printed exactly as the
full commands (:mod:`torchx.cli.cmd_follow`, :mod:`torchx.cli.cmd_log`) print them.
For another scheduler's handle, ``status``, ``log`` and ``cancel`` (of an app that has
ended) are answered the same way through the *quick handler* its plugin registers
(the ``torchx_quick_handlers`` hook; the contract is :mod:`torchx.schedulers.quick`):
the handler gives plain data, or declines, and this module prints it as the full
commands would.

The CLI is still assembled from the installed plugins, and a plugin may replace the
``status``, ``list``, ``log`` or ``cancel`` command, the ``local`` scheduler or another
plugin's scheduler. So the quick path is taken only when the full path, run earlier in
this same environment, found in the plugin registry that the command is torchx-cli's
own and ``local`` is torchx-runner's (or, for a plugin's scheduler, that the quick
handler comes from the distribution that provides the scheduler, neither name in a
clash), with no plugin failing to load. That finding is remembered in
``$XDG_CACHE_HOME/torchx/cli-quick-<env>.txt`` (else ``~/.cache/torchx``) under the key
of the ``--help`` cache (:func:`torchx.cli._help_cache.environment_key`: the
interpreter, ``sys.path``, the ``TORCHX_*`` variables, torchx-cli's files, the name and
mtime of every installed distribution's metadata) plus the mtime of every plugin
module, so installing, upgrading, removing or editing a plugin sends the next command
down the full path, which looks again. ``TORCHX_NO_PLUGIN_CACHE=1`` turns the quick
path off, as it does the caches, and so does a ``sys.meta_path`` finder that supplies
distributions (the key cannot see those; the registry then distrusts its cache too).

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

import os
import sys

TYPE_CHECKING = False  # typing costs milliseconds; this module exists to save them
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Sequence
    from datetime import datetime
    from typing import Any

    from torchx.schedulers.api import Stream
    from torchx.specs.handles import Handle
    from torchx.specs.status import StatusRecord

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
#: The commands a local app's quick path answers (cancel is the scheduler's).
_LOCAL_COMMANDS = frozenset({"status", "list", "log"})

_FORMAT = "torchx-cli-quick/2"
_STREAMS = ("stdout", "stderr", "combined")
_COLOR = ("auto", "always", "never")
_CONFIG_FILE = ".torchxconfig"


class _Decline(Exception):
    """The quick path cannot answer this: the full command runs."""


# ----------------------------------------------------------------- is it ours to answer?


def _marker_path() -> str | None:
    from torchx.cli._help_cache import cache_file

    return cache_file("quick")


def _mtime(path: str) -> str:
    try:
        return str(os.stat(path).st_mtime_ns)
    except OSError:
        return "-"


def _sees_every_distribution() -> bool:
    """False when a custom finder may supply distributions the key cannot see.

    The key lists the metadata directories on ``sys.path``; a ``sys.meta_path`` finder
    with ``find_distributions`` could add plugins from elsewhere (the plugin registry
    does not trust its own on-disk cache then either).
    """
    from importlib.machinery import PathFinder

    return not any(
        finder is not PathFinder and hasattr(finder, "find_distributions")
        for finder in sys.meta_path
    )


def allowed() -> frozenset[str] | None:
    """The commands that a full run in this environment found the local quick path may answer.

    None when nothing valid is remembered (no marker, or one of another environment).
    """
    found = _found()
    if found is None:
        return None
    commands, local, _handlers = found
    return commands & _LOCAL_COMMANDS if local else frozenset()


def _found() -> tuple[frozenset[str], bool, dict[str, str]] | None:
    """What a full run in this environment remembered, or None (no valid marker).

    (the commands that are torchx-cli's own, whether ``local`` is torchx-runner's, each
    scheduler's quick handler reference); nothing when the caches are off.
    """
    if os.environ.get("TORCHX_NO_PLUGIN_CACHE") or not _sees_every_distribution():
        return frozenset(), False, {}
    path = _marker_path()
    if path is None:
        return frozenset(), False, {}
    try:
        with open(path, encoding="utf-8") as f:
            fmt, key, commands, local, files, handlers = f.read().split("\0")
    except (OSError, ValueError):
        return None
    if fmt != _FORMAT:
        return None
    for line in files.splitlines():
        name, _, mtime = line.rpartition("\t")
        if _mtime(name) != mtime:
            return None
    from torchx.cli._help_cache import environment_key

    if key != environment_key():
        return None
    refs = {}
    for line in handlers.splitlines():
        scheduler, _, ref = line.partition("\t")
        refs[scheduler] = ref
    return frozenset(commands.split(",")) - {""}, local == "1", refs


def handler_verdicts(registry: Any) -> dict[str, str]:
    """Each registered quick handler's scheduler name -> why it may not answer ("" if it may).

    A handler answers only for a scheduler of its own distribution, neither name in a
    clash, never ``local``, and only when no plugin failed to load (:func:`remember`
    records the handlers with an empty reason). ``torchx plugins --check`` shows these.
    """
    clashed = {(c.kind, c.name) for c in registry.clashes}
    verdicts = {}
    for name, entry in registry.quick_handlers.items():
        sched = registry.schedulers.get(name)
        if name == SCHEDULER:
            why = "the local scheduler is answered by torchx-runner's records only"
        elif sched is None:
            why = f"no scheduler {name!r} is installed"
        elif entry.ref is None or entry.distribution is None:
            why = "registered in-process, not by an installed distribution"
        elif entry.distribution != sched.distribution:
            why = (
                f"the scheduler {name!r} comes from {sched.distribution or 'in-process code'}, "
                f"not from {entry.distribution}"
            )
        elif ("scheduler", name) in clashed or ("quick_handler", name) in clashed:
            why = f"the name {name!r} is in a clash (see above)"
        elif registry.failures:
            why = "a plugin failed to load (see above)"
        else:
            why = ""
        verdicts[name] = why
    return verdicts


def marker_handlers() -> dict[str, str] | None:
    """The quick handlers the marker of this environment lets answer (scheduler -> ref).

    None when no valid marker is remembered (none yet, or one a change made stale: the
    next full ``torchx status|log|cancel`` records it); empty when the caches are off.
    """
    found = _found()
    return None if found is None else found[2]


def remember() -> None:
    """After a full run: records what the quick path may answer in this environment.

    The commands the registry resolves to torchx-cli's own; whether ``local`` is
    torchx-runner's; each quick handler whose scheduler comes from the handler's own
    distribution (a plugin answers for its scheduler only, never for one another plugin
    replaced), with neither name in a clash. Nothing at all when a plugin failed (a
    failed plugin, once fixed, might take a name). The files of every plugin module are
    recorded with their mtimes. Errors are ignored.
    """
    path = _marker_path()
    if path is None or os.environ.get("TORCHX_NO_PLUGIN_CACHE"):
        return
    from torchx.specs.plugins import get_registry

    try:
        registry = get_registry()
        ours = [
            name
            for name, ref in COMMANDS.items()
            if getattr(registry.cli_commands.get(name), "ref", None) == ref
        ]
        local = registry.schedulers.get(SCHEDULER)
        local_ok = local is not None and local.ref == LOCAL_FACTORY
        handlers = [
            f"{name}\t{registry.quick_handlers[name].ref}"
            for name, why_not in sorted(handler_verdicts(registry).items())
            if not why_not
        ]
        if registry.failures:
            ours, local_ok, handlers = [], False, []
        files = []
        for dist in registry.distributions.values():
            for declared in dist.entry_points:  # "torchx: name = module:attr"
                group, _, rest = declared.partition(": ")
                if group != "torchx":
                    continue
                module = sys.modules.get(rest.partition(" = ")[2].partition(":")[0].strip())
                filename = getattr(module, "__file__", None)
                if filename:
                    files.append(f"{filename}\t{_mtime(filename)}")
                else:  # cannot tell when it changes: nothing is answered quickly
                    ours, local_ok, handlers = [], False, []
        from torchx.cli._help_cache import environment_key
        from torchx.schedulers.files import write_private_atomic

        os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
        text = "\0".join(
            [
                _FORMAT,
                environment_key(),
                ",".join(ours),
                "1" if local_ok else "0",
                "\n".join(files),
                "\n".join(handlers),
            ]
        )
        write_private_atomic(path, text, fsync=False)
    except Exception:  # a cache: never the reason a command fails
        pass


# ------------------------------------------------------------------------- the commands


def _parsed(text: str, target: bool) -> Handle:
    """``text`` parsed once, by the full path's parser: a handle, or with ``target``
    ``HANDLE[/ROLE[/N,M]]`` (``torchx log``); declines what it refuses (the full
    command says what is wrong)."""
    from torchx.specs.handles import parse_handle, parse_target

    try:
        return parse_target(text) if target else parse_handle(text)
    except ValueError:
        raise _Decline(text) from None


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
                raise _Decline(arg)
            if flags[arg] is None:
                options[arg] = True
            else:
                if i + 1 >= len(args) or args[i + 1].startswith("-"):
                    raise _Decline(arg)
                options[arg] = args[i + 1]
                i += 1
        else:
            positionals.append(arg)
        i += 1
    return positionals, options


def _status(handle: Handle, options: dict[str, Any]) -> Callable[[], int]:
    from torchx.schedulers import local_view
    from torchx.specs.status import format_handle_status

    app_id = handle.app_id
    record = local_view.status(app_id)
    if record["state"] == "FAILED":
        raise _Decline("a failed app: the full command finds and shows its error")
    text = format_handle_status(handle, record)
    if not options.get("--show-secrets"):
        from torchx.cli.output import mask_values

        text = mask_values(text, local_view.role_envs(app_id))
    return lambda: _print(text)


def _print(text: str) -> int:
    sys.stdout.write(text)
    return 0


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


def _list(options: dict[str, Any]) -> Callable[[], int]:
    from torchx.schedulers import local_view

    scheduler = options.get("-s") or options.get("--scheduler")
    if "-s" in options and "--scheduler" in options:
        raise _Decline("arguments")
    if scheduler not in (None, SCHEDULER):
        raise _Decline(str(scheduler))
    if _config_files_exist():
        # [cli:run] may name another scheduler, [local] another state_dir to list
        raise _Decline("config files")
    from torchx.cli.output import format_app_list, parse_limit, parse_states, select_apps

    # a bad filter raises: the full command says so, in its words
    states = parse_states(options["--state"]) if "--state" in options else None
    limit = parse_limit(options["--limit"]) if "--limit" in options else None
    rows = select_apps(
        (
            (f"{SCHEDULER}://{SESSION}/{app_id}", state, name, start, end)
            for app_id, state, name, start, end in local_view.list_apps_with_times()
        ),
        states,
        limit,
    )
    text = format_app_list(rows)
    return lambda: _print(text)


class _Replica:
    __slots__ = ("id",)

    def __init__(self, rep_id: int) -> None:
        self.id = rep_id


class _Role:
    __slots__ = ("replicas", "role")

    def __init__(self, role: str, replicas: list[_Replica]) -> None:
        self.role = role
        self.replicas = replicas


class _Roles:
    """The little of an AppStatus that ``replicas_of`` reads, from a status record's roles."""

    def __init__(self, roles: list[tuple[str, list[Any]]]) -> None:
        self.roles = [_Role(role, [_Replica(rep[0]) for rep in reps]) for role, reps in roles]


class _OpenedLogs:
    """Stands in for the Runner in ``torchx.cli.logs.stream``: logs opened beforehand."""

    def __init__(self, logs: dict[tuple[str, int], Any]) -> None:
        self._logs = logs

    def log_lines(
        self,
        app_handle: str,
        role_name: str,
        k: int = 0,
        regex: str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        should_tail: bool = False,
        streams: Stream | None = None,
    ) -> Iterable[str]:
        opened: Iterable[str] = self._logs[(role_name, k)]  # with these very options
        return opened


def _log(handle: Handle, options: dict[str, Any]) -> Callable[[], int]:
    from torchx.cli.logs import check_selection, parse_time, replicas_of, stream
    from torchx.schedulers import local_view

    streams = options.get("--streams")
    color = options.get("--color", "auto")
    if streams not in (None, *_STREAMS) or color not in _COLOR:
        raise _Decline("arguments")
    since = parse_time(options["--since"]) if "--since" in options else None
    until = parse_time(options["--until"]) if "--until" in options else None
    check_selection(None, since, until)
    tail = bool(options.get("-t") or options.get("--tail"))
    app_id = handle.app_id
    pairs = replicas_of(_Roles(local_view.status(app_id)["roles"]), handle.role, handle.replica_ids)
    opened = {
        (r, k): local_view.log_lines(app_id, r, k, streams, since, until, tail) for r, k in pairs
    }

    def emit() -> int:
        failed = stream(
            _OpenedLogs(opened), handle, pairs, since=since, until=until, tail=tail, color=color
        )
        return 1 if failed else 0

    return emit


# ------------------------------------------------------- a plugin's scheduler (its handler)


def _load_handler(ref: str) -> Any:
    """The object ``module:attr`` names (the registry's reference, already checked)."""
    import importlib

    module, _, attr = ref.partition(":")
    obj: Any = importlib.import_module(module)
    for name in attr.split("."):
        obj = getattr(obj, name)
    return obj


def _checked_status(fields: Any) -> StatusRecord:
    """A handler's status, if it is well formed and not a failed app's; else declines.

    A FAILED app's status is the full path's: it finds the failed replica's error
    (``torchx.runner.failures``) and says where to read more.
    """
    if not _well_formed(fields) or fields["state"] == "FAILED":
        raise _Decline("status")
    checked: StatusRecord = fields
    return checked


def _well_formed(fields: Any) -> bool:
    """True if a handler's answer is a status record (with ``envs``) of known states."""
    from torchx.specs.status import STATES

    if (
        not isinstance(fields, dict)
        or fields.get("state") not in STATES
        or type(fields.get("num_restarts")) is not int
        or not isinstance(fields.get("msg"), str)
        or not isinstance(fields.get("ui_url"), (str, type(None)))
        or not isinstance(fields.get("roles"), list)
        or not isinstance(fields.get("envs"), list)
        or not isinstance(fields.get("errors", {}), dict)
    ):
        return False
    for role, replicas in fields["roles"]:
        for rep_id, state, exit_code, host in replicas:
            if (
                not isinstance(role, str)
                or type(rep_id) is not int
                or state not in STATES
                or not isinstance(exit_code, (int, type(None)))
                or not isinstance(host, str)
            ):
                return False
    return True


def _plugin_status(handler: Any, handle: Handle, options: dict[str, Any]) -> Callable[[], int]:
    from torchx.specs.status import format_handle_status

    fields = _checked_status(handler.status(handle.app_id))
    text = format_handle_status(handle, fields)
    if not options.get("--show-secrets"):
        from torchx.cli.output import mask_values

        # The full path masks with the AppDef its scheduler gives back, which a handler
        # reads without the spec types' checks: where masking would change what is
        # printed, the full path decides. Otherwise the text is the same either way.
        if mask_values(text, fields["envs"]) != text:
            raise _Decline("a secret to mask")
    return lambda: _print(text)


def _plugin_log(handler: Any, handle: Handle, options: dict[str, Any]) -> Callable[[], int]:
    from torchx.cli.logs import replicas_of, stream

    streams = options.get("--streams")
    color = options.get("--color", "auto")
    if streams not in (None, *_STREAMS) or color not in _COLOR:
        raise _Decline("arguments")
    app_id = handle.app_id
    fields = _checked_status(handler.status(app_id))
    pairs = replicas_of(_Roles(fields["roles"]), handle.role, handle.replica_ids)
    opened = {}
    for r, k in pairs:
        lines = handler.log(app_id, r, k, streams, fields)
        if lines is None:
            raise _Decline(f"log of {r}/{k}")
        opened[(r, k)] = lines

    def emit() -> int:
        return 1 if stream(_OpenedLogs(opened), handle, pairs, color=color) else 0

    return emit


def _plugin_cancel(handler: Any, handle: Handle, options: dict[str, Any]) -> Callable[[], int]:
    """``cancel`` of an app that has ended: nothing to do, as the full command says."""
    fields = _checked_status(handler.status(handle.app_id))
    from torchx.specs.status import ENDED

    if fields["state"] not in ENDED:
        raise _Decline("a live app: the scheduler cancels it")
    text = f"{handle} had already ended: {fields['state']}; nothing to cancel\n"
    return lambda: _print(text)


_PLUGIN_RUN = {"status": _plugin_status, "log": _plugin_log, "cancel": _plugin_cancel}


_RUN = {"status": _status, "log": _log}


def run(argv: Sequence[str]) -> int | None:
    """The exit status of ``torchx *argv`` answered here, or None: run the full command.

    Declines (None) before printing anything. Whether the marker was missing or stale
    is kept in :data:`stale`, so that the full run can call :func:`remember`.
    """
    global stale
    stale = False
    if not argv or argv[0] not in _FLAGS:
        return None
    command = argv[0]
    handle = None
    try:
        # options it does not handle: decline at once, before importing anything
        positionals, options = _options(argv[1:], _FLAGS[command])
        if command == "list":
            if positionals:
                return None
            scheduler = options.get("-s", options.get("--scheduler", SCHEDULER))
        elif len(positionals) == 1:
            # parsed here, once; what follows reads its parts
            handle = _parsed(positionals[0], target=command == "log")
            scheduler = handle.scheduler_backend
        else:
            return None
        if scheduler == SCHEDULER:
            if command not in _LOCAL_COMMANDS:
                return None
            import torchx.schedulers.local_view  # noqa: F401  (an older torchx-runner lacks it)
        elif command not in _PLUGIN_RUN or not set(options) <= set(_PLUGIN_FLAGS[command]):
            return None
    except (_Decline, ImportError):
        return None
    found = _found()
    if found is None:
        stale = True
        return None
    commands, local, handlers = found
    if command not in commands:
        return None
    try:
        if handle is None:
            emit = _list(options) if local else None
        elif scheduler == SCHEDULER:
            emit = _RUN[command](handle, options) if local else None
        else:
            from torchx.schedulers.quick import declared_calls

            ref = handlers.get(scheduler)
            handler = None if ref is None else _load_handler(ref)
            # only what the handler declares it answers without the Runner
            if handler is None or command not in declared_calls(handler):
                return None
            emit = _PLUGIN_RUN[command](handler, handle, options)
    except Exception:  # _Decline, local_view.Unsure, a handler's doubt...: the full command says
        return None
    return None if emit is None else emit()


#: Set by :func:`run` when the quick path declined for want of a valid marker.
stale = False
