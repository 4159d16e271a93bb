"""Is it the quick path's to answer? The record a full run leaves for this environment.

The CLI is assembled from the installed plugins, and a plugin may replace the
``status``, ``list``, ``log`` or ``cancel`` command, the ``local`` scheduler or another
plugin's scheduler. So the quick path (:mod:`torchx.cli._quick`) answers only when the
full path, run earlier in this same environment, found in the plugin registry that the
command is torchx-cli's own and ``local`` is torchx-runner's (or, for a plugin's
scheduler, that the quick handler comes from the distribution that provides the
scheduler, neither name in a clash), with no plugin failing to load.

:func:`remember` (called after a full run) writes that finding to
``$XDG_CACHE_HOME/torchx/cli-quick-<env>.txt`` (else ``~/.cache/torchx``) under the key
of the ``--help`` cache (:func:`torchx.cli._help_cache.environment_key`: the
interpreter, ``sys.path``, the ``TORCHX_*`` variables, torchx-cli's files, the name and
mtime of every installed distribution's metadata) plus the mtime of every plugin
module; :func:`remembered` reads it back, and anything changed makes it stale, so
installing, upgrading, removing or editing a plugin sends the next command down the
full path, which looks again. ``TORCHX_NO_PLUGIN_CACHE=1`` turns the quick path off, as
it does the caches, and so does a ``sys.meta_path`` finder that supplies distributions
(the key cannot see those; the registry then distrusts its cache too).
:func:`handler_verdicts` says why a plugin's handler may not answer (``torchx plugins
--check`` shows it).
"""

from __future__ import annotations

import os
import sys

from torchx.cli._quick import COMMANDS, LOCAL_COMMANDS, LOCAL_FACTORY, SCHEDULER

TYPE_CHECKING = False  # typing costs milliseconds; the quick path exists to save them
if TYPE_CHECKING:
    from typing import Any

_FORMAT = "torchx-cli-quick/2"


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
    found = remembered()
    if found is None:
        return None
    commands, local, _handlers = found
    return commands & LOCAL_COMMANDS if local else frozenset()


def remembered() -> tuple[frozenset[str], bool, dict[str, str]] | None:
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
    found = remembered()
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
        from torchx.schedulers.helpers.files import write_private_atomic

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
