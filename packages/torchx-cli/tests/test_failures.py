"""A failed app says why: the replica's exception (or last stderr line) and the command to read more.

Through the real ``torchx`` command: ``run --wait`` (its status block on stderr),
``status`` and ``status --json`` show the error the Runner found in the failed replica's
stderr (``torchx.runner.failures``), and the ``torchx log HANDLE/ROLE/N`` it suggests
works as printed.
"""

from __future__ import annotations

import json

from helpers import Cli

BAD = """\
import os


def load(batch):
    raise ValueError(f"bad batch on rank {batch}")


print("training", flush=True)
load(1)
"""


def _hint(text: str) -> str:
    lines = [line for line in text.splitlines() if line.startswith("See its log: ")]
    assert len(lines) == 1, text
    return lines[0].removeprefix("See its log: ")


def test_a_raised_exception_is_the_failures_cause_in_wait_status_and_json(cli: Cli) -> None:
    (cli.work / "bad.py").write_text(BAD)
    proc = cli("run", "--wait", "utils.python", "--script", "bad.py", rc=1)
    handle = proc.stdout.strip().splitlines()[-1]
    assert "Error: ValueError: bad batch on rank 1" in proc.stderr.splitlines()
    assert "error=ValueError: bad batch on rank 1" in proc.stderr
    command = _hint(proc.stderr)
    assert command == f"torchx log {handle}/python/0"

    status = cli("status", handle)
    assert "Error: ValueError: bad batch on rank 1" in status.stdout.splitlines()
    assert _hint(status.stdout) == command
    # no raw JSON in the human output
    assert "extraInfo" not in status.stdout + proc.stderr

    data = json.loads(cli("status", "--json", handle).stdout)["data"]["status"]
    rep = data["roles"][0]["replicas"][0]
    for error in (rep["structured_error_msg"], data["structured_error_msg"]):
        message = error["message"]  # an object, not JSON in a string
        assert message["message"] == "ValueError: bad batch on rank 1"
        assert message["extraInfo"]["source"] == "stderr"
        assert message["extraInfo"]["location"] == "bad.py:5"
        assert "Traceback (most recent call last):" in message["extraInfo"]["py_callstack"]

    # the suggested command works verbatim and shows the whole traceback
    log = cli(*command.split()[1:])
    assert "Traceback (most recent call last):" in log.stdout
    assert "training" in log.stdout


def test_a_failure_without_a_traceback_shows_the_last_stderr_line(cli: Cli) -> None:
    script = "echo starting; echo 'disk full: /data' >&2; echo >&2; exit 3"
    proc = cli("run", "--wait", "utils.sh", "sh", "-c", script, rc=1)
    assert "Error: disk full: /data" in proc.stderr.splitlines()
    assert "exit=3" in proc.stderr and "/sh/0" in _hint(proc.stderr)


def test_a_success_has_no_error_and_no_hint(cli: Cli) -> None:
    proc = cli("run", "--wait", "utils.sh", "sh", "-c", "echo fine >&2")
    assert "Error:" not in proc.stderr and "See its log" not in proc.stderr


def test_only_failed_replicas_are_blamed(cli: Cli) -> None:
    # replica 1 fails, replica 0 succeeds (its stderr is not an error)
    script = (
        'echo "ok $TORCHX_REPLICA_ID" >&2; '
        'if [ "$TORCHX_REPLICA_ID" = 1 ]; then echo "rank 1 broke" >&2; exit 2; fi'
    )
    proc = cli("run", "--wait", "utils.sh", "--num_replicas", "2", "sh", "-c", script, rc=1)
    assert "error=rank 1 broke" in proc.stderr, proc.stderr
    assert proc.stderr.count("error=") == 1, proc.stderr
    assert _hint(proc.stderr).endswith("/sh/1")
