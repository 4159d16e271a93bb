"""map_array on Slurm as one native job array, against a stand-in Runner.

The stand-in records what is submitted, runs the worker in-process on the items it is
told to (as the array's tasks would), and answers ``status`` from a script of replica
states; the real cluster is tested in torchx-slurm's integration suite.
"""

from __future__ import annotations

import concurrent.futures
import threading
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

import torchx.runner.api as runner_api
from torchx.functions import NoResult, RemoteTraceback, _array, _payload
from torchx.functions._worker import main as worker_main
from torchx.specs import AppState, AppStatus, ReplicaStatus, RoleStatus, macros

HANDLE = "slurm://torchx/12"
TIMEOUT = 30


#: the helpers module imports by name here, and so on the replica (it gets our sys.path)
pytestmark = pytest.mark.usefixtures("helpers_importable")


class StandIn:
    """The Runner as map_array uses it: run, status, cancel."""

    def __init__(self, run_items: list[int]) -> None:
        self.run_items = run_items
        self.runs: list[tuple[Any, str, dict[str, Any]]] = []
        self.status_calls = 0
        self.cancels: list[str] = []
        self.states: dict[int, tuple[str, int | None]] = {}
        self.app_state = "RUNNING"
        self.lock = threading.Lock()

    def __enter__(self) -> StandIn:
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    def run(self, app: Any, scheduler: str, cfg: dict[str, Any]) -> str:
        self.runs.append((app, scheduler, dict(cfg)))
        arg = app.roles[0].args[-1]
        for i in self.run_items:  # the tasks that get to run their call
            assert worker_main([arg.replace(macros.replica_id, str(i))]) in (0, 1)
        return HANDLE

    def set(self, app_state: str, **states: tuple[str, int | None]) -> None:
        with self.lock:
            self.app_state = app_state
            self.states.update({int(k[1:]): v for k, v in states.items()})

    def status(self, handle: str) -> AppStatus:
        assert handle == HANDLE
        with self.lock:
            self.status_calls += 1
            replicas = [
                ReplicaStatus(id=k, state=AppState[s], role="fn", hostname="n1", exit_code=c)
                for k, (s, c) in sorted(self.states.items())
            ]
            return AppStatus(AppState[self.app_state], roles=[RoleStatus("fn", replicas)])

    def cancel(self, handle: str) -> None:
        self.cancels.append(handle)


def _start(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, fn: Any, items: list[Any], run: list[int]
) -> tuple[StandIn, list[Any]]:
    stand_in = StandIn(run)
    monkeypatch.setattr(runner_api, "get_runner", lambda *a, **k: stand_in)
    target = SimpleNamespace(parent=tmp_path, image=str(tmp_path), resource=None, cfg={"x": 1})
    payloads = [_payload(fn, (item,), {}) for item in items]
    futures = _array.map_slurm_array(
        "fn",
        payloads,
        2,
        target,
        "sq",
        "fn",
        256,  # type: ignore[arg-type]
    )
    return stand_in, futures


def test_one_app_of_one_replica_per_item_with_array_parallelism(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import fn_helpers_torchx_functions as fh

    stand_in, futures = _start(monkeypatch, tmp_path, fh.timed, [0, 1, 2], [0, 1, 2])
    stand_in.set("SUCCEEDED", r0=("SUCCEEDED", 0), r1=("SUCCEEDED", 0), r2=("SUCCEEDED", 0))
    assert [f.result(timeout=TIMEOUT)[0] for f in futures] == [0, 10, 20]
    ((app, scheduler, cfg),) = stand_in.runs  # one submission
    assert scheduler == "slurm" and cfg == {"x": 1, "array_parallelism": 2}
    (role,) = app.roles
    assert role.num_replicas == 3 and role.resource.memMB == 256
    assert role.args[-1].endswith(f"/{macros.replica_id}")
    assert {f.handle for f in futures} == {HANDLE}
    assert [f.index for f in futures] == [0, 1, 2]
    job_dir = Path(role.args[-1]).parent
    assert job_dir.parent == tmp_path
    watcher = futures[0]._watcher  # one thread follows them all
    assert watcher is not None and all(f._watcher is watcher for f in futures)
    watcher.join(TIMEOUT)  # it removes the job directory once every item is settled
    assert not watcher.is_alive() and not job_dir.exists()


def test_each_item_settles_when_its_own_replica_ended(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import fn_helpers_torchx_functions as fh

    # item 0 returns, item 1 raises, item 2 dies without a result (its task never ran)
    stand_in, futures = _start(monkeypatch, tmp_path, fh.scaled, [0, "x", 2], [0, 1])
    stand_in.set("RUNNING", r0=("SUCCEEDED", 0), r1=("RUNNING", None), r2=("PENDING", None))
    assert futures[0].result(timeout=TIMEOUT) == 0
    assert not futures[1].done() and not futures[2].done()  # still running, pending
    stand_in.set("FAILED", r1=("FAILED", 1), r2=("FAILED", 137))
    with pytest.raises(TypeError) as raised:
        futures[1].result(timeout=TIMEOUT)
    assert isinstance(raised.value.__cause__, RemoteTraceback)
    with pytest.raises(NoResult) as info:
        futures[2].result(timeout=TIMEOUT)
    assert info.value.exit_code == 137 and info.value.state == "FAILED"
    assert f"see: torchx log {HANDLE}/fn/2" in str(info.value)
    # one status of the whole array per poll, never one per item
    assert stand_in.status_calls < 3 * len(futures)


def test_cancelling_one_item_cancels_its_array_task(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import fn_helpers_torchx_functions as fh

    stand_in, futures = _start(monkeypatch, tmp_path, fh.add, [1, 2], [])
    stand_in.set("RUNNING", r0=("SUCCEEDED", 0), r1=("RUNNING", None))
    # item 0 ended (no result: its task did not run here): cancel is too late for it
    with pytest.raises(NoResult):
        futures[0].result(timeout=TIMEOUT)
    assert not futures[0].cancel()
    assert futures[1].cancel() and futures[1].cancelled()
    assert stand_in.cancels == [f"{HANDLE}_1"]  # its task alone
    with pytest.raises(concurrent.futures.CancelledError):
        futures[1].result(timeout=0)
    stand_in.set("CANCELLED", r1=("CANCELLED", 143))
    assert futures[1].cancelled()  # the watcher keeps the cancel, not a NoResult
