"""Following an app from a later process: status, describe, list, cancel, delete, log."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from helpers import Cli

MISSING = "local://torchx/nope-0000000000"


def _finished(cli: Cli, *run_args: str) -> str:
    out = cli("run", "--wait", *run_args, rc=None).stdout
    return out.strip().splitlines()[0]


def test_status_of_a_finished_app(cli: Cli) -> None:
    handle = _finished(cli, "utils.echo", "--num_replicas", "2")
    out = cli("status", handle).stdout
    assert out.startswith(f"AppHandle: {handle}\nState: SUCCEEDED")
    assert "echo/0  SUCCEEDED  exit=0" in out and "echo/1  SUCCEEDED" in out
    status = cli.status_json(handle)
    assert status["state"] == "SUCCEEDED" and len(status["roles"][0]["replicas"]) == 2
    assert "echo:" in cli("status", "--roles", "echo", handle).stdout
    err = cli("status", "--roles", "ecoh", handle, rc=2).stderr
    assert "no role 'ecoh'" in err and "did you mean 'echo'" in err


def test_status_masks_secrets_in_messages(cli: Cli) -> None:
    handle = _finished(cli, "utils.sh", "--env", "GH_TOKEN=ghp_s3cret", "false")
    doc = cli.status_json(handle)
    assert doc["state"] == "FAILED"
    text = cli("status", handle).stdout + cli("status", "--json", handle).stdout
    assert "ghp_s3cret" not in text


def test_describe_is_readable_and_masks_secrets(cli: Cli) -> None:
    handle = _finished(
        cli, "utils.sh", "--env", "AWS_SECRET_ACCESS_KEY=abc123xyz,COLOR=blue", "true"
    )
    out = cli("describe", handle).stdout
    assert out.startswith(f"AppHandle: {handle}\nAppDef: sh")
    assert "  Role sh: 1 replica" in out and "command:   sh -c true" in out
    assert "AWS_SECRET_ACCESS_KEY=****" in out and "COLOR=blue" in out and "abc123xyz" not in out
    assert "abc123xyz" not in cli("describe", "--json", handle).stdout
    assert "AWS_SECRET_ACCESS_KEY=abc123xyz" in cli("describe", "--show-secrets", handle).stdout


def test_describe_prints_the_run_options_as_the_scheduler_kept_them(cli: Cli) -> None:
    logs = str(cli.work / "logs")
    handle = _finished(cli, "-cfg", f"log_dir={logs},grace_period=2.5", "utils.echo")
    out = cli("describe", handle).stdout
    assert "Run options:\n" in out
    assert f"  log_dir: {logs}\n" in out and "  grace_period: 2.5\n" in out
    doc = json.loads(cli("describe", "--json", handle).stdout)
    assert doc["apiVersion"] == "torchx.specs/v1"  # the specs document, versioned
    options = json.loads(doc["spec"]["metadata"]["torchx.runOptions"])
    assert options["log_dir"] == logs and options["grace_period"] == 2.5
    # run again from it: the run options entry is not the app's
    (cli.work / "again.json").write_text(json.dumps(doc))
    again = _finished(cli, "again.json")
    rerun = json.loads(cli("describe", "--json", again).stdout)
    assert "log_dir" not in json.loads(rerun["spec"]["metadata"]["torchx.runOptions"])


def test_list_newest_first_and_json(cli: Cli) -> None:
    assert cli("list").stdout.strip() == "no apps"
    first = _finished(cli, "utils.echo")
    second = _finished(cli, "utils.sh", "false")
    lines = cli("list").stdout.splitlines()
    assert lines[0].split() == ["APP", "HANDLE", "STATE", "STARTED", "DURATION", "NAME"]
    assert [line.split()[0] for line in lines[1:]] == [second, first]
    assert lines[1].split()[1] == "FAILED" and lines[2].split()[1] == "SUCCEEDED"
    doc = json.loads(cli("list", "--json").stdout)
    assert doc["formatVersion"] == "torchx.cli/v1" and doc["kind"] == "AppList"
    assert [a["handle"] for a in doc["data"]] == [second, first]
    cli("list", "-s", "local_cwd")
    err = cli("list", "-s", "locl", rc=2).stderr
    assert "did you mean 'local'" in err


def test_status_list_and_their_json_show_start_end_and_duration(cli: Cli) -> None:
    import time
    from datetime import datetime

    before = time.time()
    handle = _finished(cli, "utils.sh", "sleep", "1")
    after = time.time()
    running = cli.start("utils.sh", "sleep", "30")
    status = cli.status_json(handle)
    start, end = status["start_time"], status["end_time"]
    assert before - 1 <= start < end <= after and end - start >= 1.0
    doc = json.loads(cli("status", "--json", handle).stdout)["data"]
    assert doc["duration_s"] == round(end - start, 3)
    text = cli("status", handle).stdout
    started = datetime.fromtimestamp(start).isoformat(" ", "seconds")
    assert f"\nStarted: {started}\nEnded: " in text and "(after 1." in text
    live = cli("status", running).stdout
    assert "\nStarted: " in live and "Ended:" not in live
    assert cli.status_json(running)["end_time"] is None
    rows = {line.split()[0]: line for line in cli("list").stdout.splitlines()[1:]}
    assert f"SUCCEEDED   {started}  1." in rows[handle]
    # a running app's DURATION is its elapsed time so far (it was "-")
    assert rows[running].split()[1] == "RUNNING"
    from torchx.specs.durations import parse_duration

    assert 0 <= parse_duration(rows[running].split()[4]) < 30
    listed = {a["handle"]: a for a in json.loads(cli("list", "--json").stdout)["data"]}
    assert (listed[handle]["start_time"], listed[handle]["end_time"]) == (start, end)
    assert listed[handle]["duration_s"] == round(end - start, 3)
    assert listed[running]["end_time"] is None
    elapsed = time.time() - listed[running]["start_time"]
    assert 0 <= listed[running]["duration_s"] <= elapsed  # was null
    live_doc = json.loads(cli("status", "--json", running).stdout)["data"]
    assert live_doc["duration_s"] >= listed[running]["duration_s"]


def test_list_filters_by_state_and_limit_and_caps_the_handle_column(cli: Cli) -> None:
    ok = [_finished(cli, "utils.echo") for _ in range(2)]
    failed = _finished(cli, "utils.sh", "false")
    long_name = "n" * 300  # an AppDef file gives the app any name
    doc = json.loads(cli("describe", "--json", ok[0]).stdout)
    doc["spec"]["name"] = long_name
    (cli.work / "long.json").write_text(json.dumps(doc))
    longest = _finished(cli, "long.json")
    rows = cli("list").stdout.splitlines()
    others = [r for r in rows if not r.startswith(longest)]  # the header and three apps
    assert len(others) == 4 and all(len(r) <= len(rows[0]) for r in others)
    assert len(rows[0]) == 48 + 2 + 10 + 2 + 19 + 2 + 8 + 2 + len(
        "NAME"
    )  # the long handle overflows
    assert rows[1].startswith(longest + "  SUCCEEDED") and rows[1].endswith("n" * 37 + "...")
    assert json.loads(cli("list", "--json").stdout)["data"][0]["name"] == long_name
    cli("delete", longest)
    handles = lambda out: [line.split()[0] for line in out.splitlines()[1:]]  # noqa: E731
    assert handles(cli("list", "--state", "succeeded").stdout) == ok[::-1]
    assert handles(cli("list", "--state", "FAILED,cancelled").stdout) == [failed]
    assert handles(cli("list", "--limit", "2").stdout) == [failed, ok[1]]
    assert handles(cli("list", "--state", "succeeded", "--limit", "1").stdout) == [ok[1]]
    doc = json.loads(cli("list", "--json", "--state", "failed").stdout)
    assert [a["handle"] for a in doc["data"]] == [failed]
    assert cli("list", "--state", "running").stdout == "no apps\n"
    err = cli("list", "--state", "runing", rc=2).stderr
    assert "unknown state 'runing' in --state (did you mean 'running'?)" in err
    assert "bad --limit '0'" in cli("list", "--limit", "0", rc=2).stderr


def test_list_lists_where_its_run_options_say(cli: Cli) -> None:
    # the local scheduler's state_dir run option, given after submit as at submit
    elsewhere = cli.root / "elsewhere"
    here = _finished(cli, "utils.echo")
    there = _finished(cli, "-cfg", f"state_dir={elsewhere}", "utils.sh", "true")
    assert [line.split()[0] for line in cli("list").stdout.splitlines()[1:]] == [there, here]
    listed = cli("list", "-s", "local", "-cfg", f"state_dir={elsewhere}").stdout.splitlines()
    assert [line.split()[0] for line in listed[1:]] == [there]
    doc = json.loads(cli("list", "--json", "--scheduler_args", f"state_dir={elsewhere}").stdout)
    assert [a["handle"] for a in doc["data"]] == [there]
    # the same from the [local] section of .torchxconfig; -cfg over it
    (cli.work / ".torchxconfig").write_text(f"[local]\nstate_dir = {elsewhere}\n")
    assert [line.split()[0] for line in cli("list").stdout.splitlines()[1:]] == [there]
    listed = cli("list", "-cfg", f"state_dir={cli.state}").stdout.splitlines()
    assert [line.split()[0] for line in listed[1:]] == [there, here]


@pytest.mark.parametrize(
    ("cfg", "message"),
    [
        ("stat_dir=/x", "unknown run option 'stat_dir' in 'stat_dir=/x'"),
        ("state_dir", "malformed run config 'state_dir': 'state_dir' is not KEY=VALUE"),
        ("prepend_cwd=maybe", "run option 'prepend_cwd' expects a bool"),
    ],
)
def test_list_with_a_bad_run_option_is_one_line(cli: Cli, cfg: str, message: str) -> None:
    err = cli("list", "-s", "local", "-cfg", cfg, rc=2).stderr
    assert err.startswith(f"torchx list: error: {message}")
    assert len(err.strip().splitlines()) == 1


def test_list_with_a_bad_torchxconfig_is_one_line(cli: Cli) -> None:
    (cli.work / ".torchxconfig").write_text("[local]\nstat_dir = /x\n")
    err = cli("list", "-s", "local", rc=2).stderr
    assert "[local] unknown key 'stat_dir' (did you mean 'state_dir'?)" in err
    assert len(err.strip().splitlines()) == 1


def test_cancel_then_delete(cli: Cli) -> None:
    handle = cli.start("utils.sh", "sleep", "60")
    err = cli("delete", handle, rc=2).stderr
    assert "cancel it first" in err and "--force" in err
    assert cli("cancel", handle).stdout.strip() == f"cancelled {handle}"
    deadline = time.monotonic() + 30
    while cli.status_json(handle)["state"] != "CANCELLED":
        assert time.monotonic() < deadline, "cancel did not stop the app"
        time.sleep(0.1)
    assert cli("delete", handle).stdout.strip() == f"deleted {handle}"
    assert "does not exist" in cli("status", handle, rc=2).stderr
    assert cli("list").stdout.strip() == "no apps"


def test_delete_force_cancels_first(cli: Cli) -> None:
    handle = cli.start("utils.sh", "sleep", "60")
    assert cli("delete", "--force", handle).stdout.strip() == f"deleted {handle}"
    assert "does not exist" in cli("describe", handle, rc=2).stderr


@pytest.mark.parametrize(
    "args",
    [
        ("status", MISSING),
        ("describe", MISSING),
        ("cancel", MISSING),
        ("delete", MISSING),
        ("log", MISSING),
        ("log", "-t", MISSING),
        ("log", f"{MISSING}/role/0"),
    ],
)
def test_a_handle_that_does_not_exist_is_answered_at_once(cli: Cli, args: tuple[str, ...]) -> None:
    t = time.monotonic()
    err = cli(*args, rc=2, timeout=20).stderr
    assert time.monotonic() - t < 10
    assert f"no app '{MISSING}'" in err and "does not exist" in err
    assert len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("bad", ["nope", "local://", "://s/x", "local:/s/x"])
def test_malformed_handles(cli: Cli, bad: str) -> None:
    err = cli("status", bad, rc=2).stderr
    assert "handle" in err and "Traceback" not in err


@pytest.mark.parametrize("command", ["status", "describe", "cancel", "delete"])
def test_a_slash_in_an_app_id_is_refused_in_one_line(cli: Cli, command: str) -> None:
    # no app id has a '/': "a/b" is no app's id, and no command reads it as one
    err = cli(command, "local://session/a/b", rc=2).stderr
    assert len(err.strip().splitlines()) == 1
    assert "malformed app handle 'local://session/a/b': its app id 'a/b' contains '/'" in err
    assert "expected {scheduler}://{session_name}/{app_id}" in err


def test_a_handle_followed_by_a_role_reads_back_as_that_app(cli: Cli) -> None:
    handle = _finished(cli, "utils.echo", "--num_replicas", "2")
    # `torchx log HANDLE/ROLE`: the app of the handle, narrowed to the role
    assert cli("log", f"{handle}/echo").stdout.split("\n")[0].startswith("echo/")
    assert {line.split()[0] for line in cli("log", f"{handle}/echo/1").stdout.splitlines()} == {
        "echo/1"
    }
    # other commands take the handle alone: the role is a mistake, said in one line
    err = cli("status", f"{handle}/echo", rc=2).stderr
    assert f"its app id '{handle.rsplit('/', 1)[1]}/echo' contains '/'" in err
    assert len(err.strip().splitlines()) == 1


def test_unknown_scheduler_in_handle(cli: Cli) -> None:
    err = cli("status", "slrum://torchx/app", rc=2).stderr
    assert "unknown scheduler 'slrum'" in err


def test_log_selects_roles_replicas_streams_and_lines(cli: Cli) -> None:
    handle = _finished(
        cli,
        "utils.sh",
        "--num_replicas",
        "3",
        "sh",
        "-c",
        'echo "out $TORCHX_REPLICA_ID"; echo "err $TORCHX_REPLICA_ID" >&2; echo other',
    )
    out = cli("log", handle).stdout.splitlines()
    for k in range(3):
        assert f"sh/{k} out {k}" in out and f"sh/{k} err {k}" in out
    only = cli("log", f"{handle}/sh/0,2").stdout.splitlines()
    assert {line.split()[0] for line in only} == {"sh/0", "sh/2"}
    assert set(cli("log", f"{handle}/sh").stdout.split()) >= {"sh/0", "sh/1", "sh/2"}
    stdout_only = cli("log", "--streams", "stdout", f"{handle}/sh/1").stdout.splitlines()
    assert stdout_only == ["sh/1 out 1", "sh/1 other"]
    stderr_only = cli("log", "--streams", "stderr", f"{handle}/sh/1").stdout.splitlines()
    assert stderr_only == ["sh/1 err 1"]
    assert cli("log", "--regex", "^out", f"{handle}/sh/1").stdout.splitlines() == ["sh/1 out 1"]
    assert len(cli("log", "--since", "1h", f"{handle}/sh/1").stdout.splitlines()) == 3
    assert cli("log", "--until", "1h", f"{handle}/sh/1").stdout == ""
    assert cli("log", "--since", "2000-01-01T00:00:00", f"{handle}/sh/1").stdout.count("\n") == 3
    assert "bad time 'yesterday'" in cli("log", "--since", "yesterday", handle, rc=2).stderr
    err = cli("log", f"{handle}/shh", rc=2).stderr
    assert "no role 'shh'" in err
    assert "no replica [7]" in cli("log", f"{handle}/sh/7", rc=2).stderr
    assert "bad replica ids 'x'" in cli("log", f"{handle}/sh/x", rc=2).stderr


def test_log_tail_follows_until_the_app_ends(cli: Cli) -> None:
    handle = cli.start("utils.sh", "sh", "-c", "echo first; sleep 1; echo last")
    proc = cli("log", "-t", handle, timeout=60)
    assert proc.stdout.splitlines() == ["sh/0 first", "sh/0 last"]


def _stop_supervisor(cli: Cli, handle: str) -> int:
    """SIGSTOPs the app's supervisor once the app runs; returns its pid."""
    import os
    import signal

    app_id = handle.rsplit("/", 1)[1]
    state_path = cli.state / "apps" / app_id / "state.json"
    deadline = time.monotonic() + 30
    while True:  # the supervisor's record is a file another process writes: poll it
        state = json.loads(state_path.read_text())
        if state["state"] == "RUNNING":
            break
        assert time.monotonic() < deadline, state
        time.sleep(0.05)
    pid = int(state["supervisor"]["pid"])
    os.kill(pid, signal.SIGSTOP)
    stat = Path(f"/proc/{pid}/stat")
    while stat.read_text().rsplit(")", 1)[1].split()[0] != "T":
        assert time.monotonic() < deadline
        time.sleep(0.01)
    return pid


