"""``torchx sweep``, and ``status``/``cancel``/``list`` of a sweep: real local apps.

The trials are a file component whose app records, under ``out``, its own start and
end times (``A-B.start``/``A-B.end``): the cap on trials at once is checked from what
the trials themselves saw, not from what the supervisor says.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

from helpers import Cli

COMPONENT = '''
from torchx.specs import AppDef, Role

def trial(a: str = "1", b: str = "x", out: str = ".", fail: str = "", hold: bool = False) -> AppDef:
    """A trial that writes its start and end times; exits 3 when a == fail; with hold,
    waits for the file 'release' (it never comes: the test cancels it)."""
    stamp = f"{out}/{a}-{b}"
    script = (
        f'date +%s.%N > {stamp}.start.tmp && mv {stamp}.start.tmp {stamp}.start; '
        + (f"until [ -e {out}/release ]; do sleep 0.05; done; " if hold else "sleep 0.3; ")
        + f'date +%s.%N > {stamp}.end; '
        + (f"exit 3" if a == fail else "exit 0")
    )
    return AppDef("trial", [Role("trial", image=out, entrypoint="sh", args=["-c", script])])
'''


def _component(cli: Cli) -> Path:
    out = cli.root / "out"
    out.mkdir()
    (cli.work / "comp.py").write_text(COMPONENT)
    return out


def _status(cli: Cli, handle: str) -> dict[str, Any]:
    doc = json.loads(cli("status", "--json", handle).stdout)
    assert doc["kind"] == "SweepStatus"
    data: dict[str, Any] = doc["data"]
    return data


def _until(what: str, check: Any, timeout: float = 60) -> None:
    """Polls ``check()`` (what the trials wrote) until it holds; fails after ``timeout``."""
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def test_six_trials_two_at_once_all_succeed_and_status_shows_their_arguments(cli: Cli) -> None:
    out = _component(cli)
    proc = cli(
        "sweep",
        "comp.py:trial",
        "--out",
        str(out),
        "--grid",
        "a=1,2,3",
        "--grid",
        "b=x,y",
        "--max-parallel",
        "2",
        "--wait",
        timeout=180,
    )
    handle = proc.stdout.splitlines()[0]
    assert handle.startswith("sweep://sw-")
    spans = []
    for a in "123":
        for b in "xy":
            start = float((out / f"{a}-{b}.start").read_text())
            end = float((out / f"{a}-{b}.end").read_text())
            spans.append((start, end))
    # at any trial's start, how many trials were running (itself included)
    most = max(sum(1 for s, e in spans if s <= t < e) for t, _ in spans)
    assert most <= 2, spans
    assert most == 2, "two trials never overlapped: the cap was not reached"
    data = _status(cli, handle)
    assert data["state"] == "SUCCEEDED"
    assert [t["state"] for t in data["trials"]] == ["SUCCEEDED"] * 6
    assert [t["params"] for t in data["trials"]][:2] == [{"a": "1", "b": "x"}, {"a": "1", "b": "y"}]
    text = cli("status", handle).stdout
    assert "State: SUCCEEDED (6 SUCCEEDED)" in text
    assert "--a 3 --b y" in text and "local://torchx/trial-" in text
    listed = cli("list", "--sweeps").stdout
    assert handle in listed and "6 SUCCEEDED" in listed


def test_a_failing_trial_does_not_stop_the_others(cli: Cli) -> None:
    out = _component(cli)
    proc = cli(
        "sweep",
        "comp.py:trial",
        "--grid",
        "a=1,2,3",
        "--out",
        str(out),
        "--fail",
        "2",
        "--max-parallel",
        "2",
        "--wait",
        rc=1,
        timeout=180,
    )
    data = _status(cli, proc.stdout.splitlines()[0])
    assert data["state"] == "FAILED"
    assert [t["state"] for t in data["trials"]] == ["SUCCEEDED", "FAILED", "SUCCEEDED"]
    assert "3" in data["trials"][1]["rootCause"]  # its exit status
    assert "FAILED" in proc.stdout and "ROOT CAUSE" in proc.stdout


def test_fail_fast_cancels_the_rest(cli: Cli) -> None:
    out = _component(cli)
    proc = cli(
        "sweep",
        "comp.py:trial",
        "--grid",
        "a=1,2,3",
        "--out",
        str(out),
        "--fail",
        "1",
        "--fail-fast",
        "--wait",
        rc=1,
        timeout=180,
    )
    data = _status(cli, proc.stdout.splitlines()[0])
    assert [t["state"] for t in data["trials"]] == ["FAILED", "CANCELLED", "CANCELLED"]
    assert [t["handle"] is None for t in data["trials"]] == [False, True, True]
    assert "trial 0 failed (--fail-fast)" in data["trials"][1]["rootCause"]
    assert sorted(p.name for p in out.glob("*.start")) == ["1-x.start"]


def test_cancel_cancels_the_running_trials_and_submits_no_more(cli: Cli) -> None:
    out = _component(cli)
    handle = cli(
        "sweep",
        "comp.py:trial",
        "--grid",
        "a=1,2,3",
        "--grid",
        "b=x,y",
        "--out",
        str(out),
        "--hold",
        "True",
        "--max-parallel",
        "2",
    ).stdout.strip()
    _until("two trials to start", lambda: len(list(out.glob("*.start"))) == 2)
    proc = cli("cancel", handle)
    assert proc.stdout.strip() == f"cancelled {handle}"
    data = _status(cli, handle)
    assert data["state"] == "CANCELLED"
    assert [t["state"] for t in data["trials"]] == ["CANCELLED"] * 6
    submitted = [t for t in data["trials"] if t["handle"]]
    assert len(submitted) == 2
    for t in submitted:  # their apps were cancelled, not left running
        assert cli.status_json(t["handle"])["state"] == "CANCELLED"
    assert len(list(out.glob("*.start"))) == 2 and not list(out.glob("*.end"))
    again = cli("cancel", handle)
    assert "had already ended: CANCELLED" in again.stdout


def test_an_unknown_grid_name_is_refused_in_one_line_and_nothing_runs(cli: Cli) -> None:
    _component(cli)
    proc = cli("sweep", "comp.py:trial", "--grid", "lr=1,2", rc=2)
    assert proc.stderr.count("\n") == 1, proc.stderr
    assert "comp.py:trial has no parameter 'lr'; its parameters: a, b, out, fail, hold" in (
        proc.stderr
    )
    assert not (cli.state / "sweeps").exists() or not os.listdir(cli.state / "sweeps")
    assert cli("list").stdout == "no apps\n"


def test_bad_sweep_arguments_are_one_line(cli: Cli) -> None:
    _component(cli)
    for args, word in [
        (["--grid", "a"], "expected NAME=V1,V2"),
        (["--grid", "a=1,2", "--random", "5"], "only 2 trials"),
        (["--grid", "a=1", "--max-parallel", "0"], "expected 1 or more"),
        (["--grid", "a=1", "--seed", "3"], "--seed is for --random"),
    ]:
        proc = cli("sweep", "comp.py:trial", *args, rc=2)
        assert word in proc.stderr and proc.stderr.count("\n") == 1, proc.stderr
    proc = cli("status", "sweep://sw-nosuchsweep", rc=2)
    assert "no sweep sweep://sw-nosuchsweep" in proc.stderr


def test_an_option_the_component_has_too_is_the_components(cli: Cli) -> None:
    """``--out`` style: a trainer's own ``--seed`` after COMPONENT is the trainer's; the
    sweep's ``--seed`` (with ``--random``) is given before COMPONENT."""
    out = _component(cli)
    (cli.work / "comp.py").write_text(
        COMPONENT.replace("hold: bool = False", 'hold: bool = False, seed: str = "0"')
    )
    proc = cli(
        "sweep",
        "--random",
        "1",
        "--seed",
        "5",
        "comp.py:trial",
        "--seed",
        "9",
        "--grid",
        "a=1,2",
        "--out",
        str(out),
        "--wait",
        timeout=120,
    )
    data = _status(cli, proc.stdout.splitlines()[0])
    assert data["seed"] == 5 and len(data["trials"]) == 1
    assert data["trials"][0]["args"][:2] == ["--seed", "9"]


