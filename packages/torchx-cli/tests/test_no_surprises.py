"""Nothing silently ignored: bad input refused up front, empty answers said, pipes and colors.

Each test goes through the real ``torchx`` command, as a user would meet it.
"""

from __future__ import annotations

import json
import os
import re
import subprocess

import pytest
from helpers import TORCHX, Cli
from test_terminal import _run_on_tty

BURST = "for i in $(seq 1 50000); do echo line $i; done"


def _one_line_error(stderr: str, *words: str) -> None:
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in stderr, stderr
    for word in words:
        assert word in lines[0], stderr


def test_a_workspace_that_does_not_exist_is_refused_and_nothing_is_submitted(cli: Cli) -> None:
    err = cli("run", "--workspace", "/no/such/dir", "utils.echo", rc=2).stderr
    _one_line_error(err, "--workspace", "'/no/such/dir'", "no such directory", "--workspace .")
    (cli.work / ".torchxconfig").write_text("[cli:run]\nworkspace = missing\n")
    err = cli("run", "utils.echo", rc=2).stderr
    _one_line_error(err, "[cli:run]", ".torchxconfig", "'missing'")
    assert cli("list").stdout == "no apps\n"
    (cli.work / "missing").mkdir()
    assert cli("run", "--wait", "utils.echo").stdout.startswith("local://")


def test_log_windows_and_regexes_are_checked_once_and_empty_answers_are_said(cli: Cli) -> None:
    handle = cli("run", "--wait", "utils.echo", "--num_replicas", "2").stdout.strip()
    # a window that ends before it starts: refused before any replica is read
    err = cli("log", "--since", "1m", "--until", "2h", handle, rc=2).stderr
    _one_line_error(err, "empty window", "--since 2h --until 1m")
    err = cli("log", "--regex", "([", handle, rc=2).stderr
    _one_line_error(err, "bad --regex '(['")
    # the one duration parser: 5m ago, 1h30m, 1d12h all read
    for since in ("5m ago", "1h30m", "1d12h", "90s"):
        assert cli("log", "--since", since, handle).stdout.count("hello world") == 2, since
    # a valid window or regex that selects nothing says so (stdout stays empty)
    proc = cli("log", "--since", "2d", "--until", "1d", handle)
    assert proc.stdout == "" and f"no line of {handle} between " in proc.stderr
    proc = cli("log", "--regex", "nothing-like-this", handle)
    assert proc.stdout == "" and "matching 'nothing-like-this'" in proc.stderr
    err = cli("log", "--since", "5 minutes", handle, rc=2).stderr
    _one_line_error(err, "bad time '5 minutes'", "5m ago")


def test_delete_older_than_reads_durations_with_the_same_parser(cli: Cli) -> None:
    cli("run", "--wait", "utils.echo")
    assert (
        "no finished app or sweep older than 1h30m" in cli("delete", "--older-than", "1h30m").stdout
    )
    err = cli("delete", "--older-than", "5 minutes", rc=2).stderr
    _one_line_error(err, "bad duration '5 minutes'", "1h30m")


def test_no_color_and_the_color_option(cli: Cli) -> None:
    handle = cli("run", "--wait", "utils.echo", "--num_replicas", "2").stdout.strip()
    rc, out = _run_on_tty(cli, "log", handle)
    assert rc == 0 and "\033[" in out, out  # a terminal: colored
    for args, env in (((), {"NO_COLOR": "1"}), (("--color", "never"), {})):
        cli.env.update(env)
        rc, out = _run_on_tty(cli, "log", *args, handle)
        assert rc == 0 and "echo/0 hello world" in out and "\033[" not in out, (args, out)
        cli.env.pop("NO_COLOR", None)
    piped = cli("log", "--color", "always", handle).stdout  # forced on, even into a pipe
    assert "\033[32mecho/0\033[0m hello world" in piped
    assert "\033[" not in cli("run", "--log", "--color", "never", "utils.echo").stdout


def test_cancel_of_an_app_that_ended_says_so(cli: Cli) -> None:
    handle = cli("run", "--wait", "utils.echo").stdout.strip()
    out = cli("cancel", handle).stdout
    assert out == f"{handle} had already ended: SUCCEEDED; nothing to cancel\n"
    assert "State: SUCCEEDED" in cli("status", handle).stdout  # and it was left as it was