@pytest.mark.parametrize("command", ["cancel", "delete --force"])
def test_an_app_whose_supervisor_is_stopped_is_ended_at_once(cli: Cli, command: str) -> None:
    handle = cli.start("utils.sh", "sleep", "300")
    _stop_supervisor(cli, handle)
    started = time.monotonic()
    out = cli(*command.split(), handle, timeout=30).stdout
    assert time.monotonic() - started < 15  # not the 60 s wait for a supervisor that cannot act
    if command == "cancel":
        assert out.splitlines()[0] == f"cancelled {handle}"
        assert "was stopped (SIGSTOP) and did not answer, so it was killed" in out
        assert cli.status_json(handle)["state"] == "CANCELLED"
    else:
        assert out.strip().splitlines()[-1] == f"deleted {handle}"
        assert cli("list").stdout.strip() == "no apps"


def _make_old(cli: Cli, handle: str, seconds: float) -> None:
    """Makes a finished app look as if it had ended ``seconds`` ago."""
    import os

    path = cli.state / "apps" / handle.rsplit("/", 1)[1] / "state.json"
    record = json.loads(path.read_text())
    record["finished"] = record["updated"] = time.time() - seconds
    path.write_text(json.dumps(record))
    os.utime(path, (time.time() - seconds,) * 2)