def test_delete_refuses_a_running_sweep_then_force_deletes_its_trials_and_record(
    cli: Cli,
) -> None:
    out = _component(cli)
    handle = cli(
        "sweep", "comp.py:trial", "--grid", "a=1,2,3", "--out", str(out),
        "--hold", "True", "--max-parallel", "2",
    ).stdout.strip()  # fmt: skip
    _until("two trials to start", lambda: len(list(out.glob("*.start"))) == 2)
    refused = cli("delete", handle, rc=2)  # as for a running app
    assert proc_line(refused.stderr) == (
        f"torchx delete: error: {handle} is RUNNING: cancel it first "
        f"('torchx cancel {handle}') or pass --force"
    )
    trials = [t["handle"] for t in _status(cli, handle)["trials"] if t["handle"]]
    assert len(trials) == 2 and _status(cli, handle)["state"] == "RUNNING"  # untouched
    proc = cli("delete", "--force", handle)
    assert proc.stdout.strip() == f"deleted {handle} and its 2 trial apps"
    gone = cli("status", handle, rc=2)
    assert f"no sweep {handle}" in gone.stderr
    for trial in trials:  # the trials' apps: cancelled (they never ended), then deleted
        assert "it does not exist (or was deleted)" in cli("status", trial, rc=2).stderr
    assert not list(out.glob("*.end"))
    assert handle not in cli("list", "--sweeps").stdout


