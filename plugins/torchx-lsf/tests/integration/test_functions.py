"""torchx.functions on the LSF stand-in of ``dev/lsf``: submit and map_array through
bsub, the call and its result through a job directory the hosts share."""

from __future__ import annotations

import concurrent.futures
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from torchx.functions import AppFuture, NoResult, RemoteTraceback, map_array, submit
from torchx.runner import get_runner
from torchx.schedulers.testing.cli import TorchxCli

HERE = Path(__file__).resolve().parent
TIMEOUT = 120


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test submits from a directory of its own (LSF's default job directory), with
    this folder on sys.path: the worker gets the submitter's, so it imports the helpers."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(HERE))


@pytest.fixture
def fh() -> Any:
    import fn_helpers_lsf

    return fn_helpers_lsf


@pytest.fixture
def futures() -> Iterator[list[AppFuture[Any]]]:
    """Futures a test started; any still running at the end is cancelled."""
    started: list[AppFuture[Any]] = []
    yield started
    for future in started:
        if not future.done():
            future.cancel()


def test_submit_add_returns_the_value(fh: Any, tmp_path: Path) -> None:
    start = time.monotonic()
    future = submit(fh.add, 5, 7, scheduler="lsf")
    assert future.handle is not None and future.handle.startswith("lsf://")
    assert future.result(timeout=TIMEOUT) == 12
    print(f"lsf: submit(add) to result {time.monotonic() - start:.2f} s")
    assert future.job_dir is not None and future.job_dir.parent == tmp_path / ".torchx-functions"
    assert not future.job_dir.exists()  # removed before the future was settled
    with get_runner() as runner:
        status = runner.status(future.handle)
    assert status is not None and status.state.name == "SUCCEEDED"


def test_the_jobdir_option_holds_the_calls_directory(fh: Any, tmp_path: Path) -> None:
    future = submit(fh.where, scheduler="lsf", cfg={"jobdir": str(tmp_path / "jobs")})
    host, job_dir = future.result(timeout=TIMEOUT)
    assert host  # LSF dispatched it to a host
    assert Path(job_dir).parent == tmp_path / "jobs" / ".torchx-functions"
    # LSF's own files of the app are in the same job directory
    assert (tmp_path / "jobs" / ".torchx-lsf").is_dir()


def test_the_torchxconfig_jobdir_holds_it_too(
    fh: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("TORCHXCONFIG", raising=False)
    (tmp_path / ".torchxconfig").write_text("[lsf]\njobdir = from-config\n")
    _, job_dir = submit(fh.where, scheduler="lsf").result(timeout=TIMEOUT)
    assert Path(job_dir).parent == tmp_path / "from-config" / ".torchx-functions"


def test_a_remote_exception_is_reraised_with_its_traceback(fh: Any) -> None:
    future = submit(fh.raise_boom, "went wrong", scheduler="lsf")
    with pytest.raises(fh.Boom, match="went wrong") as info:
        future.result(timeout=TIMEOUT)
    cause = info.value.__cause__
    assert isinstance(cause, RemoteTraceback)
    assert "_deeper" in str(cause) and "raise Boom(message)" in str(cause)


def test_a_replica_that_ends_without_a_result_raises_no_result(fh: Any) -> None:
    future = submit(fh.exit_early, 7, scheduler="lsf")
    with pytest.raises(NoResult) as info:
        future.result(timeout=TIMEOUT)
    assert info.value.state == "FAILED" and info.value.exit_code == 7, str(info.value)
    assert f"see: torchx log {future.handle}" in str(info.value)


def test_what_the_function_prints_is_in_torchx_log(fh: Any, tmp_path: Path) -> None:
    future = submit(fh.shout, "hello", scheduler="lsf")
    assert future.result(timeout=TIMEOUT) == "HELLO"
    cli = TorchxCli(tmp_path / "cli", scheduler="lsf")
    assert "printed: hello" in cli("log", str(future.handle)).stdout


def max_overlap(spans: list[tuple[float, float]]) -> int:
    """The most spans open at one instant (an end before a start at the same time)."""
    events = sorted([(a, 1) for a, _ in spans] + [(b, -1) for _, b in spans])
    running = peak = 0
    for _, step in events:
        running += step
        peak = max(peak, running)
    return peak


def test_map_array_runs_at_most_parallelism_at_once(fh: Any) -> None:
    futures = map_array(fh.timed, range(10), parallelism=2, scheduler="lsf", name="timed")
    results = [f.result(timeout=TIMEOUT) for f in futures]
    assert [r[0] for r in results] == [x * 10 for x in range(10)]
    assert max_overlap([(r[1], r[2]) for r in results]) <= 2
    assert all(r[3] for r in results)  # each ran on a host LSF dispatched it to
    handles = [f.handle for f in futures]
    assert all(h is not None and h.startswith("lsf://") for h in handles)
    assert len(set(handles)) == 10


def test_cancel_cancels_the_app(fh: Any, futures: list[AppFuture[Any]]) -> None:
    future = submit(fh.announce_then_block, scheduler="lsf")
    futures.append(future)
    assert future.handle is not None
    with get_runner() as runner:  # the replica runs its function: it printed its pid
        first = next(iter(runner.log_lines(future.handle, "fn", 0, should_tail=True)), "")
    assert first.startswith("pid "), first
    assert future.cancel() and future.cancelled()
    with pytest.raises(concurrent.futures.CancelledError):
        future.result(timeout=TIMEOUT)
    with get_runner() as runner:
        status = runner.wait(future.handle, wait_interval=0.5, timeout=TIMEOUT)
    assert status is not None and status.state.name == "CANCELLED"
