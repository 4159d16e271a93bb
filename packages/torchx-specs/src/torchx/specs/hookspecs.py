"""What a TorchX plugin can contribute: the hook specifications and the ``hookimpl`` marker.

A plugin is a small, cheap-to-import module named by an entry point in the
``torchx`` group. It implements some of the hooks below, each returning a mapping
from a name to a *lazy reference* (``"package.module:attribute"``) that TorchX
imports only when that name is used. So a plugin for a cloud never imports the
cloud's SDK just because ``torchx --help`` ran::

    # my_plugin/plugin.py  (pyproject.toml: [project.entry-points.torchx] my = "my_plugin.plugin")
    from torchx.specs.hookspecs import hookimpl

    @hookimpl
    def torchx_schedulers() -> dict[str, str]:
        return {"my_cloud": "my_plugin.scheduler:create_scheduler"}

    @hookimpl
    def torchx_named_resources() -> dict[str, str]:
        return {"my_cloud.gpu8": "my_plugin.resources:gpu8"}

Every hook takes no arguments and returns a mapping (a ``dict`` is fine). The
registry in :mod:`torchx.specs.plugins` calls each plugin's implementation
separately (not through pluggy's hook caller), so pluggy's ``firstresult``,
``tryfirst``/``trylast`` and hook wrappers do not apply: every plugin's result is
collected, whatever order plugins were registered in. The registry merges them, records a name given by two plugins as a
clash and resolves it deterministically. A hook that raises or returns something
that is not a ``Mapping[str, ...]`` of well-formed values is reported as a failure
of that plugin and its result is ignored; the other hooks and plugins still work.

A lazy reference is ``"pkg.module:attr"`` (``attr`` may be dotted, ``Cls.method``);
where noted, a bare ``"pkg.module"`` names a module. Importing this module imports
pluggy, which is fine for plugin modules; ``import torchx.specs`` never does.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, NamedTuple

import pluggy

if TYPE_CHECKING:
    from torchx.specs.api import Resource

#: Project name shared by the markers and the plugin manager.
PROJECT_NAME = "torchx"

#: Marks a function in this module as a hook specification.
hookspec = pluggy.HookspecMarker(PROJECT_NAME)

#: Marks a function in a plugin module as a hook implementation: ``@hookimpl``.
hookimpl = pluggy.HookimplMarker(PROJECT_NAME)


# --- Running jobs -------------------------------------------------------------------


@hookspec
def torchx_schedulers() -> Mapping[str, str]:  # type: ignore[empty-body]
    """Schedulers this plugin provides: ``{scheduler name: "module:factory"}``.

    Signature: ``torchx_schedulers() -> Mapping[str, str]``.

    Each value is a lazy reference to a factory with the signature
    ``create_scheduler(session_name: str, **kwargs: object) -> Scheduler``
    (the Scheduler contract lives in ``torchx.schedulers.contract.api``). The factory's
    module, and so the scheduler's SDK, is imported only when a job uses that
    scheduler. Example: ``{"slurm": "torchx_slurm.scheduler:create_scheduler"}``.

    Results of all plugins are merged by name; a name given twice is a clash.
    """


@hookspec
def torchx_named_resources() -> Mapping[str, str | Callable[[], Resource]]:  # type: ignore[empty-body]
    """Named resources this plugin provides: ``{name: "module:function" or function}``.

    Signature: ``torchx_named_resources() -> Mapping[str, str | Callable[[], Resource]]``.

    Each value is either a lazy reference to, or (when defining it costs nothing
    to import) the object itself: a function taking no arguments and returning a
    :class:`~torchx.specs.Resource`. Names are usually ``family.size`` such as
    ``gpu.small`` or ``aws_p4d.24xlarge``. Results of all plugins are merged by
    name; a name given twice is a clash. torchx-specs contributes its generic
    sizes through this very hook (:mod:`torchx.specs.builtin_plugin`).
    """


# --- Describing jobs ----------------------------------------------------------------


@hookspec
def torchx_components() -> Mapping[str, str]:  # type: ignore[empty-body]
    """Components this plugin provides: ``{name or group: "module:function" or "module"}``.

    Signature: ``torchx_components() -> Mapping[str, str]``.

    * ``"dist.ddp": "my_pkg.components.dist:ddp"`` names one component function
      (a function returning an ``AppDef``).
    * ``"my": "my_pkg.components"`` (a bare module, no ``:``) names a *group*:
      every public function defined in that module becomes ``my.<function>``
      and every public function of a submodule ``sub`` becomes
      ``my.sub.<function>``. A group name starting with ``_`` adds no prefix,
      as in upstream TorchX's ``torchx.components`` entry points.

    Results of all plugins are merged by name; a name given twice is a clash.
    """


# --- The command line ---------------------------------------------------------------


@hookspec
def torchx_cli_commands() -> Mapping[str, str]:  # type: ignore[empty-body]
    """``torchx`` subcommands this plugin provides: ``{subcommand: "module:attr"}``.

    Signature: ``torchx_cli_commands() -> Mapping[str, str]``.

    Each value is a lazy reference to a command object (or a class the CLI
    instantiates with no arguments) with a one-line ``help: str``,
    ``add_arguments(parser: argparse.ArgumentParser) -> None`` and
    ``run(args: argparse.Namespace) -> int`` (the exit status). The CLI may
    import the module to show ``help``, so keep heavy imports inside ``run``.
    Results of all plugins are merged by name; a name given twice is a clash.
    """


@hookspec
def torchx_quick_handlers() -> Mapping[str, str]:  # type: ignore[empty-body]
    """Quick handlers of this plugin's schedulers: ``{scheduler name: "module:attr"}``.

    Signature: ``torchx_quick_handlers() -> Mapping[str, str]``.

    Optional. Each value is a lazy reference to an object with the methods of
    ``torchx.schedulers.helpers.quick.QuickHandler``, which lets ``torchx status``, ``log`` and
    ``cancel`` of that scheduler's apps skip the registry, argparse, attrs and the
    Runner (most of a command's cost when the backend answers in milliseconds). The
    handler answers exactly as the scheduler would, or declines and the full command
    runs. The ``torchx`` command uses it only while the scheduler of that name comes
    from the same distribution as the handler. Example:
    ``{"slurm": "torchx_slurm.quick:HANDLER"}``.
    Results of all plugins are merged by name; a name given twice is a clash.
    """


class Hook(NamedTuple):
    """What one hook contributes: the registry's ``kind`` of entry and its label in messages."""

    kind: str
    label: str


#: The one table of hooks, in the order the registry reports them: hook name -> what it
#: contributes. The registry derives its kinds and labels from it, so adding a hook is a
#: new function above and a row here (and its entry in docs/plugins.md, which a test checks).
HOOKS: Mapping[str, Hook] = MappingProxyType(
    {
        "torchx_schedulers": Hook("scheduler", "scheduler"),
        "torchx_named_resources": Hook("named_resource", "named resource"),
        "torchx_components": Hook("component", "component"),
        "torchx_cli_commands": Hook("cli_command", "CLI command"),
        "torchx_quick_handlers": Hook("quick_handler", "quick handler"),
    }
)

#: The hook names, in the order the registry reports them.
HOOK_NAMES: tuple[str, ...] = tuple(HOOKS)

#: How messages name a plugin registered in-process (``register_builtin``) rather than
#: installed: the ``group`` of its entries.
IN_PROCESS = "<in-process>"