def test_delete_an_ended_sweep_with_json(cli: Cli) -> None:
    out = _component(cli)
    handle = cli(
        "sweep", "comp.py:trial", "--grid", "a=1,2", "--out", str(out), "--wait", timeout=120
    ).stdout.splitlines()[0]  # fmt: skip
    trials = [t["handle"] for t in _status(cli, handle)["trials"]]
    doc = json.loads(cli("delete", "--json", handle).stdout)
    assert doc["kind"] == "Deleted" and doc["data"] == [{"handle": handle}]
    assert cli("list").stdout == "no apps\n", trials
    assert cli("list", "--sweeps").stdout == "no sweeps\n"


def test_delete_older_than_prunes_the_sweeps_that_ended_as_long_ago(cli: Cli) -> None:
    out = _component(cli)
    args = ("sweep", "comp.py:trial", "--out", str(out), "--wait")
    old = cli(*args, "--grid", "a=1", timeout=120).stdout.splitlines()[0]
    recent = cli(*args, "--grid", "a=2", timeout=120).stdout.splitlines()[0]
    old_trial = _status(cli, old)["trials"][0]["handle"]
    # the old sweep and its trial ended 8 days ago, as their records say
    long_ago = time.time() - 8 * 86400
    record = cli.state / "sweeps" / old.removeprefix("sweep://") / "sweep.json"
    doc = json.loads(record.read_text())
    doc["ended"] = long_ago
    record.write_text(json.dumps(doc))
    app_state = cli.state / "apps" / old_trial.rsplit("/", 1)[1] / "state.json"
    app = json.loads(app_state.read_text())
    app["finished"] = app["updated"] = long_ago
    app_state.write_text(json.dumps(app))
    os.utime(app_state, (long_ago, long_ago))
    deleted = cli("delete", "--older-than", "7d").stdout.splitlines()
    assert deleted == [f"deleted {old_trial}", f"deleted {old}"]
    listed = json.loads(cli("list", "--sweeps", "--json").stdout)["data"]
    assert [d["handle"] for d in listed] == [recent]
    # a running sweep is never pruned
    held = cli("sweep", "comp.py:trial", "--out", str(out), "--grid", "a=3", "--hold", "True")
    running = held.stdout.splitlines()[0]
    _until("the held trial to start", lambda: (out / "3-x.start").exists())
    assert running not in cli("delete", "--older-than", "1s").stdout
    assert running in cli("list", "--sweeps").stdout
    cli("cancel", running)


def proc_line(stderr: str) -> str:
    """The one line of an error (and that it is one)."""
    assert stderr.count("\n") == 1, stderr
    return stderr.strip()
