"""What the conformance checks share: the knobs a plugin sets, and the checks' helpers.

:class:`Checks` is the base of every group of checks. It declares the class attributes
the checks read (set, with their defaults, on
:class:`~torchx.schedulers.testing.SchedulerConformance`) and the helpers several groups
use: what ``list()`` holds, how a replica ended, waiting for a log to grow or to stop.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

import pytest

from torchx.schedulers.contract.api import DescribeAppResponse, Stream
from torchx.schedulers.contract.capabilities import Capability
from torchx.schedulers.testing.kit import Kit, in_thread
from torchx.specs import AppState, CfgVal, Role

#: Seconds without a new line after which a replica's output counts as stopped (it
#: printed every 0.1 s while running).
QUIET = 1.5
#: Seconds after which the failing replica of the wait check exits.
WAIT_FAIL_AFTER = 3.0


def role_fields(role: Role) -> tuple[Any, ...]:
    """What a described role must keep of the submitted one."""
    return (
        role.name,
        role.image,
        role.entrypoint,
        list(role.args),
        dict(role.env),
        role.num_replicas,
        role.max_retries,
    )


def one_line(e: BaseException, *names: str) -> None:
    text = str(e)
    assert text.strip() and "\n" not in text.strip(), f"not one line: {text!r}"
    for name in names:
        assert name in text, f"the message does not name {name!r}: {text!r}"


def wrong_value(opt_type: Any) -> CfgVal:
    """A value of another type than ``opt_type`` (a str for a number, a number for a str)."""
    return 12345 if opt_type is str else "not-a-valid-value"


def is_subsequence(part: Sequence[str], whole: Sequence[str]) -> bool:
    it = iter(whole)
    return all(any(item == x for x in it) for item in part)


def snapshot(paths: Iterable[Path]) -> dict[str, tuple[int, int]]:
    """Every file and directory under ``paths``: (size, mtime_ns), by path."""
    found: dict[str, tuple[int, int]] = {}
    for root in paths:
        root = Path(root)
        if not root.exists():
            continue
        for dirpath, dirnames, filenames in os.walk(root):
            for name in [*dirnames, *filenames]:
                path = os.path.join(dirpath, name)
                try:
                    st = os.lstat(path)
                except FileNotFoundError:
                    continue
                found[path] = (st.st_size if name in filenames else 0, st.st_mtime_ns)
    return found


class Checks:
    """The base of the check groups: the attributes they read and their shared helpers."""

    #: Seconds an app (or a call) may take to end.
    timeout: ClassVar[float]
    #: Seconds from ``cancel`` to CANCELLED.
    cancel_timeout: ClassVar[float]
    #: Seconds a call about an unknown app id may take.
    unknown_id_timeout: ClassVar[float]
    #: The N of apps with N replicas.
    replicas: ClassVar[int]
    #: Seconds a ``wait_for_change`` may overrun its timeout, and take to wake.
    wait_slack: ClassVar[float]

    def _app_ids(self, kit: Kit) -> set[str] | None:
        """The ids ``list()`` gives (None when the backend lacks ``list``)."""
        if kit.lacks(Capability.LIST):
            return None
        return {a.app_id for a in in_thread(lambda: kit.scheduler.list(kit.cfg), 60, "list")}

    def _listed(self, kit: Kit, app_ids: Sequence[str]) -> list[AppState]:
        """The state ``list()`` gives each of ``app_ids`` (each must be there once)."""
        listed = in_thread(lambda: kit.scheduler.list(kit.cfg), self.timeout, "list")
        found = []
        for app_id in app_ids:
            states = [a.state for a in listed if a.app_id == app_id]
            assert len(states) == 1, f"list() has app {app_id} {len(states)} times: {listed}"
            found.append(states[0])
        return found

    @staticmethod
    def _stdout(kit: Kit) -> Stream | None:
        """The stream to read a replica's stdout from (both, on a backend that has one log)."""
        return None if kit.lacks(Capability.SEPARATE_STREAMS) else Stream.STDOUT

    def _check_exits(self, kit: Kit, desc: DescribeAppResponse, exits: Mapping[int, int]) -> None:
        """Replica k of the one role ended as exit code ``exits[k]`` says, with that code.

        Without per-replica status (``Capability.REPLICA_STATUS``), each replica is in
        the app's state instead, with no exit code.
        """
        (role,) = desc.roles_statuses
        by_id = {rep.id: rep for rep in role.replicas}
        assert sorted(by_id) == list(range(self.replicas)), role
        if kit.lacks(Capability.REPLICA_STATUS):
            for rep in role.replicas:
                assert rep.state == desc.state and rep.exit_code is None, (desc.state, rep)
            return
        for k, code in exits.items():
            rep = by_id[k]
            assert rep.state == (AppState.SUCCEEDED if code == 0 else AppState.FAILED), rep
            expected = None if kit.lacks(Capability.EXIT_CODES) else code
            assert rep.exit_code == expected, f"replica {k} exited with {code}, yet: {rep}"

    def _wait_log(
        self, kit: Kit, app_id: str, k: int, done: Callable[[list[str]], bool], what: str
    ) -> list[str]:
        """Reads replica k's log of role ``main`` (0.1 s apart) until ``done(lines)``."""
        deadline = time.monotonic() + self.timeout
        while not done(lines := kit.logs(app_id, "main", k)):
            if time.monotonic() > deadline:
                pytest.fail(
                    f"replica main/{k} of app {app_id} not {what} within "
                    f"{self.timeout:g} s; its log: {lines[-5:]}"
                )
            time.sleep(0.1)  # a poll interval: output comes with no event to wait on
        return lines

    def _wait_quiet(self, kit: Kit, app_id: str, k: int, deadline: float) -> None:
        """Fails unless replica k's log stops growing (no new line for 1.5 s) by ``deadline``.

        A replica that still runs prints a tick every 0.1 s: 1.5 s without one means
        it has stopped.
        """
        lines = kit.logs(app_id, "main", k)
        quiet_since = time.monotonic()
        while time.monotonic() - quiet_since < QUIET:
            if time.monotonic() > deadline:
                pytest.fail(
                    f"app {app_id} is CANCELLED, yet replica main/{k} still prints: its log "
                    f"has {len(lines)} lines and grows; last: {lines[-1:]}"
                )
            time.sleep(0.25)  # a poll interval: we wait for output *not* to come
            now = kit.logs(app_id, "main", k)
            if now != lines:
                lines, quiet_since = now, time.monotonic()
