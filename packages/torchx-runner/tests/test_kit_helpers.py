"""The kit's helpers for a plugin's own tests: TorchxCli, FakeTools, rendezvous, registration."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from torchx.schedulers.testing import rendezvous
from torchx.schedulers.testing.cli import TorchxCli, app_id, replicas
from torchx.schedulers.testing.fake_tools import ENV, FakeTools, private_env_dir
from torchx.schedulers.testing.registration import entry_point, modules_after

# a stand-in of the torchx command: records its argv, cwd and HOME; answers by argv
_FAKE_TORCHX = r"""#!{python}
import json, os, sys
args = sys.argv[1:]
with open({log!r}, "a") as f:
    f.write(json.dumps({{"args": args, "cwd": os.getcwd(), "home": os.environ["HOME"],
                        "config": os.environ.get("TORCHXCONFIG")}}) + "\n")
if args[0] == "run":
    print("acme://s/app-1")
    if "--wait" in args:  # the handle first, then the app's log
        print("w/0 hi")
elif args[0] == "status":
    n = sum(1 for _ in open({log!r}))
    state = "RUNNING" if n < 4 else "SUCCEEDED"
    doc = {{"kind": "AppStatus", "data": {{"status": {{"state": state, "roles": [
        {{"role": "w", "replicas": [{{"id": 0, "state": state}}]}}]}}}}}}
    print(json.dumps(doc))
elif args[0] == "boom":
    sys.stderr.write("Traceback (most recent call last):\n")
elif args[0] == "fail":
    sys.exit(3)
