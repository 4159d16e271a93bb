"""Following checks: cancel, list, delete, unknown ids and ``wait_for_change``.

What a user does to an app after submitting it: cancel it (it stops, once or many
times, even right after submit), list it, delete it, ask about an id that names no
app (a fast no-op), and wait for its next change without waiting past the end.
"""

from __future__ import annotations

import time

import pytest

from torchx.schedulers.contract.api import Scheduler
from torchx.schedulers.contract.capabilities import Capability
from torchx.schedulers.testing.apps import (
    Exit,
    ExitOnTerm,
    Fail,
    Out,
    Sleep,
    Step,
    Tick,
)
from torchx.schedulers.testing.checks.base import (
    WAIT_FAIL_AFTER,
    Checks,
)
from torchx.schedulers.testing.kit import Kit, in_thread
from torchx.specs import AppState


class FollowingChecks(Checks):
    """The checks of following an app: cancel, list, delete, waits."""

    def test_cancel_reaches_cancelled(self, kit: Kit) -> None:
        n = self.replicas
        app_id = kit.run(kit.builder.role("main", [Out("started"), Tick(0.1)], n))
        kit.wait_running(app_id)
        if not kit.lacks(Capability.LOGS):
            for k in range(n):  # the output grows while the app runs
                self._wait_log(kit, app_id, k, lambda lines: "tick 2\n" in lines, "ticking")
        started = time.monotonic()
        kit.scheduler.cancel(app_id)
        desc = kit.wait_for(
            app_id, lambda d: d.state.is_terminal(), "CANCELLED", self.cancel_timeout
        )
        assert desc.state == AppState.CANCELLED, desc
        assert time.monotonic() - started < self.cancel_timeout
        if kit.lacks(Capability.LOGS):
            with pytest.raises(NotImplementedError):
                kit.logs(app_id, "main", 0)
            return
        # CANCELLED means stopped: each replica's output stops growing (within the bound)
        for k in range(n):
            self._wait_quiet(kit, app_id, k, deadline=started + self.cancel_timeout)

    def test_cancel_is_cancelled_when_replicas_exit_0(self, kit: Kit) -> None:
        """Cancelled is cancelled: replicas that end cleanly (exit 0) when asked to stop
        leave the app CANCELLED, in ``describe`` and ``list`` alike."""
        n = self.replicas
        app_id = kit.run(kit.builder.role("main", [Out("trapping"), ExitOnTerm(0)], n))
        kit.wait_running(app_id)
        if not kit.lacks(Capability.LOGS):  # the trap is set: SIGTERM will make exit 0
            for k in range(n):
                self._wait_log(kit, app_id, k, lambda lines: "trapping\n" in lines, "trapping")
        kit.scheduler.cancel(app_id)
        desc = kit.wait_for(
            app_id, lambda d: d.state.is_terminal(), "CANCELLED", self.cancel_timeout
        )
        assert desc.state == AppState.CANCELLED, f"cancelled, yet {desc.state.name}: {desc}"
        if not kit.lacks(Capability.LIST):
            assert self._listed(kit, [app_id]) == [AppState.CANCELLED]

    def test_cancel_right_after_submit_is_not_lost(self, kit: Kit) -> None:
        # cancelled while the app may still be SUBMITTED or PENDING: it must not run on
        steps: list[Step] = [Sleep(5), Out("ran to the end"), Exit(0)]
        app_id = kit.run(kit.builder.role("main", steps, self.replicas))
        kit.scheduler.cancel(app_id)
        desc = kit.wait_for(
            app_id, lambda d: d.state.is_terminal(), "CANCELLED", self.cancel_timeout
        )
        assert desc.state == AppState.CANCELLED, f"the cancel right after submit was lost: {desc}"

    def test_cancel_is_idempotent(self, kit: Kit) -> None:
        app_id = kit.run(kit.builder.role("main", [Sleep(600)]))
        kit.wait_running(app_id)
        kit.scheduler.cancel(app_id)
        kit.scheduler.cancel(app_id)  # while it is stopping
        kit.wait_for(app_id, lambda d: d.state.is_terminal(), "CANCELLED", self.cancel_timeout)
        kit.scheduler.cancel(app_id)  # once it has ended
        assert kit.describe(app_id).state == AppState.CANCELLED

        done = kit.run(kit.builder.role("main", [Exit(0)]))
        assert kit.wait_terminal(done).state == AppState.SUCCEEDED
        kit.scheduler.cancel(done)  # an ended app stays as it ended
        assert kit.describe(done).state == AppState.SUCCEEDED

    def test_unknown_app_id_is_a_fast_no_op(self, kit: Kit, unknown_app_id: str) -> None:
        sched = kit.scheduler
        limit = self.unknown_id_timeout
        started = time.monotonic()
        assert in_thread(lambda: sched.describe(unknown_app_id), limit, "describe") is None
        assert in_thread(lambda: sched.exists(unknown_app_id), limit, "exists") is False
        in_thread(lambda: sched.cancel(unknown_app_id), limit, "cancel")
        in_thread(lambda: sched.delete(unknown_app_id), limit, "delete")
        assert time.monotonic() - started < limit

    def test_list_has_every_app_with_its_state(self, kit: Kit) -> None:
        app_ids = [kit.run(kit.builder.role("main", [Sleep(600)])) for _ in range(2)]
        for app_id in app_ids:
            kit.wait_running(app_id)
        if kit.lacks(Capability.LIST):
            with pytest.raises(NotImplementedError):
                kit.scheduler.list(kit.cfg)
            return
        assert self._listed(kit, app_ids) == [AppState.RUNNING] * 2
        for app_id in app_ids:
            kit.scheduler.cancel(app_id)
        for app_id in app_ids:
            kit.wait_for(app_id, lambda d: d.state.is_terminal(), "CANCELLED", self.cancel_timeout)
        assert self._listed(kit, app_ids) == [AppState.CANCELLED] * 2

    def test_delete_removes_the_app(self, kit: Kit) -> None:
        app_id = kit.run(kit.builder.role("main", [Out("hi")]))
        kit.wait_terminal(app_id)
        kit.scheduler.delete(app_id)
        if kit.lacks(Capability.DELETE):
            assert kit.describe(app_id).state.is_terminal()
            return
        assert kit.scheduler.describe(app_id) is None
        assert not kit.scheduler.exists(app_id)
        if not kit.lacks(Capability.LIST):
            assert app_id not in (self._app_ids(kit) or set())

    def test_wait_for_change_is_bounded_and_wakes_at_the_end(self, kit: Kit) -> None:
        """``wait_for_change`` (optional) never waits past its timeout, nor through the end.

        A scheduler that keeps the default returns False at once. One that overrides it:
        one replica of N fails a few seconds in (the others sleep); a wait of 0.5 s while
        the app runs returns within its bound (plus ``wait_slack``), and waits of a minute
        each, with ``describe`` after each, see the app FAILED within ``wait_slack`` of
        that failure.
        """
        sched = kit.scheduler
        slack = self.wait_slack
        if type(sched).wait_for_change is Scheduler.wait_for_change:  # the default
            woke = in_thread(lambda: sched.wait_for_change("kit-app", 60), slack, "a wait")
            assert woke is False, "the default wait_for_change must return False at once"
            return
        n = self.replicas
        steps: list[Step] = [Fail(n - 1, 5, after=WAIT_FAIL_AFTER), Sleep(600)]
        app_id = kit.run(kit.builder.role("main", steps, n))
        kit.wait_running(app_id)
        started = time.monotonic()
        in_thread(lambda: sched.wait_for_change(app_id, 0.5), 0.5 + slack, "a wait of 0.5 s")
        deadline = started + WAIT_FAIL_AFTER + slack
        desc = kit.describe(app_id)
        while not desc.state.is_terminal():
            left = deadline - time.monotonic()
            if left <= 0:
                pytest.fail(f"app {app_id} not seen ending through wait_for_change; last: {desc}")
            t0 = time.monotonic()
            woke = in_thread(
                lambda: sched.wait_for_change(app_id, 60.0),
                left,
                "wait_for_change(60 s) while a replica fails",
            )
            if not woke:
                assert time.monotonic() - t0 < slack, "wait_for_change returned False late"
                time.sleep(0.1)
            desc = kit.describe(app_id)
        assert desc.state == AppState.FAILED, desc

    def test_retries_are_counted(self, kit: Kit) -> None:
        app_id = kit.run(kit.builder.role("main", [Out("attempt"), Exit(3)], max_retries=2))
        desc = kit.wait_terminal(app_id)
        assert desc.state == AppState.FAILED, desc
        if kit.lacks(Capability.RETRIES):
            assert desc.num_restarts <= 0, desc
        else:
            assert desc.num_restarts == 2, desc
