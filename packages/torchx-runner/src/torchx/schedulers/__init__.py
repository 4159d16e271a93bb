"""Schedulers: the contract (:mod:`torchx.schedulers.api`) and the built-in local scheduler.

Schedulers are found by name through the plugin registry
(:func:`get_scheduler_factories`); a scheduler's module is imported only when it is
first used. As in upstream TorchX, :class:`Scheduler` and :class:`SchedulerFactory`
are importable from here too (loaded from :mod:`torchx.schedulers.api` on first use):

>>> from torchx.schedulers import get_default_scheduler_name, get_scheduler_factories
>>> name = get_default_scheduler_name()
>>> name, name in get_scheduler_factories()
('local', True)
"""

from __future__ import annotations

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: the supervisor imports this package,
if TYPE_CHECKING:  # and importing typing would cost it about 8 ms per app
    from typing import Any

    from torchx.schedulers.api import Scheduler, SchedulerFactory


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
        from torchx.schedulers import api

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
