"""Following logs (``log -t``, ``run --log``) across the attempts of a retried app.

A scheduler whose replicas restart in a new container or pod (docker, Kubernetes) ends
a replica's followed log with its attempt, while the app restarts and runs on; the local
scheduler's followed log runs to the app's end by itself. :func:`follow` streams, and
when the logs end before the app does, waits for the app's next attempt (its
``num_restarts`` grows), prints one marker line and streams the replicas of the new
attempt: those that have not succeeded (a replica restarted alone, under the ``REPLICA``
policy, is followed again; one that succeeded is not printed twice).
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from torchx.cli.logs import Unread
    from torchx.runner.api import Runner
    from torchx.specs.api import AppStatus


def marker(handle: str, restarts: int) -> str:
    """The line printed between two attempts of an app.

    >>> marker("docker://torchx/app-1", 1)
    '--- docker://torchx/app-1: restarted (restart 1); the logs of attempt 2 follow ---'
    """
    return f"--- {handle}: restarted (restart {restarts}); the logs of attempt {restarts + 1} follow ---"


def follow(
    runner: Runner,
    handle: str,
    pairs: list[tuple[str, int]],
    status: AppStatus | None,
    as_json: bool = False,
    **options: Any,
) -> Unread:
    """Streams the ``pairs``' logs (``stream``'s ``options``, following) attempt after
    attempt until the app ends; returns how many replicas' logs could not be read (it
    stops at the first attempt with such an error), as ``stream`` does. ``as_json``:
    through the JSON sink (``torchx.cli.log_json``, its ``options``), a ``LogAttempt``
    document between two attempts."""
    from torchx.cli.logs import Unread, stream

    restarts = status.num_restarts if status is not None else 0
    while True:
        if as_json:
            from torchx.cli.log_json import print_lines

            failed = print_lines(runner, handle, pairs, tail=True, **options)
        else:
            failed = stream(runner, handle, pairs, tail=True, **options)
        if failed:
            return failed
        status = _next_attempt(runner, handle, restarts)
        if status is None:
            return Unread()
        restarts = status.num_restarts
        wanted = set(pairs)
        pairs = [
            (r.role, rep.id)
            for r in status.roles
            for rep in r.replicas
            if (r.role, rep.id) in wanted and rep.state.name != "SUCCEEDED"
        ] or pairs
        if as_json:
            from torchx.cli.log_json import print_attempt

            print_attempt(handle, restarts, marker(handle, restarts))
            continue
        out = options.get("out") or sys.stdout  # where the logs go (run --json: stderr)
        out.write(marker(handle, restarts) + "\n")
        out.flush()


def _next_attempt(runner: Runner, handle: str, restarts: int) -> AppStatus | None:
    """The app's status once it has restarted since ``restarts``; None once it has ended
    (or is gone). Waits where the scheduler can block on a change, else polls."""
    import time

    interval = 0.05
    while True:
        status = runner.status(handle)
        if status is None or status.is_terminal():
            return None
        if status.num_restarts > restarts:
            return status
        if not runner.wait_for_change(handle, 5.0):
            time.sleep(interval)
            interval = min(interval * 2, 1.0)
