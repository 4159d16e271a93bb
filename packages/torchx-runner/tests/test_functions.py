"""torchx.functions.submit on the real local scheduler: real processes, real apps."""

from __future__ import annotations

import builtins
import concurrent.futures
import json
import os
import pickle
import signal
import subprocess
import sys
import threading
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import torchx.functions as functions
from torchx.functions import NoResult, RemoteLoadError, RemoteTraceback, map_array, submit
from torchx.runner import get_runner
from torchx.schedulers.testing.functions import max_overlap

HERE = Path(__file__).resolve().parent
TIMEOUT = 60


#: the helpers module imports by name here, and so on the replica (it gets our sys.path)
pytestmark = pytest.mark.usefixtures("helpers_importable")


def first_line(handle: str) -> str:
    """The replica's first line of output, read by following its log (no sleeps)."""
    with get_runner() as runner:
        for line in runner.log_lines(handle, "fn", 0, should_tail=True):
            return line.strip()
    raise AssertionError(f"{handle} ended without printing")


def test_add_returns_the_value(fh: Any) -> None:
    future = submit(fh.add, 5, 7)
    assert future.handle.startswith("local://")
    assert future.result(timeout=TIMEOUT) == 12
    assert future.done() and not future.cancelled() and future.exception() is None
    with get_runner() as runner:
        status = runner.status(future.handle)
    assert status is not None and status.state.name == "SUCCEEDED"


def test_kwargs_and_a_callback(fh: Any) -> None:
    called = threading.Event()
    seen: list[concurrent.futures.Future[int]] = []

    def callback(f: concurrent.futures.Future[int]) -> None:
        seen.append(f)
        called.set()

    future = submit(fh.scaled, 4, factor=3, offset=1, name="scaled-call")
    future.add_done_callback(callback)
    assert future.result(timeout=TIMEOUT) == 13
    assert called.wait(TIMEOUT) and seen == [future]
    assert "/scaled-call-" in future.handle


def test_a_remote_exception_is_reraised_with_its_traceback(fh: Any) -> None:
    future = submit(fh.raise_boom, "went wrong")
    with pytest.raises(fh.Boom, match="went wrong") as info:
        future.result(timeout=TIMEOUT)
    cause = info.value.__cause__
    assert isinstance(cause, RemoteTraceback)
    assert "_deeper" in str(cause) and "raise Boom(message)" in str(cause)
    assert isinstance(future.exception(), fh.Boom)


def test_what_the_function_prints_is_in_the_log(fh: Any) -> None:
    future = submit(fh.shout, "hello")
    assert future.result(timeout=TIMEOUT) == "HELLO"
    with get_runner() as runner:
        out = list(runner.log_lines(future.handle, "fn", 0, streams="stdout"))
        err = list(runner.log_lines(future.handle, "fn", 0, streams="stderr"))
    assert "printed: hello\n" in out
    assert "to stderr: hello\n" in err


def test_cancel_cancels_the_app(fh: Any) -> None:
    future = submit(fh.announce_then_block, cfg={"grace_period": 1.0})
    assert first_line(future.handle).startswith("pid ")
    assert not future.done() and future.running()
    assert future.cancel()
    assert future.cancelled() and future.done()
    with pytest.raises(concurrent.futures.CancelledError):
        future.result(timeout=TIMEOUT)
    with get_runner() as runner:
        status = runner.wait(future.handle, wait_interval=1, timeout=TIMEOUT)
    assert status is not None and status.state.name == "CANCELLED"
    assert future.cancel() and future.cancelled()  # again: still cancelled, as Future does


def test_cancel_after_the_end_returns_false(fh: Any) -> None:
    future = submit(fh.add, 1, 2)
    assert future.result(timeout=TIMEOUT) == 3
    assert not future.cancel()
    assert not future.cancelled()


def test_a_killed_replica_raises_no_result(fh: Any) -> None:
    future = submit(fh.announce_then_block)
    pid = int(first_line(future.handle).split()[1])
    os.kill(pid, signal.SIGKILL)
    with pytest.raises(NoResult) as info:
        future.result(timeout=TIMEOUT)
    message = str(info.value)
    assert "FAILED" in message and info.value.state == "FAILED"
    assert f"see: torchx log {future.handle}" in message
    assert future.handle in message


def test_a_replica_that_exits_before_writing_raises_no_result(fh: Any) -> None:
    future = submit(fh.exit_early, 7)
    with pytest.raises(NoResult, match="exit code 7") as info:
        future.result(timeout=TIMEOUT)
    assert info.value.exit_code == 7 and info.value.state == "FAILED"


def test_the_job_directory_is_removed_once_settled(fh: Any) -> None:
    future = submit(fh.add, 2, 2)
    assert future.job_dir.is_dir() or future.done()
    assert future.result(timeout=TIMEOUT) == 4
    # removed before the result is set: a script that exits right after result() leaves
    # nothing behind in the temporary directory
    assert future.job_dir is not None and not future.job_dir.exists()


def test_a_script_that_exits_after_result_leaves_no_job_directory(tmp_path: Path) -> None:
    code = (
        "import sys, tempfile; sys.path.insert(0, sys.argv[1])\n"
        "import fn_helpers_torchx_functions as fh\n"
        "from torchx.functions import submit\n"
        "print(submit(fh.add, 20, 22).result(timeout=60))\n"
    )
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-c", code, str(HERE)],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "42"
    assert list(tmp_path.glob("torchx-fn-*")) == []


