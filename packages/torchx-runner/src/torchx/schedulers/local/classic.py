"""Upstream TorchX's local-scheduler names, over this scheduler's own pieces.

Code written against upstream's ``torchx.schedulers.local_scheduler`` imports these
three from it (this module's names are reachable there, imported on first use):

* :class:`PopenRequest`: upstream's request shape (the replicas' :class:`ReplicaParam`
  per role, their log directories), made from this scheduler's own request (``LocalRequest``)
  with :meth:`PopenRequest.of` (``PopenRequest.of(info.request)`` after a dry run);
* :class:`LogIterator`: the lines of one log file, followed while the app runs
  (:func:`torchx.schedulers.helpers.follow.follow_file`, asking the scheduler whether the
  app has ended at most once a second);
* :class:`SignalException`: what :func:`termination_raises` turns SIGTERM (and SIGINT)
  into while a foreground wait runs, so that the waiter's cleanup (cancelling the app)
  runs instead of the process dying. ``ComponentTestCase.run_component`` waits under it.

>>> from torchx.schedulers.local.scheduler import LocalScheduler
>>> from torchx.specs import AppDef, Role
>>> sched = LocalScheduler("demo")
>>> info = sched.submit_dryrun(AppDef("hi", [Role("echo", "", entrypoint="echo", args=["hi"])]), {})
>>> param = PopenRequest.of(info.request).role_params["echo"][0]
>>> param.args, param.stdout.endswith("/echo/0/stdout.log")
(['echo', 'hi'], True)
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from torchx.schedulers.local.images import ReplicaParam

if TYPE_CHECKING:
    from torchx.schedulers.contract.api import Scheduler
    from torchx.schedulers.local.request import LocalRequest

__all__ = ["LogIterator", "PopenRequest", "SignalException", "termination_raises"]


@dataclass
class PopenRequest:
    """A local app as upstream's request named it: each role's replicas and log directories."""

    app_id: str
    log_dir: str
    role_params: dict[str, list[ReplicaParam]] = field(default_factory=dict)
    role_log_dirs: dict[str, list[str]] = field(default_factory=dict)

    @classmethod
    def of(cls, request: LocalRequest) -> PopenRequest:
        """``request`` (what :meth:`LocalScheduler.submit_dryrun` made) in this shape.

        Each replica's command, environment and directory are those it will run with
        (macros substituted; the scheduler's own variables are added to the environment
        when it starts); ``stdout``/``stderr`` are its log files.
        """
        out = cls(app_id=request.app_id, log_dir=request.log_dir)
        for role in request.roles:
            out.role_params[role.name] = [
                ReplicaParam(
                    args=[rep.entrypoint, *rep.args],
                    env=dict(rep.env),
                    stdout=os.path.join(rep.log_dir, "stdout.log"),
                    stderr=os.path.join(rep.log_dir, "stderr.log"),
                    cwd=rep.cwd,
                )
                for rep in role.replicas
            ]
            out.role_log_dirs[role.name] = [rep.log_dir for rep in role.replicas]
        return out


class LogIterator:
    """The lines of ``log_file``, followed (``should_tail``) until app ``app_id`` has ended.

    Any scheduler whose replicas write plain log files can use it; the app has ended
    once ``scheduler.describe`` says it is terminal or no longer knows it (asked at most
    once per ``interval`` seconds, and only when the reader has caught up with the file).
    A file that does not exist yet is waited for while following.
    """

    def __init__(
        self,
        app_id: str,
        log_file: str,
        scheduler: Scheduler[Any],
        should_tail: bool = True,
        interval: float = 1.0,
    ) -> None:
        self._app_id = app_id
        self._log_file = log_file
        self._scheduler = scheduler
        self._should_tail = should_tail
        self._interval = interval

    def _ended(self) -> bool:
        from torchx.specs.api import is_terminal

        desc = self._scheduler.describe(self._app_id)
        return desc is None or is_terminal(desc.state)

    def __iter__(self) -> Iterator[str]:
        from torchx.schedulers.helpers.follow import EveryInterval, follow_file

        is_done = EveryInterval(self._interval, self._ended)
        return iter(follow_file(self._log_file, should_tail=self._should_tail, is_done=is_done))


class SignalException(Exception):
    """A termination signal, raised in the main thread by :func:`termination_raises`.

    ``sigval`` is the signal received (``signal.SIGTERM``, ``signal.SIGINT``).
    """

    def __init__(self, msg: str, sigval: signal.Signals) -> None:
        super().__init__(msg)
        self.sigval = sigval


@contextmanager
def termination_raises() -> Iterator[None]:
    """Within it, SIGTERM and SIGINT raise :class:`SignalException` in the main thread.

    The previous handlers come back on exit. Outside the main thread (where Python
    cannot install handlers) it changes nothing.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def raise_it(signum: int, frame: object) -> None:
        sig = signal.Signals(signum)
        raise SignalException(f"process received {sig.name}", sig)

    previous = {sig: signal.signal(sig, raise_it) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