def test_delete_several_handles_checks_them_all_first(cli: Cli) -> None:
    first = _finished(cli, "utils.echo")
    second = _finished(cli, "utils.echo")
    running = cli.start("utils.sh", "sleep", "60")
    err = cli("delete", first, running, rc=2).stderr
    assert f"{running} is" in err and "--force" in err
    assert len(cli("list").stdout.strip().splitlines()) == 4  # nothing deleted
    err = cli("delete", first, MISSING, rc=2).stderr
    assert MISSING in err and len(cli("list").stdout.strip().splitlines()) == 4
    out = cli("delete", first, second).stdout
    assert out.splitlines() == [f"deleted {first}", f"deleted {second}"]
    assert cli("delete", "--force", running).stdout.strip() == f"deleted {running}"
    assert cli("list").stdout.strip() == "no apps"


def test_delete_older_than_a_duration(cli: Cli) -> None:
    old = _finished(cli, "utils.echo")
    recent = _finished(cli, "utils.echo")
    _make_old(cli, old, 8 * 86400)
    assert cli("delete", "--older-than", "7d").stdout.strip() == f"deleted {old}"
    assert (
        cli("delete", "--older-than", "1w").stdout.strip()
        == "no finished app or sweep older than 1w"
    )
    assert [line.split()[0] for line in cli("list").stdout.splitlines()[1:]] == [recent]
    err = cli("delete", "--older-than", "a week", rc=2).stderr
    assert "bad duration 'a week'" in err and len(err.strip().splitlines()) == 1
    assert "not both" in cli("delete", "--older-than", "1d", recent, rc=2).stderr
    assert "nothing to delete" in cli("delete", rc=2).stderr
    assert "--older-than" in cli("delete", "--help").stdout


