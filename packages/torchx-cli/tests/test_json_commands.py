"""``--json`` on log, builtins, runopts, cancel and delete; ``log -f``; several handles
for status and cancel, and cancel by state."""

from __future__ import annotations

import json
from typing import Any

from helpers import Cli


def _lines(stdout: str) -> list[dict[str, Any]]:
    docs = [json.loads(line) for line in stdout.splitlines()]
    assert docs and all(d["formatVersion"] == "torchx.cli/v1" for d in docs), stdout
    return docs


def _finished(cli: Cli, *args: str) -> str:
    return cli("run", "--wait", *args).stdout.strip().splitlines()[-1]


def test_log_json_is_one_object_per_line_with_its_stream_and_time(cli: Cli) -> None:
    handle = _finished(cli, "utils.sh", "sh", "-c", "echo to-out; echo to-err >&2")
    docs = _lines(cli("log", "--json", handle).stdout)
    assert {d["kind"] for d in docs} == {"LogLine"}
    seen = {(d["data"]["stream"], d["data"]["line"]) for d in docs}
    assert seen == {("stdout", "to-out"), ("stderr", "to-err")}
    for d in docs:
        assert d["data"]["role"] == "sh" and d["data"]["replica"] == 0
        assert isinstance(d["data"]["time"], float)  # the local scheduler keeps line times
    only_err = _lines(cli("log", "--json", "--streams", "stderr", handle).stdout)
    assert [d["data"]["line"] for d in only_err] == ["to-err"]
    matched = _lines(cli("log", "--json", "--regex", "out", handle).stdout)
    assert [d["data"]["line"] for d in matched] == ["to-out"]


def test_log_follow_and_f_are_the_tail_flag(cli: Cli) -> None:
    handle = _finished(cli, "utils.echo", "--msg", "followed")
    for flag in ("-f", "--follow", "-t"):
        assert cli("log", flag, handle).stdout.splitlines() == ["echo/0 followed"]
    assert "-f, --follow" in " ".join(cli("log", "--help").stdout.split())


def test_log_follow_json_prints_each_line_as_the_running_app_writes_it(cli: Cli) -> None:
    handle = cli.start("utils.sh", "sh", "-c", "echo one; sleep 0.5; echo two >&2; echo three")
    docs = _lines(cli("log", "-f", "--json", handle).stdout)  # returns once the app ends
    got = [(d["data"]["stream"], d["data"]["line"]) for d in docs]
    assert sorted(got) == [("stderr", "two"), ("stdout", "one"), ("stdout", "three")]
    assert got.index(("stdout", "one")) < got.index(("stdout", "three"))
    assert all(isinstance(d["data"]["time"], float) for d in docs)


def test_builtins_and_runopts_json(cli: Cli) -> None:
    (doc,) = _lines(cli("builtins", "--json").stdout.replace("\n", " ") + "\n")
    names = {c["name"] for c in doc["data"]}
    assert {"dist.ddp", "utils.echo"} <= names
    (doc,) = _lines(cli("runopts", "local", "--json").stdout.replace("\n", " ") + "\n")
    opts = {o["name"]: o for o in doc["data"]["local"]}
    assert opts["log_dir"]["type"] == "str" and opts["log_dir"]["required"] is False


def test_cancel_and_status_take_several_handles(cli: Cli) -> None:
    a = cli.start("utils.sh", "sleep", "60")
    b = cli.start("utils.sh", "sleep", "60")
    done = _finished(cli, "utils.echo")
    missing = "local://torchx/no-such-app"
    status = cli("status", a, b, missing, rc=2)
    assert status.stdout.count("AppHandle: ") == 2
    assert f"no app {missing!r}" in status.stderr
    docs = _lines(cli("status", "--json", a, done).stdout)
    assert [d["data"]["handle"] for d in docs] == [a, done]

    proc = cli("cancel", "--json", a, done, missing, rc=2)
    (doc,) = _lines(proc.stdout.replace("\n", " ") + "\n")
    results = {r["handle"]: r["result"] for r in doc["data"]}
    assert results == {a: "cancelled", done: "ended", missing: "error"}
    assert f"no app {missing!r}" in proc.stderr
    assert cli.status_json(a)["state"] == "CANCELLED"
    assert cli.status_json(b)["state"] in ("PENDING", "RUNNING")  # only those named


def test_cancel_by_state_asks_for_yes_and_says_how_many(cli: Cli) -> None:
    a = cli.start("utils.sh", "sleep", "60")
    b = cli.start("utils.sh", "sleep", "60")
    err = cli("cancel", "--state", "running,pending", rc=2).stderr
    assert err.strip() == (
        "torchx cancel: error: would cancel 2 apps: pass --yes to do it without a terminal to ask on"
    )
    assert cli.status_json(a)["state"] in ("PENDING", "RUNNING")
    out = cli("cancel", "--state", "running,pending", "-s", "local", "--yes").stdout
    assert sorted(out.split()) == sorted(["cancelled", a, "cancelled", b])
    assert "no app to cancel" in cli("cancel", "--state", "running", "--yes").stderr


def test_delete_json(cli: Cli) -> None:
    handle = _finished(cli, "utils.echo")
    (doc,) = _lines(cli("delete", "--json", handle).stdout.replace("\n", " ") + "\n")
    assert doc["kind"] == "Deleted" and doc["data"] == [{"handle": handle}]
