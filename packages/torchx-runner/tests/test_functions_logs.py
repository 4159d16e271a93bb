"""The log channel of torchx.functions (Docker and other schedulers without a shared
disk): the frames, their digest, the caps, and the worker run as ``python -c`` with no
torchx to import."""

from __future__ import annotations

import base64
import json
import os
import pickle
import subprocess
import sys
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import torchx.functions as functions
from torchx.functions import _channel, _logs
from torchx.functions._channel import CALL_VAR, FRAME_CHARS, RESULT_CAP, frames

TIMEOUT = 60
TOKEN = "0123456789abcdef"

noise = st.text(st.characters(codec="utf-8", exclude_characters="\n\r"), max_size=40).filter(
    lambda t: "TORCHX-FN" not in t
)


def framed(data: bytes, token: str = TOKEN) -> list[str]:
    return list(frames(token, data))


@settings(max_examples=200, deadline=None)
@given(
    data=st.binary(max_size=3 * FRAME_CHARS),
    before=st.lists(noise, max_size=5),
    between=st.lists(noise, max_size=5),
    prefix=noise,
)
def test_the_frames_carry_any_bytes_among_other_lines(
    data: bytes, before: list[str], between: list[str], prefix: str
) -> None:
    lines = framed(data)
    # the function's own lines before and among the frames (stderr's, in a merged log),
    # and a print without a final newline before the first frame
    mixed = [*before, prefix + lines[0], *between, *lines[1:]]
    assert _logs.parse(mixed, TOKEN) == (data, True)


@settings(max_examples=100, deadline=None)
@given(data=st.binary(min_size=1, max_size=3 * FRAME_CHARS), pick=st.integers(min_value=0))
def test_a_set_with_a_frame_missing_carries_nothing(data: bytes, pick: int) -> None:
    lines = framed(data)
    del lines[pick % len(lines)]
    assert _logs.parse(lines, TOKEN) == (None, True)


@settings(max_examples=100, deadline=None)
@given(data=st.binary(min_size=1, max_size=3 * FRAME_CHARS), pick=st.integers(min_value=0))
def test_a_corrupt_frame_carries_nothing(data: bytes, pick: int) -> None:
    lines = framed(data)
    line = lines[pick % (len(lines) - 1)]  # a data frame: its last base64 character
    last = line.rstrip("\n")[-1]
    swapped = "A" if last != "A" else "B"
    lines[lines.index(line)] = line.rstrip("\n")[:-1] + swapped + "\n"
    assert _logs.parse(lines, TOKEN) == (None, True)


def test_frames_in_the_wrong_order_carry_nothing() -> None:
    lines = framed(os.urandom(3 * FRAME_CHARS))
    lines[1], lines[2] = lines[2], lines[1]
    assert _logs.parse(lines, TOKEN) == (None, True)


def test_the_last_complete_set_wins_and_other_tokens_are_ignored() -> None:
    retried = framed(b"first")[:-1] + framed(b"second") + framed(b"third", "fedcba9876543210")
    assert _logs.parse(retried, TOKEN) == (b"second", True)
    assert _logs.parse(["hello\n", "TORCHX-FN-RESULT nonsense\n"], TOKEN) == (None, False)


def test_every_frame_line_fits_the_log_drivers_pieces() -> None:
    lines = framed(os.urandom(10 * FRAME_CHARS))
    assert len(lines) == 15  # 14 frames of base64 (4/3 of the bytes), then the end
    assert max(len(line.encode()) for line in lines) < 16 * 1024
    assert lines[-1].startswith(f"TORCHX-FN-END {TOKEN} 14 ")


def test_an_empty_outcome_still_has_a_frame() -> None:
    assert _logs.parse(framed(b""), TOKEN) == (b"", True)


def test_an_outcome_over_the_result_cap_becomes_an_error() -> None:
    code, data = _channel.log_outcome(0, b"x" * (RESULT_CAP + 1))
    kind, name, message, _ = pickle.loads(data)
    assert (code, kind, name) == (1, "raised_text", "ResultTooLarge")
    assert f"{RESULT_CAP + 1} bytes, over the {RESULT_CAP} bytes" in message
    assert "return their URL" in message and "shared disk" in message
    assert _channel.log_outcome(0, b"small") == (0, b"small")


def test_a_call_over_the_cap_is_refused_in_one_line() -> None:
    meta = {"python": [3, 11], "sys_path": []}
    _, value = _logs.call_env(meta, b"x" * _logs.CALL_CAP)
    with pytest.raises(functions.CallTooLarge) as info:
        _logs.check_size("add", value, "docker")
    message = str(info.value)
    assert "\n" not in message
    size = len(value) + len(_logs.worker_source())
    assert f"the call of add takes {size} bytes on docker" in message
    assert f"over the cap of {_logs.CALL_CAP}" in message
    assert "pass large data by URL" in message and "shared disk" in message
    _, small = _logs.call_env(meta, b"x" * 1000)
    _logs.check_size("add", small, "docker")  # fits: no error