def test_retention_in_torchxconfig_keeps_the_newest_apps(cli: Cli) -> None:
    (cli.work / ".torchxconfig").write_text("[local]\nretain_last = 2\n")
    handles = [_finished(cli, "utils.echo") for _ in range(4)]
    deadline = time.monotonic() + 30
    while True:  # the last app's supervisor prunes once the app has ended: poll the list
        listed = [line.split()[0] for line in cli("list").stdout.splitlines()[1:]]
        if len(listed) <= 2 or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert listed == handles[:1:-1]  # newest first


def test_log_timestamps_are_the_times_the_lines_were_written(cli: Cli) -> None:
    import re
    import time
    from datetime import datetime

    before = time.time()
    handle = _finished(
        cli, "utils.sh", "sh", "-c", "echo first; sleep 1; echo second >&2; printf 'no end'"
    )
    after = time.time()
    stamped = re.compile(r"sh/0 (\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}) (.*)")
    rows = [
        stamped.fullmatch(line) for line in cli("log", "--timestamps", handle).stdout.splitlines()
    ]
    assert all(rows) and [m.group(2) for m in rows if m] == ["first", "second", "no end"]
    times = [datetime.fromisoformat(m.group(1)).timestamp() for m in rows if m]
    assert before - 1 <= times[0] <= times[1] <= times[2] <= after + 1
    assert times[1] - times[0] >= 0.7  # the sleep between them (seen within a tick)
    only = cli("log", "--timestamps", "--regex", "sec", handle).stdout.splitlines()
    assert len(only) == 1 and only[0].endswith(" second") and stamped.fullmatch(only[0])
    err = cli("log", "--timestamps", "--streams", "stderr", handle).stdout
    assert err.endswith(" second\n") and err.count("\n") == 1
    plain = cli("log", handle).stdout  # without the option: as before
    assert plain == "sh/0 first\nsh/0 second\nsh/0 no end\n"