def _closed_early(cli: Cli, *args: str) -> subprocess.CompletedProcess[str]:
    """Runs torchx with stdout into a pipe whose reader stops after one line (``| head -1``)."""
    proc = subprocess.Popen(
        [TORCHX, *args],
        cwd=cli.work,
        env={**os.environ, **cli.env},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stderr is not None
    first = proc.stdout.readline()
    proc.stdout.close()  # the reader goes away with most of the log unread
    err = proc.stderr.read()
    rc = proc.wait(timeout=60)
    return subprocess.CompletedProcess(args, rc, first, err)


@pytest.mark.parametrize(
    "options",
    [(), ("--regex", "line"), ("--streams", "stdout")],
    ids=["quick-path", "full-path", "streams"],
)
def test_log_into_a_pipe_closed_early_exits_0_without_a_traceback(
    cli: Cli, options: tuple[str, ...]
) -> None:
    handle = cli("run", "--wait", "utils.sh", "sh", "-c", BURST).stdout.strip()
    done = _closed_early(cli, "log", *options, handle)
    assert done.stdout == "sh/0 line 1\n"
    assert done.returncode == 0 and done.stderr == "", done.stderr


def test_run_log_into_a_pipe_closed_early_exits_0(cli: Cli) -> None:
    done = _closed_early(cli, "run", "--log", "utils.sh", "--num_replicas", "2", "sh", "-c", BURST)
    assert done.stdout.startswith("local://")
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr


def test_the_default_component_takes_arguments_after_a_double_dash(cli: Cli) -> None:
    (cli.work / ".torchxconfig").write_text("[cli:run]\ncomponent = utils.echo\n")
    out = cli("run", "--log", "--", "--msg", "hi").stdout
    assert "echo/0 hi" in out
    (cli.work / ".torchxconfig").unlink()
    err = cli("run", "--", "--msg", "hi", rc=2).stderr
    _one_line_error(err, "no component given")


def test_json_with_wait_or_log_ends_with_the_final_status(cli: Cli) -> None:
    for follow in ("--wait", "--log"):
        out = cli("run", "--json", follow, "utils.echo", "--msg", "hey").stdout
        docs, rest = [], out
        decoder = json.JSONDecoder()
        while rest.strip():
            rest = rest.lstrip()
            if rest.startswith("{"):
                doc, end = decoder.raw_decode(rest)
                docs.append(doc)
                rest = rest[end:]
            else:  # a log line (with --log)
                line, _, rest = rest.partition("\n")
                assert line == "echo/0 hey"
        assert [d["kind"] for d in docs] == ["AppHandle", "AppStatus"], out
        final = docs[-1]
        assert final["formatVersion"] == "torchx.cli/v1"
        assert final["data"]["handle"] == docs[0]["data"]["handle"]
        assert final["data"]["status"]["state"] == "SUCCEEDED"
        assert final["data"]["status"] == cli.status_json(final["data"]["handle"])


def test_help_has_no_stray_lines(cli: Cli) -> None:
    out = cli("--help", env={"TORCHX_NO_PLUGIN_CACHE": "1"}).stdout
    lines = out.splitlines()
    i = lines.index("commands:")
    assert lines[i + 1].split()[0] == "COMMAND" and "COMMAND --help" in lines[i + 1]
    assert all(line.strip() != "None" for line in lines)


def test_an_unknown_option_gets_the_subcommands_usage_and_a_did_you_mean(cli: Cli) -> None:
    err = cli("run", "--dry-run", "utils.echo", rc=2).stderr
    assert err.startswith("usage: torchx run ")
    assert "unrecognized arguments: --dry-run (did you mean '--dryrun'?)" in err
    assert cli("list").stdout == "no apps\n"  # nothing was submitted
    err = cli("status", "--jsn", "local://torchx/echo-k3x9q2m7bw", rc=2).stderr
    assert err.startswith("usage: torchx status ") and "(did you mean '--json'?)" in err


def test_handle_examples_in_help_look_like_real_handles(cli: Cli) -> None:
    real = cli("run", "utils.echo").stdout.strip()
    scheme_session, _, app_id = real.rpartition("/")
    _, _, suffix = app_id.rpartition("-")
    helps = [cli("--help", env={"TORCHX_NO_PLUGIN_CACHE": "1"}).stdout]
    helps += [cli(c, "--help").stdout for c in ("status", "log", "cancel")]
    for text in helps:
        examples = re.findall(r"local://[^\s)]+", text)
        assert examples, text
        for example in examples:
            ex_id = example.split("/")[3]
            assert example.startswith(scheme_session + "/"), example
            assert len(ex_id.rpartition("-")[2]) == len(suffix), (example, real)
