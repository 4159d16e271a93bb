"""``torchx.functions`` on a real backend: the same checks for every plugin that runs them.

A plugin's integration suite subclasses :class:`FunctionsChecks` and says how its
backend differs (the scheduler, the run option of its job directory, the variable
naming the node a replica ran on, the folder of its own files)::

    class TestSlurmFunctions(FunctionsChecks):
        scheduler = "slurm"
        job_dir_option = "job_dir"
        node_var = "SLURMD_NODENAME"
        own_files = ".torchx-slurm"
        node_prefix = "n"

The functions the checks submit are the module-level ones below: they travel by
reference, and the replica imports them from this installed module (the worker runs
the submitter's interpreter, on a disk the nodes share).
"""

from __future__ import annotations

import concurrent.futures
import os
import signal
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest

__all__ = ["Boom", "FunctionsChecks", "max_overlap"]

TIMEOUT = 120


# -- what the replicas run ------------------------------------------------------------------


class Boom(ValueError):
    """A custom exception type: the caller must get this type back, not a stand-in."""


def add(a: int, b: int) -> int:
    return a + b


def raise_boom(message: str) -> None:
    _deeper(message)


def _deeper(message: str) -> None:
    raise Boom(message)


def shout(text: str) -> str:
    print(f"printed: {text}", flush=True)
    return text.upper()


def timed(item: tuple[int, str]) -> tuple[int, float, float, str]:
    """Works for 0.5 s (the workload, not a synchronisation); says when and on which node
    (the variable ``item[1]`` names)."""
    x, node_var = item
    start = time.time()
    time.sleep(0.5)
    return x * 10, start, time.time(), os.environ.get(node_var, "")


def exit_early(code: int) -> None:
    """Leaves without a result, as a replica whose code calls os._exit."""
    os._exit(code)


def announce_then_block() -> None:
    """Prints its pid, then waits for a signal forever (the test cancels it)."""
    print(f"pid {os.getpid()}", flush=True)
    while True:
        signal.pause()


def block_on_one(x: int) -> int:
    """Item 1 prints, then waits for a signal forever (the test cancels it); the others
    print and return at once (map_array's items on their own)."""
    if x == 1:
        print("blocking 1", flush=True)
        while True:
            signal.pause()
    print(f"returning {x}", flush=True)
    return x


def where(node_var: str) -> tuple[str, str]:
    """The node and job directory the call ran with (the worker's argument)."""
    return os.environ.get(node_var, ""), sys.argv[1]


def max_overlap(spans: list[tuple[float, float]]) -> int:
    """The most spans open at one instant (an end before a start at the same time).

    >>> max_overlap([(0, 2), (1, 3), (2, 4)])
    2
    """
    events = sorted([(a, 1) for a, _ in spans] + [(b, -1) for _, b in spans])
    running = peak = 0
    for _, step in events:
        running += step
        peak = max(peak, running)
    return peak


# -- the checks -----------------------------------------------------------------------------


