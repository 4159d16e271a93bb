"""``run --json`` with ``--wait``/``--log``: stdout is JSON only, one document per line."""

from __future__ import annotations

import json
from typing import Any

from helpers import Cli


def _documents(stdout: str) -> list[dict[str, Any]]:
    """Each line of stdout as a JSON document (fails on any line that is not one)."""
    lines = stdout.splitlines()
    assert lines, "nothing on stdout"
    return [json.loads(line) for line in lines]


def test_run_json_wait_prints_one_document_per_line_with_nulls(cli: Cli) -> None:
    proc = cli("run", "--json", "--wait", "utils.echo", "--msg", "hi")
    handle_doc, status_doc = _documents(proc.stdout)
    assert handle_doc["formatVersion"] == status_doc["formatVersion"] == "torchx.cli/v1"
    assert handle_doc["kind"] == "AppHandle" and status_doc["kind"] == "AppStatus"
    status = status_doc["data"]["status"]
    assert status["state"] == "SUCCEEDED"
    assert status["msg"] is None and status["structured_error_msg"] is None
    assert status["roles"][0]["replicas"][0]["structured_error_msg"] is None
    assert "<NONE>" not in proc.stdout
    assert "State: SUCCEEDED" in proc.stderr  # the status text is for a person: stderr


def test_run_json_log_puts_the_log_lines_on_stderr(cli: Cli) -> None:
    proc = cli("run", "--json", "--log", "utils.echo", "--msg", "hello-json")
    kinds = [doc["kind"] for doc in _documents(proc.stdout)]
    assert kinds == ["AppHandle", "AppStatus"]
    assert "hello-json" not in proc.stdout
    assert "echo/0 hello-json" in proc.stderr.splitlines()


def test_a_failures_structured_error_is_an_object_in_run_and_status_json(cli: Cli) -> None:
    (cli.work / "bad.py").write_text("raise ValueError('bad batch')\n")
    proc = cli("run", "--json", "--wait", "utils.python", "--script", "bad.py", rc=1)
    _, status_doc = _documents(proc.stdout)
    handle = status_doc["data"]["handle"]
    status = json.loads(cli("status", "--json", handle).stdout)["data"]["status"]
    for data in (status_doc["data"]["status"], status):
        error = data["structured_error_msg"]
        assert isinstance(error, dict), error
        assert error["message"]["message"] == "ValueError: bad batch"
        assert data["msg"] is not None


def test_run_help_says_stdout_is_json_only(cli: Cli) -> None:
    text = " ".join(cli("run", "--help").stdout.split())
    assert "stdout is JSON only, one document per line" in text
    assert "go to stderr" in text
