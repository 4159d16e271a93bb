"""The read-only, attrs-free view of local apps that ``torchx status``, ``list`` and ``log`` use.

This is the name the ``torchx`` command imports; the view itself is
``torchx.schedulers._local.view`` (in the local scheduler's own folder), where its
documentation is. An answer from it is always the one
:class:`~torchx.schedulers.local_scheduler.LocalScheduler` would give, or :class:`Unsure`.
"""

from torchx.schedulers._local.view import (
    FACTORY,
    Unsure,
    list_apps,
    list_apps_with_times,
    log_lines,
    role_envs,
    status,
)

__all__ = [
    "FACTORY",
    "Unsure",
    "list_apps",
    "list_apps_with_times",
    "log_lines",
    "role_envs",
    "status",
]
