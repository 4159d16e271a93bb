"""torchx.schedulers.helpers.replica_errors: reading elastic error files and errors out of stderr,
and torchx.runner.failures filling them into a FAILED app's status."""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from torchx.runner.failures import explain_failure
from torchx.schedulers.helpers.replica_errors import (
    ERROR_FILE_ENV,
    MAX_ERROR_FILE_BYTES,
    error_file_env,
    error_from_stderr,
    read_error_file,
)
from torchx.specs.api import NONE, AppState, AppStatus, ReplicaStatus, RoleStatus
from torchx.specs.structured_errors import error_message

TORCHRUN_STDERR = """\
[rank1]: Traceback (most recent call last):
[rank1]:   File "/work/train.py", line 41, in <module>
[rank1]:     main()
[rank1]:   File "/work/train.py", line 37, in main
[rank1]:     raise ValueError("bad batch on rank 1")
[rank1]: ValueError: bad batch on rank 1
E1125 02:00:00.000000 123 torch/distributed/elastic/multiprocessing/api.py:900] failed
Traceback (most recent call last):
  File "/venv/bin/torchrun", line 8, in <module>
    sys.exit(main())
             ^^^^^^
torch.distributed.elastic.multiprocessing.errors.ChildFailedError:
============================================================
train.py FAILED
------------------------------------------------------------
Root Cause (first observed failure):
[0]:
  rank      : 1 (local_rank: 1)
  exitcode  : 1 (pid: 4242)
  error_file: <N/A>
============================================================
"""


def _message(structured: str) -> dict[str, object]:
    data = json.loads(structured)["message"]
    assert isinstance(data, dict)
    return data


def test_torchruns_summary_is_skipped_for_the_workers_exception() -> None:
    msg = _message(error_from_stderr(TORCHRUN_STDERR.splitlines(keepends=True)))
    assert msg["message"] == "ValueError: bad batch on rank 1"
    extra = msg["extraInfo"]
    assert isinstance(extra, dict)
    assert extra["location"] == "train.py:37"
    assert extra["py_callstack"].startswith("Traceback")  # the [rank1]: prefix is gone
    assert extra["stderr_tail"].endswith("=" * 60)


def test_torchruns_tee_prefix_is_removed_too() -> None:
    lines = [
        "[1]:Traceback (most recent call last):",
        '[1]:  File "t.py", line 4, in <module>',
        "[1]:ValueError: bad batch on rank 1",
    ]
    assert _message(error_from_stderr(lines))["message"] == "ValueError: bad batch on rank 1"


def test_chained_exceptions_give_the_last_one() -> None:
    lines = [
        "Traceback (most recent call last):",
        '  File "a.py", line 1, in <module>',
        "KeyError: 'x'",
        "",
        "During handling of the above exception, another exception occurred:",
        "",
        "Traceback (most recent call last):",
        '  File "a.py", line 3, in <module>',
        "mypkg.errors.ConfigError: no key x",
    ]
    msg = _message(error_from_stderr(lines))
    assert msg["message"] == "mypkg.errors.ConfigError: no key x"


def test_no_traceback_gives_the_last_non_empty_line_and_nothing_gives_none() -> None:
    assert _message(error_from_stderr(["a\n", "disk full\n", "\n", "  \n"]))["message"] == (
        "disk full"
    )
    assert error_from_stderr([]) == NONE
    assert error_from_stderr(["\n", "   \n"]) == NONE


def test_only_the_tail_is_kept() -> None:
    lines = (f"line {i}\n" for i in range(100_000))
    extra = _message(error_from_stderr(lines))["extraInfo"]
    assert isinstance(extra, dict)
    assert extra["stderr_tail"].splitlines() == [f"line {i}" for i in range(99_980, 100_000)]


@given(st.lists(st.text(max_size=80), max_size=30))
def test_any_stderr_gives_none_or_json_whose_message_is_one_of_its_lines(lines: list[str]) -> None:
    got = error_from_stderr(lines)
    if got == NONE:
        assert not "".join(lines).strip()
        return
    message = error_message(got)
    assert message is not None and "\n" not in message
    assert _message(got)["extraInfo"]["source"] == "stderr"  # type: ignore[index]


