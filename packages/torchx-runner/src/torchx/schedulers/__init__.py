"""Schedulers: the contract, the helpers for writing one, and the built-in local scheduler.

Three folders, read in this order by a newcomer writing a scheduler plugin:

* :mod:`torchx.schedulers.contract`: what every scheduler implements and raises
  (``api``: the :class:`Scheduler` class; ``errors``; ``capabilities``; ``states``);
* :mod:`torchx.schedulers.helpers`: the pieces plugins share instead of writing them
  again (app ids, command runners, retries, log followers, ...);
* :mod:`torchx.schedulers.local`: the built-in ``local`` scheduler, a whole scheduler
  built from the two;
* and :mod:`torchx.schedulers.testing`, the conformance kit a plugin's tests run.

The modules' earlier names (``torchx.schedulers.api``, ``.errors``, ``.ids``,
``.local_scheduler``, ... one flat folder, as upstream TorchX has them) still import:
each gives the very module of its new home, so code written for them, its type checks
and its ``mock.patch`` targets all keep working.

Schedulers are found by name through the plugin registry
(:func:`get_scheduler_factories`); a scheduler's module is imported only when it is
first used. As in upstream TorchX, :class:`Scheduler` and :class:`SchedulerFactory`
are importable from here too (loaded from :mod:`torchx.schedulers.contract.api` on first use):

>>> from torchx.schedulers import get_default_scheduler_name, get_scheduler_factories
>>> name = get_default_scheduler_name()
>>> name, name in get_scheduler_factories()
('local', True)
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: the supervisor imports this package,
if TYPE_CHECKING:  # and importing typing would cost it about 8 ms per app
    from importlib.machinery import ModuleSpec
    from typing import Any

    from torchx.schedulers.contract.api import Scheduler, SchedulerFactory


#: the scheduler ``torchx run`` uses when none is named (upstream's ``local_cwd`` is
#: another name for it)
_DEFAULT_SCHEDULER = "local"
# the distribution whose schedulers upstream called the defaults
_BUILTIN_DISTRIBUTION = "torchx-runner"


def get_scheduler_factories(
    group: str = "torchx.schedulers", skip_defaults: bool = False
) -> dict[str, SchedulerFactory]:
    """Every installed scheduler name mapped to its (lazily loaded) factory.

    Calling a factory imports its scheduler's module; listing them imports none.
    Upstream's arguments are accepted: ``skip_defaults=True`` leaves out the
    built-in schedulers (``local``, ``local_cwd``); ``group`` is kept for upstream
    calls only: schedulers come from every plugin group (``torchx`` and upstream's
    ``torchx.schedulers``), so another value is refused.
    """
    if group != "torchx.schedulers":
        raise ValueError(
            f"get_scheduler_factories(group={group!r}): schedulers are registered through "
            "the 'torchx' plugin group or upstream's 'torchx.schedulers'; leave group out"
        )
    from torchx.specs.plugins import get_registry

    return {
        name: _lazy(entry)
        for name, entry in get_registry().schedulers.items()
        if not (skip_defaults and entry.distribution == _BUILTIN_DISTRIBUTION)
    }


def get_default_scheduler_name() -> str:
    """The scheduler used when none is named: ``"local"`` (nothing is imported)."""
    return _DEFAULT_SCHEDULER


def __getattr__(name: str) -> Any:
    # upstream exports the contract's two names here; loading them costs the api module,
    # so only on use
    if name in ("Scheduler", "SchedulerFactory"):
        from torchx.schedulers.contract import api

        return getattr(api, name)
    raise AttributeError(f"module 'torchx.schedulers' has no attribute {name!r}")


__all__ = [
    "Scheduler",
    "SchedulerFactory",
    "get_default_scheduler_name",
    "get_scheduler_factories",
]


def _lazy(entry: Any) -> SchedulerFactory:
    def factory(session_name: str, **kwargs: Any) -> Scheduler[Any]:
        scheduler: Scheduler[Any] = entry.load()(session_name, **kwargs)
        return scheduler

    factory.__name__ = f"create_{entry.name}_scheduler"
    return factory


class _EarlierNames:
    """Finds the flat layout's names (``torchx.schedulers.api``): see :mod:`._moved`.

    At the end of ``sys.meta_path``, so it is asked only for names no file answers;
    it loads :mod:`._moved` only for one of this package's.
    """

    @staticmethod
    def find_spec(fullname: str, path: object = None, target: object = None) -> ModuleSpec | None:
        if fullname.rpartition(".")[0] != __name__:
            return None
        from torchx.schedulers._moved import find_spec

        return find_spec(fullname)


if _EarlierNames.__qualname__ not in {getattr(f, "__qualname__", "") for f in sys.meta_path}:
    sys.meta_path.append(_EarlierNames)
