"""The Runner: run an AppDef (or a component) on a scheduler, then follow it by its handle.

Usage::

    from torchx.runner import get_runner

    with get_runner() as runner:
        handle = runner.run_component("dist.ddp", ["-j", "2x4", "--script", "train.py"], "local")
        print(runner.wait(handle, wait_interval=1, timeout=600))
        for line in runner.log_lines(handle, "train", k=0):
            print(line, end="")

What each call does:

* ``run(app, scheduler, cfg)`` = ``dryrun`` + workspace build + ``schedule``; returns the
  app handle ``{scheduler}://{session}/{app_id}``. ``run_component`` /
  ``dryrun_component`` first materialize the component's AppDef from its arguments.
* ``dryrun`` validates everything (the app, the run config, strictly, against the
  scheduler's run options) and returns the native request as an ``AppDryRunInfo``,
  with no side effect: the caller's AppDef is not changed, no workspace is built and
  nothing is written. ``schedule(dryrun_info)`` submits it.
* ``status``, ``wait``, ``describe``, ``log_lines``, ``cancel``, ``delete`` take a handle.
  A handle carries all a later process needs: its scheduler name finds the scheduler
  (through the plugin registry), its app id finds the app; no state of this Runner is
  needed. ``list(scheduler)`` lists a scheduler's apps with their handles.
* A transient failure of the backend (``TransientSchedulerError``, ``TimeoutError``,
  ``ConnectionError``) while following an app is retried with exponential backoff
  (:class:`~torchx.schedulers.helpers.retry.Backoff`), after the scheduler's
  ``classify_error`` mapped its SDK's exceptions; when retries run out, a
  ``RetriesExhaustedError`` is raised: an app is never reported FAILED because its
  scheduler could not be reached. Submitting is never retried (not idempotent).

The Runner is two halves over one base, each a module to read on its own:
:mod:`torchx.runner.submitting` (``run``, ``dryrun``, ``schedule``, ``materialize``)
and :mod:`torchx.runner.following` (``status``, ``wait``, ``describe``, ``log_lines``,
``cancel``, ``delete``, ``list``), sharing :mod:`torchx.runner.base` (the schedulers,
retries, run options from ``.torchxconfig``).

Schedulers are created on first use, one instance per name, by the factories the
plugin registry provides (so a scheduler's module is imported only when used), and
closed by :meth:`Runner.close` (or leaving the ``with`` block).

With ``use_config`` (the default of :func:`get_runner`), the ``.torchxconfig`` files
(:mod:`torchx.runner.config`) give defaults under the explicit ``cfg`` and component
arguments.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from torchx.runner.base import (
    DEFAULT_SESSION_NAME,
    ENV_TORCHX_PARENT_RUN_ID,
    AppWaitTimeout,
    InvalidAppError,
)
from torchx.runner.following import Following
from torchx.runner.submitting import Submitting
from torchx.specs.errors import (
    UnknownAppError,
    UnknownSchedulerError,
)

if TYPE_CHECKING:
    from torchx.schedulers.contract.api import (
        SchedulerFactory,
    )
    from torchx.schedulers.helpers.retry import Backoff

__all__ = [
    "DEFAULT_SESSION_NAME",
    "ENV_TORCHX_PARENT_RUN_ID",
    "AppWaitTimeout",
    "InvalidAppError",
    "Runner",
    "SchedulerFactory",
    "UnknownAppError",
    "UnknownSchedulerError",
    "get_runner",
]


def __getattr__(name: str) -> Any:
    # ``SchedulerFactory`` is a typing Protocol of torchx.schedulers.contract.api (loaded on use)
    if name == "SchedulerFactory":
        from torchx.schedulers.contract.api import SchedulerFactory

        return SchedulerFactory
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class Runner(Submitting, Following):
    """Runs AppDefs on schedulers and follows them by handle.

    Args:
        name: the session name carried by the handles of apps this runner submits
        scheduler_factories: scheduler name -> ``create_scheduler(session_name, **kw)``
        component_defaults: component name -> default arguments (``{"j": "2x8"}``);
            they win over ``[component:...]`` sections of ``.torchxconfig``
        scheduler_params: keyword arguments given to every scheduler factory
        use_config: read ``.torchxconfig`` files for run options under the explicit
            ``cfg`` and for component defaults
        backoff: how transient scheduler failures are retried (default ``Backoff()``)
    """


def get_runner(
    name: str | None = None,
    component_defaults: Mapping[str, Mapping[str, str]] | None = None,
    *,
    use_config: bool = True,
    backoff: Backoff | None = None,
    **scheduler_params: Any,
) -> Runner:
    """A Runner for every installed scheduler; use it as a context manager.

    ``name`` is the session name in the handles (default ``"torchx"``);
    ``scheduler_params`` are passed to every scheduler's factory. Nothing is imported
    or created until a scheduler is used; ``.torchxconfig`` files are read when a run
    needs them (``use_config=False`` ignores them).

    >>> with get_runner() as runner:
    ...     "local" in runner.scheduler_backends()
    True
    """
    from torchx.schedulers import get_scheduler_factories

    return Runner(
        name or DEFAULT_SESSION_NAME,
        get_scheduler_factories(),
        component_defaults,
        scheduler_params,
        use_config=use_config,
        backoff=backoff,
    )