def test_the_worker_source_leaves_room_under_the_cap() -> None:
    assert len(_logs.worker_source()) < _logs.CALL_CAP // 3


def run_worker(payload: bytes, python: tuple[int, int] | None = None) -> tuple[int, Any, str]:
    """The log worker as a container runs it: ``python -c``, here with ``-S -I`` so
    neither torchx nor cloudpickle (nor anything of site-packages) can be imported."""
    meta = {"python": list(python or sys.version_info[:2]), "sys_path": []}
    token, value = _logs.call_env(meta, payload)
    done = subprocess.run(
        [sys.executable, "-S", "-I", "-c", _logs.worker_source()],
        env={CALL_VAR: value},
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
        cwd="/",
    )
    data, _ = _logs.parse(done.stdout.splitlines(keepends=True), token)
    assert data is not None, done
    return done.returncode, pickle.loads(data), done.stderr


def test_on_sagemaker_the_call_and_the_worker_travel_in_pieces_it_takes() -> None:
    """CreateTrainingJob: arguments of at most 256 characters, at most 100 environment
    values of at most 512; a call at the cap still leaves room for the role's own."""
    meta = {"python": list(sys.version_info[:2]), "sys_path": []}
    payload = pickle.dumps((len, (b"y" * (_logs.CALL_CAP - 10_000),), {}))
    token, value = _logs.call_env(meta, payload)
    _logs.check_size("len", value, "aws_sagemaker")  # under the cap
    args, env = _logs.program("aws_sagemaker", value)
    assert args == ["-c", _logs.BOOT] and all(len(a) <= 256 for a in args)
    assert all(len(v) <= 512 for v in env.values()) and len(env) <= 50, len(env)
    done = subprocess.run(
        [sys.executable, "-S", "-I", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
        cwd="/",
    )
    data, _ = _logs.parse(done.stdout.splitlines(keepends=True), token)
    assert data is not None, done
    assert (done.returncode, pickle.loads(data)) == (0, ("ok", _logs.CALL_CAP - 10_000))


def test_elsewhere_the_call_and_the_worker_travel_whole() -> None:
    assert _logs.program("docker", "{}") == (["-c", _logs.worker_source()], {CALL_VAR: "{}"})


def test_the_worker_runs_without_torchx_installed() -> None:
    code, outcome, _ = run_worker(pickle.dumps((pow, (2, 10), {})))
    assert (code, outcome) == (0, ("ok", 1024))


def test_the_worker_sends_back_a_raised_exception() -> None:
    code, outcome, stderr = run_worker(pickle.dumps((int, ("x",), {})))
    assert code == 1 and outcome[0] == "raised" and isinstance(outcome[1], ValueError)
    assert "invalid literal" in outcome[2] and "invalid literal" in stderr


def test_the_worker_says_when_cloudpickle_is_missing_in_one_line() -> None:
    import cloudpickle

    code, outcome, stderr = run_worker(cloudpickle.dumps((lambda: 1, (), {})))
    assert code == _channel.EXIT_LOAD_ERROR and outcome[0] == "load_error"
    assert "install cloudpickle in the image" in outcome[1]
    assert stderr.strip().splitlines() == [f"torchx.functions: {outcome[1]}"]


def test_the_worker_refuses_another_python_in_one_line() -> None:
    code, outcome, stderr = run_worker(b"not read", python=(3, 99))
    assert code == _channel.EXIT_LOAD_ERROR and outcome[0] == "load_error"
    assert "pickled by Python 3.99" in outcome[1] and "use an image with Python 3.99" in outcome[1]
    assert len(stderr.strip().splitlines()) == 1


def test_a_result_over_the_cap_comes_back_as_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    code, outcome, _ = run_worker(pickle.dumps((bytes, (RESULT_CAP + 1,), {})))
    assert code == 1 and outcome[:2] == ("raised_text", "ResultTooLarge")


def test_the_call_variable_is_json_with_the_payload_in_base64() -> None:
    token, value = _logs.call_env({"python": [3, 11]}, b"\x00\xff")
    sent = json.loads(value)
    assert sent["token"] == token and len(token) == 16
    assert base64.b64decode(sent["payload"]) == b"\x00\xff"


def test_docker_needs_an_image_and_takes_no_channel_dir() -> None:
    with pytest.raises(ValueError, match="on docker needs image=: a container image with python3"):
        functions.submit(pow, 2, 3, scheduler="docker")
    with pytest.raises(ValueError, match="channel_dir is for schedulers with a shared disk"):
        functions.submit(pow, 2, 3, scheduler="docker", image="img", channel_dir="/tmp")


class LogOnly:
    """A Runner of which the future uses ``log_lines`` alone: the replica's log."""

    def __init__(self, lines: list[str]) -> None:
        self.lines = lines
        self.asked: list[tuple[Any, ...]] = []

    def log_lines(self, handle: str, role: str, k: int = 0, **kw: Any) -> list[str]:
        self.asked.append((handle, role, k, kw))
        return self.lines


def settled(lines: list[str], token: str = TOKEN) -> functions.AppFuture[Any]:
    from torchx.specs import AppState, AppStatus

    future: functions.AppFuture[Any] = functions.AppFuture("docker://torchx/f-1", None, token)
    runner = LogOnly(lines)
    future._settle(AppStatus(state=AppState.SUCCEEDED), runner)  # type: ignore[arg-type]
    # stdout and stderr together (Kubernetes and AWS Batch cannot separate them)
    assert runner.asked == [("docker://torchx/f-1", "fn", 0, {})]
    return future


def test_the_future_takes_its_result_from_the_log() -> None:
    outcome = pickle.dumps(("ok", {"answer": 42}))
    lines = ["printed by the function\n", "a warning on stderr\n", *framed(outcome)]
    assert settled(lines).result(timeout=0) == {"answer": 42}


def test_a_raised_exception_comes_back_from_the_log() -> None:
    outcome = pickle.dumps(("raised", KeyError("k"), "Traceback ... KeyError: 'k'"))
    with pytest.raises(KeyError) as info:
        settled(framed(outcome)).result(timeout=0)
    assert isinstance(info.value.__cause__, functions.RemoteTraceback)


def test_corrupt_frames_in_the_log_are_no_result() -> None:
    lines = framed(pickle.dumps(("ok", 1)))
    lines[0] = lines[0].replace(" 0/1 ", " 0/2 ")
    with pytest.raises(functions.NoResult) as info:
        settled(lines).result(timeout=0)
    message = str(info.value)
    assert "ended SUCCEEDED without a result: its result frames in the log are" in message
    assert message.endswith("incomplete or corrupt; see: torchx log docker://torchx/f-1")


def test_a_log_without_frames_is_no_result_pointing_at_the_log() -> None:
    with pytest.raises(functions.NoResult) as info:
        settled(["only the function's own line\n"]).result(timeout=0)
    assert str(info.value) == (
        "docker://torchx/f-1 ended SUCCEEDED without a result; see: torchx log docker://torchx/f-1"
    )


def test_a_lagging_log_is_read_again_until_the_frames_are_there() -> None:
    whole = framed(b"late")
    reads = iter([["a line\n"], whole[:1], whole])  # CloudWatch catching up
    pauses: list[float] = []
    assert _logs.read(lambda: next(reads), TOKEN, 30.0, pauses.append) == (b"late", True)
    assert pauses == [0.5, 1.0]


def test_a_log_that_never_gets_its_frames_gives_up_after_its_patience() -> None:
    pauses: list[float] = []
    assert _logs.read(lambda: ["x\n"], TOKEN, 30.0, pauses.append) == (None, False)
    assert pauses == [0.5, 1.0, 2.0, 4.0, 8.0, 8.0, 8.0] and sum(pauses) >= 30.0
    assert _logs.read(lambda: ["x\n"], TOKEN, 0.0, pauses.append) == (None, False)
    assert len(pauses) == 7  # no patience (Docker, Kubernetes): read once
    assert _logs.LATE_LOGS == {"aws_batch": 30.0, "aws_sagemaker": 30.0}


def test_a_module_registered_by_value_travels_by_value(monkeypatch: pytest.MonkeyPatch) -> None:
    """An importable function whose module the image lacks: registered with cloudpickle,
    it is pickled by value, so it loads without importing its module."""
    import cloudpickle

    from torchx.schedulers.testing import functions as kit

    by_reference = functions._payload(kit.add, (2, 3), {})
    cloudpickle.register_pickle_by_value(kit)
    try:
        by_value = functions._payload(kit.add, (2, 3), {})
    finally:
        cloudpickle.unregister_pickle_by_value(kit)
    monkeypatch.delitem(sys.modules, kit.__name__)
    fn, args, _ = pickle.loads(by_value)
    assert fn(*args) == 5
    assert kit.__name__ not in sys.modules  # by value: its module was not needed
    pickle.loads(by_reference)
    assert kit.__name__ in sys.modules  # by reference: imported again
