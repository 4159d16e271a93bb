"""``torchx.functions`` on a real backend: the same checks for every plugin that runs them.

A plugin's integration suite subclasses the checks of its channel and says how its
backend differs: :class:`JobDirChecks` where the result comes back through a job
directory the nodes share (the run option of that directory, the folder of the
scheduler's own files), :class:`LogChannelChecks` where it comes back in the replica's
log (the image to run in); both take the scheduler and the variable naming the node a
replica ran on::

    class TestSlurmFunctions(JobDirChecks):
        scheduler = "slurm"
        job_dir_option = "job_dir"
        node_var = "SLURMD_NODENAME"
        own_files = ".torchx-slurm"
        node_prefix = "n"

The functions the checks submit are the module-level ones below. On a shared disk they
travel by reference, and the replica imports them from this installed module (the
worker runs the submitter's interpreter); a container image has no torchx, so
:class:`LogChannelChecks` registers this module with
``cloudpickle.register_pickle_by_value`` and they travel by value (the image needs
cloudpickle, as a user's image does for their own functions sent so).
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

__all__ = ["Boom", "FunctionsChecks", "JobDirChecks", "LogChannelChecks", "max_overlap"]

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


def sized(n: int) -> bytes:
    """``n`` bytes that do not compress (a result larger than one log frame)."""
    return os.urandom(n)


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
    """submit and map_array on :attr:`scheduler`, whatever carries the results."""

    #: the scheduler submitted to
    scheduler: ClassVar[str]
    #: the variable naming the node a replica ran on
    node_var: ClassVar[str]
    #: how the names of the backend's nodes start (dev/slurm's: ``n``)
    node_prefix: ClassVar[str] = ""
    #: map_array runs as one app of one replica per item (a native job array, as on
    #: Slurm) rather than one app per item
    native_array: ClassVar[bool] = False
    #: capability: the replica reads the functions' source files, so the remote
    #: traceback shows their lines. False where they travel by value into an image
    #: without those files: the traceback then names the file, line and function only.
    remote_source_lines: ClassVar[bool] = True
    #: capability: a running replica's log can be followed. False where the backend
    #: writes the log once the replica has ended (the AWS emulator): the cancel check
    #: then waits for the app to be RUNNING by its status instead of by its first line.
    live_logs: ClassVar[bool] = True
    #: capability: the scheduler reports a replica's exit code. False where it reports
    #: only the app's failure (SageMaker: a ``FailureReason`` text, no exit code): the
    #: no-result check then asserts the FAILED state and no exit code.
    replica_exit_codes: ClassVar[bool] = True

    def options(self) -> dict[str, Any]:
        """What every submit and map_array of the checks passes besides the scheduler."""
        return {}

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
        future = submit(add, 5, 7, scheduler=self.scheduler, **self.options())
        assert future.handle is not None and future.handle.startswith(f"{self.scheduler}://")
        assert future.result(timeout=TIMEOUT) == 12
        print(f"{self.scheduler}: submit(add) to result {time.monotonic() - start:.2f} s")
        with get_runner() as runner:
            status = runner.status(future.handle)
        assert status is not None and status.state.name == "SUCCEEDED"
        self.check_channel_after(future, tmp_path)

    def check_channel_after(self, future: Any, tmp_path: Path) -> None:
        """What the channel left of a settled call (the subclasses say)."""
        raise NotImplementedError

    def test_a_remote_exception_is_reraised_with_its_traceback(self) -> None:
        from torchx.functions import RemoteTraceback, submit

        future = submit(raise_boom, "went wrong", scheduler=self.scheduler, **self.options())
        with pytest.raises(Boom, match="went wrong") as info:
            future.result(timeout=TIMEOUT)
        cause = info.value.__cause__
        assert isinstance(cause, RemoteTraceback)
        assert "_deeper" in str(cause) and "raise_boom" in str(cause)
        assert ("raise Boom(message)" in str(cause)) == self.remote_source_lines, str(cause)

    def wait_running(self, handle: str) -> None:
        """Returns once the app is RUNNING (asking at each change the scheduler reports)."""
        from torchx.runner import get_runner

        deadline = time.monotonic() + TIMEOUT
        with get_runner() as runner:
            while True:
                status = runner.status(handle)
                assert status is not None and not status.is_terminal(), status
                if status.state.name == "RUNNING":
                    return
                assert time.monotonic() < deadline, f"{handle} not RUNNING: {status.state}"
                if not runner.wait_for_change(handle, 1.0):
                    time.sleep(0.2)  # the scheduler cannot wait for a change: poll

    def test_a_replica_that_ends_without_a_result_raises_no_result(self) -> None:
        from torchx.functions import NoResult, submit

        future = submit(exit_early, 7, scheduler=self.scheduler, **self.options())
        with pytest.raises(NoResult) as info:
            future.result(timeout=TIMEOUT)
        expected = 7 if self.replica_exit_codes else None
        assert info.value.state == "FAILED" and info.value.exit_code == expected, str(info.value)
        assert f"see: torchx log {future.handle}" in str(info.value)

    def test_what_the_function_prints_is_in_torchx_log(self, tmp_path: Path) -> None:
        from torchx.functions import submit
        from torchx.schedulers.testing.cli import TorchxCli

        future = submit(shout, "hello", scheduler=self.scheduler, **self.options())
        assert future.result(timeout=TIMEOUT) == "HELLO"
        cli = TorchxCli(tmp_path / "cli", scheduler=self.scheduler)
        assert "printed: hello" in cli("log", str(future.handle)).stdout

    def test_map_array_runs_at_most_parallelism_at_once(self) -> None:
        from torchx.functions import map_array

        items = [(x, self.node_var) for x in range(10)]
        futures = map_array(
            timed, items, parallelism=2, scheduler=self.scheduler, name="timed", **self.options()
        )
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

        future = submit(announce_then_block, scheduler=self.scheduler, **self.options())
        futures.append(future)
        assert future.handle is not None
        if self.live_logs:
            with get_runner() as runner:  # the replica runs its function: it printed its pid
                lines = runner.log_lines(future.handle, "fn", 0, should_tail=True)
                first = next(iter(lines), "")
            assert first.startswith("pid "), first
        else:
            self.wait_running(future.handle)
        assert future.cancel() and future.cancelled()
        with pytest.raises(concurrent.futures.CancelledError):
            future.result(timeout=TIMEOUT)
        with get_runner() as runner:
            status = runner.wait(future.handle, wait_interval=0.5, timeout=TIMEOUT)
        assert status is not None and status.state.name == "CANCELLED"


class JobDirChecks(FunctionsChecks):
    """The results through a job directory the submitting machine and the nodes share."""

    #: its run option naming the job directory (the calls' directories go in it)
    job_dir_option: ClassVar[str]
    #: the folder of the scheduler's own files in the job directory
    own_files: ClassVar[str]

    def check_channel_after(self, future: Any, tmp_path: Path) -> None:
        assert future.job_dir is not None
        assert future.job_dir.parent == tmp_path / ".torchx-functions"
        assert not future.job_dir.exists()  # removed before the future was settled

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


class LogChannelChecks(FunctionsChecks):
    """The call in the role's environment, the result in the replica's log (no shared
    disk): the functions travel by value into :attr:`image`."""

    #: the image the replicas run in: python3 of this minor version, and cloudpickle
    image: ClassVar[str]
    remote_source_lines = False

    def options(self) -> dict[str, Any]:
        return {"image": self.image}

    @pytest.fixture(autouse=True)
    def _by_value(self) -> Iterator[None]:
        """This module is not in the image: its functions go by value (cloudpickle)."""
        import cloudpickle  # type: ignore[import-not-found,unused-ignore]

        module = sys.modules[__name__]
        cloudpickle.register_pickle_by_value(module)
        yield
        cloudpickle.unregister_pickle_by_value(module)

    def check_channel_after(self, future: Any, tmp_path: Path) -> None:
        assert future.job_dir is None and future.token  # nothing on disk: the log
        assert not (tmp_path / ".torchx-functions").exists()

    def test_a_result_of_many_frames_comes_back_whole(self) -> None:
        from torchx.functions import submit
        from torchx.functions._channel import FRAME_CHARS

        n = FRAME_CHARS * 5  # about 7 frames of base64
        data = submit(sized, n, scheduler=self.scheduler, **self.options()).result(TIMEOUT)
        assert isinstance(data, bytes) and len(data) == n

    def test_a_call_over_the_cap_is_refused_before_submitting(self) -> None:
        from torchx.functions import CallTooLarge, submit
        from torchx.functions._logs import CALL_CAP
        from torchx.runner import get_runner

        cfg = self.options().get("cfg")
        with get_runner() as runner:
            before = {a.app_handle for a in runner.list(self.scheduler, cfg)}
        with pytest.raises(CallTooLarge, match=f"over the cap of {CALL_CAP}: pass large data"):
            submit(add, b"x" * CALL_CAP, b"", scheduler=self.scheduler, **self.options())
        with get_runner() as runner:
            assert {a.app_handle for a in runner.list(self.scheduler, cfg)} == before