"""


@pytest.fixture
def fake_torchx(tmp_path: Path) -> tuple[str, Path]:
    log = tmp_path / "torchx-calls.jsonl"
    path = tmp_path / "torchx"
    path.write_text(_FAKE_TORCHX.format(python=sys.executable, log=str(log)))
    path.chmod(0o755)
    return str(path), log


def _calls(log: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in log.read_text().splitlines()]


def test_cli_runs_in_a_private_world_and_cancels_what_it_started(
    tmp_path: Path, fake_torchx: tuple[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    command, log = fake_torchx
    monkeypatch.setenv("TORCHXCONFIG", "/the/users/config")
    cli = TorchxCli(tmp_path / "world", scheduler="acme", command=command)
    handle = cli.start("utils.echo")
    assert handle == "acme://s/app-1" and app_id(handle) == "app-1"
    status = cli.wait_state(handle, {"SUCCEEDED"}, timeout=30)
    assert replicas(status) == {"w/0": {"id": 0, "state": "SUCCEEDED"}}
    cli.cleanup()
    calls = _calls(log)
    assert calls[0]["args"] == ["run", "-s", "acme", "utils.echo"]
    assert calls[-1]["args"] == ["cancel", "acme://s/app-1"]
    assert {c["cwd"] for c in calls} == {str(cli.work)}
    assert {c["home"] for c in calls} == {str(cli.home)}
    assert {c["config"] for c in calls} == {None}  # the user's config never leaks in


def test_cli_run_waits_gives_the_output_and_deletes_at_the_end(
    tmp_path: Path, fake_torchx: tuple[str, Path]
) -> None:
    command, log = fake_torchx
    cli = TorchxCli(tmp_path, scheduler="acme", command=command, ending="delete")
    handle, proc = cli.run("--wait", "utils.echo")
    assert handle == "acme://s/app-1"  # the first line, not the log line after it
    assert proc.stdout.splitlines()[1:] == ["w/0 hi"]
    cli.cleanup()
    cli.cleanup()  # what it deleted is forgotten: nothing runs twice
    assert [c["args"] for c in _calls(log)] == [
        ["run", "-s", "acme", "--wait", "utils.echo"],
        ["delete", "acme://s/app-1"],
    ]


def test_cli_checks_the_exit_status_and_tracebacks(
    tmp_path: Path, fake_torchx: tuple[str, Path]
) -> None:
    cli = TorchxCli(tmp_path, scheduler="acme", command=fake_torchx[0])
    with pytest.raises(AssertionError, match="torchx fail exited 3, expected 0"):
        cli("fail")
    assert cli("fail", rc=3).returncode == 3
    assert cli("fail", rc=None).returncode == 3
    with pytest.raises(AssertionError, match="Traceback"):
        cli("boom")


def test_cli_wait_state_gives_up_at_its_deadline(
    tmp_path: Path, fake_torchx: tuple[str, Path]
) -> None:
    cli = TorchxCli(tmp_path, scheduler="acme", command=fake_torchx[0])
    with pytest.raises(AssertionError, match="still RUNNING"):
        cli.wait_state("acme://s/app-1", {"FAILED"}, timeout=0)


def test_fake_tools_answer_in_turn_and_record_each_call(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = FakeTools(tmp_path / "fake", ("qstat", "qsub"), record_env=("QUEUE_FORMAT",))
    fake.activate(monkeypatch)
    assert os.environ[ENV] == str(tmp_path / "fake")
    fake.answer("qstat", stdout="1 R\n", then=[{"stderr": "down", "returncode": 2}])
    monkeypatch.setenv("QUEUE_FORMAT", "long")
    runs = [subprocess.run(["qstat", "-j", "1"], capture_output=True, text=True) for _ in range(3)]
    assert [(r.stdout, r.stderr, r.returncode) for r in runs] == [
        ("1 R\n", "", 0),
        ("", "down", 2),
        ("", "down", 2),  # the last answer again once they run out
    ]
    subprocess.run(["qsub"], input="#!/bin/sh\n", text=True, check=True)  # unscripted: 0
    assert fake.calls("qstat") == [["-j", "1"]] * 3
    assert fake.stdin("qsub") == ["#!/bin/sh\n"]
    assert {c["env"]["QUEUE_FORMAT"] for c in fake.all_calls()} == {"long"}


def test_private_env_dir_sets_and_restores(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ACME_DIR", "/before")
    with private_env_dir("ACME_DIR", prefix="acme-") as d:
        assert os.environ["ACME_DIR"] == d and os.path.isdir(d)
        assert os.path.basename(d).startswith("acme-")
    assert os.environ["ACME_DIR"] == "/before" and not os.path.exists(d)
    monkeypatch.delenv("ACME_DIR")
    with private_env_dir("ACME_DIR", prefix="acme-"):
        pass
    assert "ACME_DIR" not in os.environ


def test_three_ranks_meet_on_this_host() -> None:
    port = rendezvous.Ports(25000).next()
    procs = [
        subprocess.Popen(
            [sys.executable, rendezvous.__file__, "--rank-var", "MY_RANK", "--node-var", "MY_NODE"],
            env={
                **os.environ,
                "MY_RANK": str(rank),  # RANK is unset: the backend's variable is read
                "WORLD": "3",
                "RANK0_HOST": "127.0.0.1",
                "RDZV_PORT": str(port),
                "MY_NODE": f"node{rank} other words",
            },
            stdout=subprocess.PIPE,
            text=True,
        )
        for rank in (2, 1, 0)
    ]
    outs = [p.communicate(timeout=90)[0].strip() for p in procs]
    assert [p.returncode for p in procs] == [0, 0, 0]
    assert outs == [f"rank {r}/3 met [0, 1, 2] on node{r} via 127.0.0.1" for r in (2, 1, 0)]


def test_rendezvous_says_what_is_missing() -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD")}
    proc = subprocess.run(
        [sys.executable, rendezvous.__file__], env=env, capture_output=True, text=True
    )
    assert proc.returncode == 1 and proc.stderr.strip() == "rendezvous.py: RANK is not set"


def test_ports_are_distinct_and_apart_between_processes() -> None:
    ports = rendezvous.Ports(30000)
    first = ports.next()
    assert ports.next() == first + 1
    assert first == 30000 + os.getpid() % 1000 * 10 + 1


def test_entry_point_is_the_one_of_that_name() -> None:
    assert entry_point("runner") == "torchx.runner.builtin_plugin"
    with pytest.raises(AssertionError, match="0 entry points 'no-such-plugin'"):
        entry_point("no-such-plugin")


def test_modules_after_sees_a_fresh_interpreter() -> None:
    import csv  # noqa: F401  (loaded here: the child must not see it)

    loaded = modules_after("import torchx.runner.builtin_plugin")
    assert "torchx.runner.builtin_plugin" in loaded and "csv" not in loaded
    assert loaded == sorted(loaded)
    with pytest.raises(AssertionError, match="ZeroDivisionError"):
        modules_after("1 / 0")
