"""A local supervisor started ahead (torchx.schedulers.local.warmup) and handed the next app."""

from __future__ import annotations

import json
import os
import select
import signal
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from torchx.schedulers.local import warmup as local_warmup
from torchx.schedulers.local.scheduler import LocalScheduler
from torchx.specs import AppDef, AppState, Role

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="the local scheduler is Linux-only")


@pytest.fixture(autouse=True)
def _no_warm_supervisor_left() -> Iterator[None]:
    """Each test starts and ends without a waiting warm supervisor."""
    local_warmup.discard()
    yield
    local_warmup.discard()


def _exits(pid: int, timeout: float = 30.0) -> bool:
    """True once the process has exited (its pidfd turns readable: an event)."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return True
    try:
        return bool(select.select([fd], [], [], timeout)[0])
    finally:
        os.close(fd)


def _run_echo(sched: LocalScheduler, state_dir: Path) -> tuple[str, dict[str, object]]:
    app = AppDef("echo", [Role("w", image="/", entrypoint="echo", args=["hi"])])
    app_id = sched.submit(app, {})
    lines = list(sched.log_iter(app_id, "w", should_tail=True))
    assert lines == ["hi\n"]
    desc = sched.describe(app_id)
    assert desc is not None and desc.state == AppState.SUCCEEDED, desc
    record = json.loads((state_dir / "apps" / app_id / "state.json").read_text())
    return app_id, record


def test_the_next_app_is_handed_to_the_warm_supervisor(
    sched: LocalScheduler, state_dir: Path
) -> None:
    local_warmup.start()
    warm = local_warmup._warm
    assert warm is not None
    app_id, record = _run_echo(sched, state_dir)
    assert record["supervisor"]["pid"] == warm.popen.pid
    assert local_warmup._warm is None  # taken: the app after this one starts a new one
    _, second = _run_echo(sched, state_dir)
    assert second["supervisor"]["pid"] != warm.popen.pid
    # its own supervisor.log, in its app directory, like a supervisor started for it
    assert (state_dir / "apps" / app_id / "supervisor.log").exists()


def test_a_warm_supervisor_that_is_not_used_exits(sched: LocalScheduler) -> None:
    local_warmup.start()
    warm = local_warmup._warm
    assert warm is not None and warm.popen.poll() is None
    local_warmup.discard()
    assert _exits(warm.popen.pid)
    assert warm.popen.wait(timeout=5) == 0


def test_a_warm_supervisor_for_another_path_is_not_used(sched: LocalScheduler) -> None:
    local_warmup.start()
    warm = local_warmup._warm
    assert warm is not None
    assert local_warmup.take([*local_warmup.supervisor_path(), "/elsewhere"]) is None
    assert _exits(warm.popen.pid)
    assert local_warmup._warm is None


def test_a_dead_warm_supervisor_is_replaced(sched: LocalScheduler, state_dir: Path) -> None:
    local_warmup.start()
    warm = local_warmup._warm
    assert warm is not None
    os.kill(warm.popen.pid, signal.SIGKILL)
    warm.popen.wait(timeout=10)
    _, record = _run_echo(sched, state_dir)
    assert record["supervisor"]["pid"] != warm.popen.pid


def test_a_warm_supervisor_holds_none_of_the_launchers_files(sched: LocalScheduler) -> None:
    """Its standard streams are /dev/null: a caller reading our output never waits on it."""
    local_warmup.start()
    warm = local_warmup._warm
    assert warm is not None
    fds = {
        os.readlink(f"/proc/{warm.popen.pid}/fd/{n}")
        for n in os.listdir(f"/proc/{warm.popen.pid}/fd")
    }
    assert {os.readlink(f"/proc/{warm.popen.pid}/fd/{n}") for n in (0, 1, 2)} == {"/dev/null"}
    assert all(not fd.startswith("/dev/pts") for fd in fds), fds


def test_the_replicas_get_the_launchers_environment_and_umask_of_the_submit(
    sched: LocalScheduler, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Not those of when the warm supervisor was started."""
    monkeypatch.setenv("TORCHX_WARM_PROBE", "before")
    local_warmup.start()
    assert local_warmup._warm is not None
    monkeypatch.setenv("TORCHX_WARM_PROBE", "after")
    old = os.umask(0o027)
    try:
        app = AppDef(
            "probe",
            [Role("w", image="/", entrypoint="sh", args=["-c", "echo $TORCHX_WARM_PROBE; umask"])],
        )
        app_id = sched.submit(app, {})
    finally:
        os.umask(old)
    assert list(sched.log_iter(app_id, "w", should_tail=True)) == ["after\n", "0027\n"]
