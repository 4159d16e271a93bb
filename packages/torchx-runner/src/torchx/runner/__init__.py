"""The Runner: submit AppDefs and components to schedulers, then follow them by handle.

::

    from torchx.runner import get_runner

    with get_runner() as runner:
        handle = runner.run(app, scheduler="local", cfg={"log_dir": "/tmp/logs"})
        print(runner.wait(handle, wait_interval=1))

See :mod:`torchx.runner.api` for the Runner and :mod:`torchx.runner.config` for
``.torchxconfig`` files. Names are loaded on first use, so importing this package
costs nearly nothing; a scheduler's module is imported only when it is used.
"""

from __future__ import annotations

from torchx.runner._version import __version__

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from torchx.runner.api import (
        AppWaitTimeout,
        InvalidAppError,
        Runner,
        UnknownAppError,
        UnknownSchedulerError,
        get_runner,
    )
    from torchx.runner.config import ConfigError
    from torchx.schedulers.helpers.retry import Backoff, RetriesExhaustedError

_LAZY: dict[str, str] = {
    "AppWaitTimeout": "torchx.runner.api",
    "InvalidAppError": "torchx.runner.api",
    "Runner": "torchx.runner.api",
    "UnknownAppError": "torchx.runner.api",
    "UnknownSchedulerError": "torchx.runner.api",
    "get_runner": "torchx.runner.api",
    "Backoff": "torchx.schedulers.helpers.retry",
    "RetriesExhaustedError": "torchx.schedulers.helpers.retry",
    "ConfigError": "torchx.runner.config",
}

__all__ = [
    "AppWaitTimeout",
    "Backoff",
    "ConfigError",
    "InvalidAppError",
    "RetriesExhaustedError",
    "Runner",
    "UnknownAppError",
    "UnknownSchedulerError",
    "__version__",
    "get_runner",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'torchx.runner' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})