class FunctionsChecks:
    """submit and map_array on :attr:`scheduler`, the results through its job directory."""

    #: the scheduler submitted to
    scheduler: ClassVar[str]
    #: its run option naming the job directory (the calls' directories go in it)
    job_dir_option: ClassVar[str]
    #: the variable naming the node a replica ran on
    node_var: ClassVar[str]
    #: the folder of the scheduler's own files in the job directory
    own_files: ClassVar[str]
    #: how the names of the backend's nodes start (dev/slurm's: ``n``)
    node_prefix: ClassVar[str] = ""
    #: map_array runs as one app of one replica per item (a native job array, as on
    #: Slurm) rather than one app per item
    native_array: ClassVar[bool] = False

    @pytest.fixture(autouse=True)
    def _in_tmp(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        """Each test submits from a directory of its own (the default job directory)."""
        monkeypatch.chdir(tmp_path)
        monkeypatch.delenv("TORCHXCONFIG", raising=False)

    @pytest.fixture
    def futures(self) -> Iterator[list[Any]]:
        """Futures a test started; any still running at the end is cancelled."""
        started: list[Any] = []
        yield started
        for future in started:
            if not future.done():
                future.cancel()

    def test_submit_add_returns_the_value(self, tmp_path: Path) -> None:
        from torchx.functions import submit
        from torchx.runner import get_runner

        start = time.monotonic()
        future = submit(add, 5, 7, scheduler=self.scheduler)
        assert future.handle is not None and future.handle.startswith(f"{self.scheduler}://")
        assert future.result(timeout=TIMEOUT) == 12
        print(f"{self.scheduler}: submit(add) to result {time.monotonic() - start:.2f} s")
        assert future.job_dir is not None
        assert future.job_dir.parent == tmp_path / ".torchx-functions"
        assert not future.job_dir.exists()  # removed before the future was settled
        with get_runner() as runner:
            status = runner.status(future.handle)
        assert status is not None and status.state.name == "SUCCEEDED"

    def test_the_job_dir_option_holds_the_calls_directory(self, tmp_path: Path) -> None:
        from torchx.functions import submit

        cfg = {self.job_dir_option: str(tmp_path / "jobs")}
        future = submit(where, self.node_var, scheduler=self.scheduler, cfg=cfg)
        node, job_dir = future.result(timeout=TIMEOUT)
        assert node and node.startswith(self.node_prefix), node  # on one of its nodes
        assert Path(job_dir).parent == tmp_path / "jobs" / ".torchx-functions"
        assert (tmp_path / "jobs" / self.own_files).is_dir()  # beside the scheduler's own

    def test_the_torchxconfig_job_dir_holds_it_too(self, tmp_path: Path) -> None:
        from torchx.functions import submit

        (tmp_path / ".torchxconfig").write_text(
            f"[{self.scheduler}]\n{self.job_dir_option} = from-config\n"
        )
        _, job_dir = submit(where, self.node_var, scheduler=self.scheduler).result(TIMEOUT)
        assert Path(job_dir).parent == tmp_path / "from-config" / ".torchx-functions"

    def test_a_remote_exception_is_reraised_with_its_traceback(self) -> None:
        from torchx.functions import RemoteTraceback, submit

        future = submit(raise_boom, "went wrong", scheduler=self.scheduler)
        with pytest.raises(Boom, match="went wrong") as info:
            future.result(timeout=TIMEOUT)
        cause = info.value.__cause__
        assert isinstance(cause, RemoteTraceback)
        assert "_deeper" in str(cause) and "raise Boom(message)" in str(cause)

    def test_a_replica_that_ends_without_a_result_raises_no_result(self) -> None:
        from torchx.functions import NoResult, submit

        future = submit(exit_early, 7, scheduler=self.scheduler)
        with pytest.raises(NoResult) as info:
            future.result(timeout=TIMEOUT)
        assert info.value.state == "FAILED" and info.value.exit_code == 7, str(info.value)
        assert f"see: torchx log {future.handle}" in str(info.value)

    def test_what_the_function_prints_is_in_torchx_log(self, tmp_path: Path) -> None:
        from torchx.functions import submit
        from torchx.schedulers.testing.cli import TorchxCli

        future = submit(shout, "hello", scheduler=self.scheduler)
        assert future.result(timeout=TIMEOUT) == "HELLO"
        cli = TorchxCli(tmp_path / "cli", scheduler=self.scheduler)
        assert "printed: hello" in cli("log", str(future.handle)).stdout

    def test_map_array_runs_at_most_parallelism_at_once(self) -> None:
        from torchx.functions import map_array

        items = [(x, self.node_var) for x in range(10)]
        futures = map_array(timed, items, parallelism=2, scheduler=self.scheduler, name="timed")
        results = [f.result(timeout=TIMEOUT) for f in futures]
        assert [r[0] for r in results] == [x * 10 for x in range(10)]
        assert max_overlap([(r[1], r[2]) for r in results]) <= 2
        assert all(r[3] and r[3].startswith(self.node_prefix) for r in results), results
        handles = [f.handle for f in futures]
        assert all(h is not None and h.startswith(f"{self.scheduler}://") for h in handles)
        if not self.native_array:
            assert len(set(handles)) == 10
            return
        # one app (one submission) whose replicas are the items, each ended on its own
        from torchx.runner import get_runner

        assert len(set(handles)) == 1
        with get_runner() as runner:
            status = runner.status(str(handles[0]))
        assert status is not None and status.state.name == "SUCCEEDED"
        replicas = [r for role in status.roles for r in role.replicas]
        assert sorted(r.id for r in replicas) == list(range(10))
        assert all(r.state.name == "SUCCEEDED" and r.exit_code == 0 for r in replicas)

    def test_cancel_cancels_the_app(self, futures: list[Any]) -> None:
        from torchx.functions import submit
        from torchx.runner import get_runner

        future = submit(announce_then_block, scheduler=self.scheduler)
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