def test_read_error_file(tmp_path: Path) -> None:
    path = tmp_path / "error.json"
    assert read_error_file(path) == NONE  # missing
    path.write_text("")
    assert read_error_file(path) == NONE  # not yet written
    path.write_text('{"message": {"message": "RuntimeError: boom", "extraInfo": {}}')
    assert read_error_file(path) == NONE  # half written
    path.write_text('{"other": 1}')
    assert read_error_file(path) == NONE
    record = {"message": {"message": "RuntimeError: boom", "extraInfo": {"timestamp": "1"}}}
    path.write_text(json.dumps(record, indent=2))
    assert json.loads(read_error_file(path)) == record
    assert error_message(read_error_file(path)) == "RuntimeError: boom"
    path.write_text(json.dumps({"message": "x" * MAX_ERROR_FILE_BYTES}))
    assert read_error_file(path) == NONE  # too big to be an error record


def test_error_file_env_never_overrides_the_roles_own() -> None:
    assert error_file_env("/tmp/e.json", {"A": "1"}) == {"A": "1", ERROR_FILE_ENV: "/tmp/e.json"}
    own = {ERROR_FILE_ENV: "/mine.json"}
    assert error_file_env("/tmp/e.json", own) == own


class _Sched:
    """log_iter of canned stderr, recording what was read."""

    missing_capabilities: dict[str, str] = {}

    def __init__(self, logs: dict[tuple[str, int], list[str]]) -> None:
        self.logs = logs
        self.read: list[tuple[str, int, object]] = []

    def log_iter(self, app_id: str, role: str, k: int = 0, streams: object = None) -> list[str]:
        self.read.append((role, k, streams))
        if (role, k) not in self.logs:
            raise FileNotFoundError(role)
        return self.logs[(role, k)]


def _status(state: AppState, *reps: ReplicaStatus) -> AppStatus:
    return AppStatus(state, roles=[RoleStatus("r", list(reps))])


def test_explain_failure_reads_only_failed_replicas_without_an_error() -> None:
    given_error = json.dumps({"message": {"message": "OSError: from the error file"}})
    sched = _Sched({("r", 1): ["boom\n"], ("r", 2): ["not read\n"]})
    status = _status(
        AppState.FAILED,
        ReplicaStatus(0, AppState.SUCCEEDED, "r", "h"),
        ReplicaStatus(1, AppState.FAILED, "r", "h"),
        ReplicaStatus(2, AppState.FAILED, "r", "h", structured_error_msg=given_error),
        ReplicaStatus(3, AppState.FAILED, "r", "h"),  # its log is gone: left as it was
    )
    explain_failure(sched, "app", status)  # type: ignore[arg-type]
    assert [(role, k) for role, k, _ in sched.read] == [("r", 1), ("r", 3)]
    assert sched.read[0][2] == "stderr"
    reps = status.roles[0].replicas
    assert error_message(reps[1].structured_error_msg) == "boom"
    assert reps[2].structured_error_msg == given_error
    assert reps[3].structured_error_msg == NONE and reps[0].structured_error_msg == NONE
    assert status.structured_error_msg == reps[1].structured_error_msg


def test_explain_failure_leaves_other_states_and_log_less_schedulers_alone() -> None:
    sched = _Sched({("r", 0): ["boom\n"]})
    running = _status(AppState.RUNNING, ReplicaStatus(0, AppState.FAILED, "r", "h"))
    explain_failure(sched, "app", running)  # type: ignore[arg-type]
    assert sched.read == []
    sched.missing_capabilities = {"logs": "no logs"}
    failed = _status(AppState.FAILED, ReplicaStatus(0, AppState.FAILED, "r", "h"))
    explain_failure(sched, "app", failed)  # type: ignore[arg-type]
    assert sched.read == [] and failed.structured_error_msg == NONE