def test_a_lambda_without_cloudpickle_is_refused_before_submitting(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    real_import = builtins.__import__

    def no_cloudpickle(name: str, *args: Any, **kwargs: Any) -> Any:
        if name == "cloudpickle":
            raise ImportError("No module named 'cloudpickle'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_cloudpickle)
    with get_runner() as runner:
        before = len(runner.list("local"))
    with pytest.raises(ValueError, match=r"install torchx-runner\[functions\]") as info:
        submit(lambda: 1)
    assert "\n" not in str(info.value)
    with get_runner() as runner:
        assert len(runner.list("local")) == before  # nothing was submitted


def test_a_closure_travels_by_value_with_cloudpickle() -> None:
    base = 40

    def closure(x: int) -> int:
        return base + x

    assert submit(closure, 2).result(timeout=TIMEOUT) == 42
    assert submit(lambda: "from a lambda").result(timeout=TIMEOUT) == "from a lambda"


def test_another_scheduler_is_refused(fh: Any) -> None:
    with pytest.raises(
        functions.UnsupportedSchedulerError,
        match="lsf, docker, kubernetes, kubernetes_mcad, aws_batch and aws_sagemaker",
    ) as info:
        submit(fh.add, 1, 2, scheduler="gcp_batch")
    assert "'gcp_batch'" in str(info.value) and "\n" not in str(info.value)


def test_the_trivial_call_overhead(fh: Any) -> None:
    """Loose bound here (a shared CI host); the README reports the median measured."""
    import time

    start = time.monotonic()
    assert submit(fh.nothing).result(timeout=TIMEOUT) is None
    assert time.monotonic() - start < 5.0


def test_importing_the_runner_does_not_import_functions() -> None:
    code = (
        "import sys, torchx.runner\n"
        "with torchx.runner.get_runner() as r: r.scheduler_backends()\n"
        "print(sorted(m for m in sys.modules if m.startswith('torchx.functions')))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=TIMEOUT, check=True
    )
    assert done.stdout.strip() == "[]"


def worker(job_dir: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "torchx.functions._worker", str(job_dir)],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )


def test_map_array_runs_at_most_parallelism_at_once_in_order(fh: Any) -> None:
    futures = map_array(fh.timed, range(6), parallelism=2, name="timed")
    results = [f.result(timeout=TIMEOUT) for f in futures]
    assert [r[0] for r in results] == [0, 10, 20, 30, 40, 50]
    assert max_overlap([(r[1], r[2]) for r in results]) <= 2
    handles = [f.handle for f in futures]
    assert all(h is not None and f"/timed-{i}-" in h for i, h in enumerate(handles))


def test_map_array_cancels_a_call_before_its_turn(fh: Any) -> None:
    futures = map_array(fh.block_on, ["a", "b"], parallelism=1, cfg={"grace_period": 1.0})
    assert futures[1].handle is None  # the first blocks forever: the second waits
    assert futures[1].cancel() and futures[1].cancelled()
    with pytest.raises(concurrent.futures.CancelledError):
        futures[1].result(timeout=0)
    assert futures[0].cancel()
    with pytest.raises(concurrent.futures.CancelledError):
        futures[0].result(timeout=TIMEOUT)


def test_map_array_checks_before_starting(fh: Any) -> None:
    with pytest.raises(ValueError, match="parallelism must be"):
        map_array(fh.add, [1], parallelism=0)
    with pytest.raises(functions.UnsupportedSchedulerError):
        map_array(fh.nothing, [1], parallelism=1, scheduler="gcp_batch")


def test_the_worker_refuses_another_python_in_one_line(tmp_path: Path) -> None:
    (tmp_path / "meta.json").write_text(json.dumps({"python": [3, 99], "sys_path": []}))
    (tmp_path / "payload.pkl").write_bytes(b"not read")
    done = worker(tmp_path)
    assert done.returncode == 3
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "Python 3.99" in lines[0] and "Traceback" not in done.stderr
    kind, message = pickle.loads((tmp_path / "result.pkl").read_bytes())
    assert kind == "load_error" and "Python 3.99" in message


def test_the_worker_names_a_module_it_cannot_import(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A function pickled by reference whose module the replica cannot import: one line."""
    module = types.ModuleType("no_such_mod_torchx")

    def f() -> None:
        return None

    f.__module__, f.__qualname__ = module.__name__, "f"
    module.f = f  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, module.__name__, module)
    minor = list(sys.version_info[:2])
    (tmp_path / "meta.json").write_text(json.dumps({"python": minor, "sys_path": []}))
    (tmp_path / "payload.pkl").write_bytes(pickle.dumps((f, (), {})))
    done = worker(tmp_path)
    assert done.returncode == 3
    assert "No module named 'no_such_mod_torchx'" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr


def test_a_load_error_reaches_the_caller(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The submitter's side: a load_error result becomes RemoteLoadError."""
    (tmp_path / "result.pkl").write_bytes(pickle.dumps(("load_error", "Python 3.99 here")))
    future: functions.AppFuture[int] = functions.AppFuture("local://t/x", tmp_path)
    future._settle(None)
    with pytest.raises(RemoteLoadError, match=r"Python 3\.99 here"):
        future.result(timeout=0)


@pytest.fixture(autouse=True)
def _nothing_left_running() -> Iterator[None]:
    yield
    with get_runner() as runner:
        for app in runner.list("local"):
            if app.state.name not in ("SUCCEEDED", "FAILED", "CANCELLED"):
                runner.cancel(app.app_handle)
