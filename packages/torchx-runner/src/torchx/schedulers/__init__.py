"""Schedulers: the contract (:mod:`torchx.schedulers.api`) and the built-in local scheduler.

Schedulers are found by name through the plugin registry
(:func:`get_scheduler_factories`); a scheduler's module is imported only when it is
first used.
"""

from __future__ import annotations

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: the supervisor imports this package,
if TYPE_CHECKING:  # and importing typing would cost it about 8 ms per app
    from typing import Any

    from torchx.schedulers.api import Scheduler, SchedulerFactory


def get_scheduler_factories() -> dict[str, SchedulerFactory]:
    """Every installed scheduler name mapped to its (lazily loaded) factory."""
    from torchx.specs.plugins import get_registry

    return {name: _lazy(entry) for name, entry in get_registry().schedulers.items()}


def _lazy(entry: Any) -> SchedulerFactory:
    def factory(session_name: str, **kwargs: Any) -> Scheduler[Any]:
        scheduler: Scheduler[Any] = entry.load()(session_name, **kwargs)
        return scheduler

    factory.__name__ = f"create_{entry.name}_scheduler"
    return factory
