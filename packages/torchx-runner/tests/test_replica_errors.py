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


# torch 2.13's torchrun, -j 1x2 (--tee 3 --role ''), rank 1 raising: its tee thread wrote the
# worker's last lines in the middle of torchrun's own summary (seen under load)
INTERLEAVED = """\
[1]:Traceback (most recent call last):
[1]:  File "/work/bad.py", line 4, in <module>
E1129 02:45:18.758000 5439 torch/distributed/elastic/multiprocessing/api.py:1002] failed (exitcode: 1) local_rank: 1 (pid: 5694) of binary: /venv/bin/python
Traceback (most recent call last):
  File "/venv/lib/python3.11/site-packages/torch/distributed/launcher/api.py", line 383, in launch_agent
    raise ChildFailedError(
torch.distributed.elastic.multiprocessing.errors.ChildFailedError:\x20
============================================================
[1]:    raise RuntimeError(f"rank {rank} exploded")
[1]:RuntimeError: rank 1 exploded
bad.py FAILED
------------------------------------------------------------
Failures:
  <NO_OTHER_FAILURES>
------------------------------------------------------------
Root Cause (first observed failure):
[0]:
  time      : 2026-11-29_02:45:18
  host      : localhost
  rank      : 1 (local_rank: 1)
  exitcode  : 1 (pid: 5694)\x20
  error_file: <N/A>
  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html
============================================================
"""


def test_the_root_cause_blocks_rank_is_the_cause_when_torchrun_interleaves_its_lines() -> None:
    msg = _message(error_from_stderr(INTERLEAVED.splitlines(keepends=True)))
    assert msg["message"] == "RuntimeError: rank 1 exploded"
    extra = msg["extraInfo"]
    assert isinstance(extra, dict)
    assert (extra["rank"], extra["error_file"], extra["location"]) == ("1", "", "bad.py:4")
    assert extra["py_callstack"].splitlines()[0] == "Traceback (most recent call last):"


def test_a_node_of_one_worker_is_local_rank_0_and_the_failure_index_is_not_a_prefix() -> None:
    # -j 2x1: the failed node's worker is global rank 1, local rank 0; the block's own
    # "[0]:" (the failure's index) carries nothing
    text = INTERLEAVED.replace("[1]:", "[0]:").replace("(local_rank: 1)", "(local_rank: 0)")
    msg = _message(error_from_stderr(text.splitlines()))
    assert msg["message"] == "RuntimeError: rank 1 exploded"
    assert msg["extraInfo"]["rank"] == "1"  # type: ignore[index]
    other = INTERLEAVED.replace("(local_rank: 1)", "(local_rank: 0)")  # rank 0 wrote nothing
    assert _message(error_from_stderr(other.splitlines()))["message"] == (
        "rank 1 failed (torchrun: exitcode 1)"
    )


def test_an_error_files_traceback_in_the_root_cause_block_is_the_cause() -> None:
    # a worker decorated with @record: torchrun prints its error file's traceback, indented
    block = """\
torch.distributed.elastic.multiprocessing.errors.ChildFailedError:\x20
============================================================
rec.py FAILED
------------------------------------------------------------
Root Cause (first observed failure):
[0]:
  rank      : 1 (local_rank: 1)
  exitcode  : 1 (pid: 6411)\x20
  error_file: /tmp/torchelastic_x/attempt_0/1/error.json
  traceback : Traceback (most recent call last):
    File "/venv/torch/distributed/elastic/multiprocessing/errors/__init__.py", line 367, in wrapper
      return f(*args, **kwargs)
    File "/work/rec.py", line 7, in main
      raise RuntimeError(f"rank {rank} exploded")
  RuntimeError: rank 1 exploded
\x20\x20
============================================================
"""
    msg = _message(error_from_stderr(block.splitlines()))
    assert msg["message"] == "RuntimeError: rank 1 exploded"
    extra = msg["extraInfo"]
    assert isinstance(extra, dict)
    assert extra["error_file"] == "/tmp/torchelastic_x/attempt_0/1/error.json"
    assert extra["location"] == "rec.py:7"


def test_a_separator_is_never_the_message() -> None:
    lines = ["exitcode  : -9", "=" * 60, "", "-" * 60]
    assert _message(error_from_stderr(lines))["message"] == "exitcode  : -9"
