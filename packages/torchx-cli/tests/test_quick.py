"""The quick path of ``status``, ``list`` and ``log`` (torchx.cli._quick) against the full one.

Each command is run through the real console script three ways: with the plugin
caches off (``TORCHX_NO_PLUGIN_CACHE=1``: always the full path), then twice with them on
(the first run takes the full path and remembers that it may answer quickly, the
second answers quickly). Output and exit status must be the same; which path ran is
told by the modules the process imported (``PYTHONPROFILEIMPORTTIME`` lists them).
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest
from helpers import TORCHX, Cli

from torchx.cli import _quick, builtin_plugin
from torchx.cli._quick import marker

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="the local scheduler is Linux-only")

#: What the full path imports and the quick one must not.
HEAVY = ("attr", "attrs", "cattrs", "pluggy", "argparse", "typing", "importlib.metadata")

APPS = """
from torchx.specs import AppDef, Role


def pair(secret: str = "tok12345") -> AppDef:
    '''Role a: 2 replicas printing to both streams; role b fails, printing the secret.

    b fails once both replicas of a have exited (a failed replica ends the app, and the
    others with it): each of a leaves its pid in a file of the shared working directory,
    and b waits for the files, then for those processes to be gone.

    Args:
        secret: a value to keep secret
    '''
    script = (
        'echo "out $TORCHX_REPLICA_ID"; echo "err $TORCHX_REPLICA_ID" >&2; echo last; '
        'echo $$ > "pid.$TORCHX_REPLICA_ID"; mv "pid.$TORCHX_REPLICA_ID" "done.$TORCHX_REPLICA_ID"'
    )
    wait = (
        "until [ -e done.0 ] && [ -e done.1 ]; do sleep 0.01; done; "
        "while kill -0 $(cat done.0) 2>/dev/null || kill -0 $(cat done.1) 2>/dev/null; "
        "do sleep 0.01; done; "
    )
    return AppDef(
        "pair",
        [
            Role("a", image=".", entrypoint="sh", num_replicas=2, args=["-c", script],
                 env={"API_TOKEN": secret}),
            Role("b", image=".", entrypoint="sh", args=["-c", f"{wait}echo {secret}; exit 3"],
                 env={"API_TOKEN": secret}),
        ],
    )
"""


def _imported(stderr: str) -> set[str]:
    """Modules named by PYTHONPROFILEIMPORTTIME's lines on stderr."""
    return {
        line.rsplit("|", 1)[1].strip()
        for line in stderr.splitlines()
        if line.startswith("import time:") and "|" in line
    }


def _without_import_lines(stderr: str) -> str:
    return "".join(
        line for line in stderr.splitlines(keepends=True) if not line.startswith("import time:")
    )


def _by_replica(stdout: str) -> dict[str, list[str]]:
    """Each replica's lines in their order, keyed by the line's prefix (``role/N``,
    colour codes aside)."""
    lines: dict[str, list[str]] = {}
    for line in stdout.splitlines(keepends=True):
        key = re.sub(r"\x1b\[[0-9;]*m", "", line).split(" ", 1)[0]
        lines.setdefault(key, []).append(line)
    return lines


class Both:
    """Runs a command on the full path and on the quick one, in one private world."""

    def __init__(self, cli: Cli) -> None:
        self.cli = cli
        self.env = {"XDG_CACHE_HOME": str(cli.root / "cache"), "PYTHONPROFILEIMPORTTIME": "1"}

    def full(self, *args: str) -> subprocess.CompletedProcess[str]:
        proc = self.cli(*args, rc=None, env={**self.env, "TORCHX_NO_PLUGIN_CACHE": "1"})
        assert "attrs" in _imported(proc.stderr) or proc.returncode != 0
        return proc

    def quick(self, *args: str, taken: bool = True) -> subprocess.CompletedProcess[str]:
        self.cli(*args, rc=None, env=self.env)  # the full path, remembering; or quick already
        proc = self.cli(*args, rc=None, env=self.env)
        heavy = _imported(proc.stderr) & set(HEAVY)
        if taken:
            assert not heavy, f"torchx {' '.join(args)} imported {sorted(heavy)}"
        else:
            assert "pluggy" in heavy, f"torchx {' '.join(args)} took the quick path"
        return proc

    def same(self, *args: str, taken: bool = True) -> subprocess.CompletedProcess[str]:
        full, quick = self.full(*args), self.quick(*args, taken=taken)
        # the logs of several replicas are read side by side: how their lines interleave
        # is the order they were read in, on either path; each replica's own order is kept
        out = _by_replica if args[0] == "log" else str
        assert (quick.returncode, out(quick.stdout), _without_import_lines(quick.stderr)) == (
            full.returncode,
            out(full.stdout),
            _without_import_lines(full.stderr),
        ), f"torchx {' '.join(args)}"
        return quick


@pytest.fixture
def both(cli: Cli) -> Both:
    return Both(cli)


@pytest.fixture
def pair(cli: Cli) -> str:
    """A finished app of two roles (one failed), run from a component file."""
    (cli.work / "apps.py").write_text(APPS)
    out = cli("run", "--wait", "apps.py:pair", rc=1).stdout
    return recorded(cli, out.strip().splitlines()[0])


@pytest.fixture
def done(cli: Cli) -> str:
    """A finished app that succeeded (the quick path answers its status)."""
    return recorded(cli, cli("run", "--wait", "utils.echo", rc=0).stdout.split()[0])


def recorded(cli: Cli, handle: str) -> str:
    """``handle`` once its supervisor has added the AppDef's document to request.json,
    which it does after the final state that ends ``run --wait`` (the quick path needs it
    to mask secrets, and rightly declines without it). A file another process writes
    (atomically), no event to wait on: polled, with a deadline."""
    path = cli.state / "apps" / handle.rsplit("/", 1)[1] / "request.json"
    deadline = time.monotonic() + 30
    while not (path.exists() and "app" in json.loads(path.read_text())):
        assert time.monotonic() < deadline, f"{path} never got the AppDef's document"
        time.sleep(0.02)
    return handle


def test_status_of_a_failed_app_is_left_to_the_full_path(both: Both, pair: str) -> None:
    # the error of a failed replica is read from its log by the Runner: not quick
    out = both.same("status", pair, taken=False).stdout
    assert "State: FAILED" in out and "b/0  FAILED  exit=3  host=localhost" in out
    assert "a/1  SUCCEEDED  exit=0  host=localhost" in out
    assert f"See its log: torchx log {pair}/b/0" in out
    both.same("status", pair, "--show-secrets", taken=False)
    both.same("status", "--show-secrets", pair, taken=False)


def test_status_of_a_finished_app_is_the_same_and_quick(both: Both, cli: Cli) -> None:
    script = "echo out; echo err >&2"
    handle = recorded(cli, cli("run", "--wait", "utils.sh", "sh", "-c", script).stdout.split()[0])
    out = both.same("status", handle).stdout
    assert "State: SUCCEEDED" in out and "sh/0  SUCCEEDED  exit=0  host=localhost" in out
    both.same("status", handle, "--show-secrets")


def test_a_secret_in_the_message_is_masked(both: Both, cli: Cli) -> None:
    handle = cli(
        "run", "--wait", "utils.sh", "--env", "GH_TOKEN=SUCCEEDED", "true", rc=None
    ).stdout.split()[0]
    recorded(cli, handle)
    out = both.same("status", handle).stdout
    assert "State: ****" in out  # the masking is by value, as on the full path
    assert "State: SUCCEEDED" in both.same("status", "--show-secrets", handle).stdout


def test_status_of_a_sweep_is_the_same_and_quick(both: Both, cli: Cli) -> None:
    handle = cli("sweep", "utils.echo", "--grid", "msg=a,b", "--wait").stdout.split()[0]
    out = both.same("status", handle).stdout
    assert out.startswith(f"Sweep: {handle}\n  State: SUCCEEDED (2 SUCCEEDED)"), out
    both.same("status", "--json", handle, taken=False)  # an option it leaves to the full path
    gone = both.same("status", "sweep://sw-nosuchsweep0", taken=False)  # the full error
    assert gone.returncode == 2 and "no sweep sweep://sw-nosuchsweep0" in gone.stderr
    bad = both.same("status", "sweep://NOPE", taken=False)
    assert bad.returncode == 2 and "is not a sweep handle" in bad.stderr


def test_list_is_the_same_and_quick(both: Both, cli: Cli, pair: str) -> None:
    echo = recorded(cli, cli("run", "--wait", "utils.echo", rc=0).stdout.split()[0])
    out = both.same("list").stdout.splitlines()
    assert [line.split()[0] for line in out[1:]] == [echo, pair]
    both.same("list", "-s", "local")
    both.same("list", "--scheduler", "local")


def test_list_gives_each_app_the_handle_it_was_submitted_with(both: Both, cli: Cli) -> None:
    # local_cwd is another name of the local scheduler: its apps keep that name in list
    cwd = recorded(cli, cli("run", "--wait", "-s", "local_cwd", "utils.echo").stdout.split()[0])
    local = recorded(cli, cli("run", "--wait", "-s", "local", "utils.echo").stdout.split()[0])
    assert cwd.startswith("local_cwd://torchx/") and local.startswith("local://torchx/")
    for args in [("list",), ("list", "-s", "local")]:
        out = both.same(*args).stdout.splitlines()
        assert [line.split()[0] for line in out[1:]] == [local, cwd]
    # the other name, and --json, are the full path's: the same handles
    out = both.same("list", "-s", "local_cwd", taken=False).stdout.splitlines()
    assert [line.split()[0] for line in out[1:]] == [local, cwd]
    doc = json.loads(both.same("list", "--json", taken=False).stdout)
    assert [app["handle"] for app in doc["data"]] == [local, cwd]
    assert "State: SUCCEEDED" in both.same("status", local).stdout
    assert "State: SUCCEEDED" in both.same("status", cwd, taken=False).stdout


def test_list_groups_the_trials_of_a_sweep_on_both_paths(both: Both, cli: Cli) -> None:
    (cli.work / "comp.py").write_text(
        "from torchx.specs import AppDef, Role\n"
        "def trial(a: str = '1') -> AppDef:\n"
        "    return AppDef('trial', [Role('t', image='.', entrypoint='echo', args=[a])])\n"
    )
    sweep = cli("sweep", "comp.py:trial", "--grid", "a=1,2", "--wait", timeout=120)
    handle = sweep.stdout.splitlines()[0]
    trials = [recorded(cli, t["handle"]) for t in json.loads(
        cli("status", "--json", handle).stdout)["data"]["trials"]]  # fmt: skip
    echo = recorded(cli, cli("run", "--wait", "utils.echo", rc=0).stdout.split()[0])
    out = both.same("list").stdout.splitlines()
    # the newest app first; then the sweep, where its newest trial would be, its trials
    # indented below it, newest first
    assert [line.split()[0] for line in out[1:]] == [echo, handle, *reversed(trials)]
    assert [line[:2] for line in out[1:]] == ["lo", "sw", "  ", "  "]
    assert "comp.py:trial: 2 trials (2 SUCCEEDED)" in out[2]
    assert out[2].split()[1] == "SUCCEEDED"
    doc = json.loads(both.same("list", "--json", taken=False).stdout)
    assert [(a["handle"], a["sweep"]) for a in doc["data"]] == [
        (echo, None),
        *((t, handle) for t in reversed(trials)),
    ]
    # filtered to one trial: the sweep's line still says which sweep it belongs to
    out = both.same("list", "--limit", "2").stdout.splitlines()
    assert [line.split()[0] for line in out[1:]] == [echo, handle, trials[-1]]


def test_list_of_no_apps(both: Both) -> None:
    assert both.same("list").stdout == "no apps\n"


def test_log_of_one_replica_is_the_same_and_quick(both: Both, pair: str) -> None:
    assert both.same("log", f"{pair}/b").stdout == "b/0 tok12345\n"
    out = both.same("log", f"{pair}/a/1").stdout
    assert out.splitlines()[0] == "a/1 out 1" and "a/1 err 1" in out
    assert both.same("log", "--streams", "stderr", f"{pair}/a/0").stdout == "a/0 err 0\n"
    both.same("log", f"{pair}/a/0", "--streams", "stdout")
    both.same("log", "--streams", "combined", f"{pair}/a/0")
    assert both.same("log", "-t", f"{pair}/b").stdout == "b/0 tok12345\n"  # ended: no wait
    both.same("log", "--tail", "--streams", "stdout", f"{pair}/a/0")
    assert both.same("log", "--since", "1h", f"{pair}/b").stdout == "b/0 tok12345\n"
    # a window that selects nothing: an absolute time, as the note on stderr names it (a
    # relative one is resolved by each process on its own, a second apart at times)
    nothing = both.same("log", "--until", "2000-01-01", f"{pair}/b")
    assert nothing.stdout == "" and "no line of" in nothing.stderr
    # absolute times: a relative one would fall elsewhere for each process
    window = ("--since", "2000-01-01T00:00:00", "--until", "2100-01-01")
    assert both.same("log", *window, f"{pair}/a/1").stdout.count("\n") == 3


def _by_replica(text: str) -> dict[str, list[str]]:
    """Lines per ``role/N`` prefix, in order (replicas are read concurrently)."""
    out: dict[str, list[str]] = {}
    for line in text.splitlines():
        out.setdefault(line.split(" ", 1)[0], []).append(line)
    return out


def test_log_of_several_replicas_has_the_same_lines(both: Both, pair: str) -> None:
    for args in (("log", pair), ("log", f"{pair}/a"), ("log", f"{pair}/a/0,1")):
        full, quick = both.full(*args), both.quick(*args)
        assert quick.returncode == full.returncode == 0
        assert _by_replica(quick.stdout) == _by_replica(full.stdout), args
    assert set(_by_replica(both.quick("log", pair).stdout)) == {"a/0", "a/1", "b/0"}


@pytest.mark.parametrize(
    "args",
    [
        ("status", "--json", "{h}"),
        ("status", "--roles", "a", "{h}"),
        ("log", "--regex", "out", "{h}/a/0"),
        ("list", "--json"),
        ("list", "-s", "local_cwd"),
        ("list", "-cfg", "grace_period=1"),
        ("--log_level", "INFO", "status", "{h}"),
    ],
)
def test_options_it_does_not_handle_go_the_full_path(
    both: Both, pair: str, args: tuple[str, ...]
) -> None:
    both.same(*(a.format(h=pair) for a in args), taken=False)


@pytest.mark.parametrize(
    "args",
    [
        ("status", "local://torchx/nope-0000000000"),
        ("status", "local://torchx/NOPE"),
        ("log", "local://torchx/nope-0000000000"),
        ("log", "{h}/c"),
        ("log", "{h}/a/7"),
        ("log", "{h}/a/x"),
        ("log", "{h}/a/0/9"),
        ("log", "--streams", "both", "{h}"),
        ("log", "--since", "yesterday", "{h}"),
        ("status",),
        # several handles (one of them unknown): the full command, which answers each
        ("status", "{h}", "local://torchx/nope-0000000000"),
    ],
)
def test_errors_are_the_full_commands(both: Both, pair: str, args: tuple[str, ...]) -> None:
    proc = both.same(*(a.format(h=pair) for a in args), taken=False)
    assert proc.returncode == 2 and proc.stderr


def test_a_torchxconfig_sends_list_the_full_way(both: Both, cli: Cli, pair: str) -> None:
    (cli.work / ".torchxconfig").write_text("[cli:run]\nscheduler = local\n")
    both.same("list", taken=False)
    # explicit too: its [local] section may name another state_dir to list
    both.same("list", "-s", "local", taken=False)
    (cli.work / ".torchxconfig").unlink()
    both.same("list")
    (cli.home / ".torchxconfig").write_text("[cli:run]\nscheduler = local\n")
    both.same("list", taken=False)


def test_an_app_whose_supervisor_died_is_settled_by_the_scheduler(
    both: Both, cli: Cli, done: str
) -> None:
    both.quick("status", done)  # the quick path may answer in this world
    handle = cli.start("utils.sh", "sleep", "30")
    path = cli.state / "apps" / handle.rsplit("/", 1)[1] / "state.json"
    # the supervisor records its watchdog and the replica's session once they run (a
    # file another process writes, no event to wait on): poll it, with a deadline
    deadline = time.monotonic() + 30
    record = json.loads(path.read_text())
    while not ("watchdog" in record and record["replicas"]["sh"][0].get("sessions")):
        assert time.monotonic() < deadline, record
        time.sleep(0.02)
        record = json.loads(path.read_text())
    for who in ("watchdog", "supervisor"):
        os.kill(record[who]["pid"], signal.SIGKILL)
    proc = cli("status", handle, env=both.env)
    assert "pluggy" in _imported(proc.stderr)  # the scheduler's path: it records the death
    assert "State: FAILED" in proc.stdout and "supervisor died" in proc.stdout
    # settled, it is FAILED: its status stays on the full path, which looks for the
    # failed replica's error (torchx.runner.failures)
    assert both.same("status", "--show-secrets", handle, taken=False).stdout == proc.stdout
    both.same("status", handle, taken=False)
    assert "FAILED" in both.same("list").stdout


def _plugin(root: Path, hooks: str) -> dict[str, str]:
    """An installed distribution 'acme' whose plugin module has ``hooks``; its PYTHONPATH."""
    d = root / "acme"
    info = d / "acme-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: acme\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[torchx]\nacme = acme_plugin\n")
    (d / "acme_plugin.py").write_text(
        "from torchx.specs.hookspecs import hookimpl\n\n" + textwrap.dedent(hooks)
    )
    (d / "acme_status.py").write_text(
        textwrap.dedent(
            """
            class Status:
                help = "acme's status"

                def add_arguments(self, parser):
                    parser.add_argument("handle")

                def run(self, args):
                    print("acme status of", args.handle)
                    return 0


            def create_scheduler(session_name, **kwargs):
                from torchx.schedulers.local.scheduler import create_scheduler

                return create_scheduler(session_name, **kwargs)
            """
        )
    )
    return {"PYTHONPATH": str(d)}


def test_a_plugin_that_replaces_status_is_obeyed(both: Both, pair: str) -> None:
    both.env.update(
        _plugin(
            both.cli.root,
            """
            @hookimpl
            def torchx_cli_commands():
                return {"status": "acme_status:Status"}
            """,
        )
    )
    assert both.same("status", pair, taken=False).stdout == f"acme status of {pair}\n"
    both.same("list")  # what the plugin does not replace stays quick


def test_a_plugin_that_replaces_local_is_obeyed(both: Both, pair: str) -> None:
    both.env.update(
        _plugin(
            both.cli.root,
            """
            @hookimpl
            def torchx_schedulers():
                return {"local": "acme_status:create_scheduler"}
            """,
        )
    )
    both.same("status", pair, taken=False)
    both.same("list", taken=False)


def test_editing_a_plugin_module_is_seen_at_once(both: Both, done: str) -> None:
    env = _plugin(
        both.cli.root,
        """
        @hookimpl
        def torchx_named_resources():
            return {}
        """,
    )
    both.env.update(env)
    both.same("status", done)  # a plugin that takes no name of ours: quick
    module = Path(env["PYTHONPATH"]) / "acme_plugin.py"
    module.write_text(
        module.read_text()
        + "\n@hookimpl\ndef torchx_cli_commands():\n    return {'status': 'acme_status:Status'}\n"
    )
    st = module.stat()
    os.utime(module, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
    proc = both.cli("status", done, rc=0, env=both.env)
    assert proc.stdout == f"acme status of {done}\n"


def test_the_references_are_the_built_in_ones() -> None:
    from torchx.schedulers.local import view as local_view

    for name, ref in _quick.COMMANDS.items():
        assert builtin_plugin._COMMANDS[name] == ref
    assert local_view.FACTORY == _quick.LOCAL_FACTORY
    from torchx.runner.api import DEFAULT_SESSION_NAME

    assert _quick.SESSION == DEFAULT_SESSION_NAME


def test_following_a_running_app_is_the_schedulers(both: Both, cli: Cli, pair: str) -> None:
    both.quick("log", "-t", f"{pair}/b")  # the quick path may answer in this world
    # The app prints a line, then waits for `go`, made only once `log -t` has shown that
    # line: the command chose its path while the app was running, however slowly it
    # started (no race against a sleep).
    go = cli.root / "go"
    wait = f"echo started; until [ -e {go} ]; do sleep 0.01; done; echo done"
    handle = cli.start("utils.sh", "sh", "-c", wait)
    env = {k: v for k, v in os.environ.items() if k != "TORCHX_DEBUG"}
    proc = subprocess.Popen(
        [TORCHX, "log", "-t", handle],
        cwd=cli.work,
        env={**env, **cli.env, **both.env},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    timer = threading.Timer(60, proc.kill)  # a command that never shows the line fails
    timer.start()
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()
        go.touch()
        out, err = proc.communicate(timeout=60)
    finally:
        timer.cancel()
    assert (first + out, proc.returncode) == ("sh/0 started\nsh/0 done\n", 0), err
    assert "pluggy" in _imported(err)


def test_a_finder_of_other_distributions_turns_it_off(monkeypatch: pytest.MonkeyPatch) -> None:
    class Finder:
        def find_spec(self, *args: object) -> None:
            return None

        def find_distributions(self, *args: object) -> list[object]:
            return []  # could name plugins the environment key never sees

    assert marker._sees_every_distribution()
    monkeypatch.setattr(sys, "meta_path", [Finder(), *sys.meta_path])
    assert not marker._sees_every_distribution()
    assert marker.allowed() == frozenset()


@pytest.mark.parametrize(
    "argv",
    [
        ["status", "slurm://torchx/12"],
        ["log", "slurm://torchx/12/train/0"],
        ["list", "-s", "slurm"],
        ["status", "local_cwd://torchx/app-1"],
    ],
)
def test_another_schedulers_command_imports_nothing_here(argv: list[str]) -> None:
    # declined before the local records' reader is imported: its cost is the local
    # scheduler's alone, never added to a command for another scheduler
    for name in [m for m in sys.modules if m.startswith("torchx.schedulers.local.view")]:
        del sys.modules[name]
    assert _quick.run(argv) is None
    assert "torchx.schedulers.local.view" not in sys.modules


# ------------------------------------------------------ a plugin's scheduler and its handler

#: The plugin 'acme': a scheduler whose backend is a JSON file (``$ACME_BACKEND``), and
#: a quick handler reading the same file with the standard library, declining as the
#: contract says (torchx.schedulers.helpers.quick).
ACME_SCHEDULER = """
import json, os

from torchx.schedulers.contract.api import DescribeAppResponse, Scheduler, TransientSchedulerError
from torchx.specs import AppState, ReplicaStatus, Role, RoleStatus


def _backend():
    with open(os.environ["ACME_BACKEND"]) as f:
        data = json.load(f)
    if data.get("down"):
        raise TransientSchedulerError("acme's backend is down")
    return data


class AcmeScheduler(Scheduler):
    def __init__(self, session_name, **kwargs):
        super().__init__("acme", session_name)

    def schedule(self, dryrun_info):
        raise NotImplementedError

    def _submit_dryrun(self, app, cfg):
        raise NotImplementedError

    def list(self, cfg=None):
        return []

    def _cancel_existing(self, app_id):
        _backend()["apps"][app_id]["state"] = "CANCELLED"

    def describe(self, app_id):
        app = _backend()["apps"].get(app_id)
        if app is None:
            return None
        return DescribeAppResponse(
            app_id=app_id,
            state=AppState[app["state"]],
            num_restarts=app["restarts"],
            msg=app["msg"],
            ui_url=app["ui_url"],
            start_time=app["start"],
            end_time=app["end"],
            roles_statuses=[
                RoleStatus(role, [
                    ReplicaStatus(id=k, state=AppState[s], role=role, hostname=h, exit_code=c)
                    for k, s, c, h in reps
                ])
                for role, reps in app["roles"]
            ],
            roles=[Role(role, image="i", env=env) for (role, _), env in zip(app["roles"], app["envs"])],
        )

    def log_iter(self, app_id, role_name, k=0, regex=None, since=None, until=None,
                 should_tail=False, streams=None):
        return iter(_backend()["apps"][app_id]["logs"][f"{role_name}/{k}"])


def create_scheduler(session_name, **kwargs):
    return AcmeScheduler(session_name, **kwargs)
"""

#: Its quick handler: light (json and os only), in a module of its own.
ACME_QUICK = """
import json, os


class Handler:
    calls = [c for c in os.environ.get("ACME_CALLS", "status,log,cancel").split(",") if c]

    def status(self, app_id):
        with open(os.environ["ACME_BACKEND"]) as f:
            data = json.load(f)
        app = data["apps"].get(app_id)
        if data.get("down") or app is None:
            return None
        return {
            "state": app["state"], "num_restarts": app["restarts"], "msg": app["msg"],
            "ui_url": app["ui_url"], "start_time": app["start"], "end_time": app["end"],
            "roles": [(role, [tuple(r) for r in reps]) for role, reps in app["roles"]],
            "envs": app["envs"],
        }

    def log(self, app_id, role, k, streams, status):
        with open(os.environ["ACME_BACKEND"]) as f:
            return list(json.load(f)["apps"][app_id]["logs"][f"{role}/{k}"])


HANDLER = Handler()
"""

ACME_HOOKS = """
@hookimpl
def torchx_schedulers():
    return {"acme": "acme_sched:create_scheduler"}

@hookimpl
def torchx_quick_handlers():
    return {"acme": "acme_quick:HANDLER"}
"""


def _acme_app(state: str = "SUCCEEDED", msg: str = "") -> dict[str, object]:
    return {
        "state": state,
        "restarts": 1,
        "msg": msg,
        "ui_url": "https://acme.example/jobs/a1",
        "start": 1_700_000_000.0,
        "end": 1_700_000_090.5 if state in ("SUCCEEDED", "FAILED", "CANCELLED") else None,
        "roles": [
            ["trainer", [[0, state, 0, "node-1"], [1, state, None, ""]]],
            ["ps", [[0, "RUNNING", None, "node-3"]]],
        ],
        "envs": [{"HF_TOKEN": "hf_abcdef", "LR": "0.1"}, {}],
        "logs": {"trainer/0": ["loss=1\n", "loss=0.5\n"], "trainer/1": ["x\n"], "ps/0": ["ps"]},
    }


def _acme_world(both: Both, hooks: str) -> Path:
    """The plugin 'acme' with ``hooks``, installed in ``both``'s world; its backend file."""
    both.env.update(_plugin(both.cli.root, hooks))
    (both.cli.root / "acme" / "acme_sched.py").write_text(ACME_SCHEDULER)
    (both.cli.root / "acme" / "acme_quick.py").write_text(ACME_QUICK)
    backend = both.cli.root / "backend.json"
    backend.write_text(json.dumps({"apps": {"a1": _acme_app(msg="fine")}}))
    both.env["ACME_BACKEND"] = str(backend)
    return backend


@pytest.fixture
def acme(both: Both) -> Path:
    """The plugin 'acme' (a scheduler and its handler) installed; its backend (one app, a1)."""
    return _acme_world(both, ACME_HOOKS)


@pytest.mark.parametrize(
    "args",
    [
        ("status", "acme://torchx/a1"),
        ("status", "--show-secrets", "acme://s/a1"),
        ("log", "acme://torchx/a1"),
        ("log", "acme://torchx/a1/trainer"),
        ("log", "--streams", "stdout", "--color", "always", "acme://torchx/a1/trainer/0,1"),
        ("cancel", "acme://torchx/a1"),
    ],
)
def test_a_plugins_handler_answers_as_the_full_path(
    both: Both, acme: Path, args: tuple[str, ...]
) -> None:
    proc = both.same(*args)
    assert proc.returncode == 0 and proc.stdout


def test_the_status_a_handler_gives_is_complete(both: Both, acme: Path) -> None:
    out = both.same("status", "acme://torchx/a1").stdout
    assert "Msg: fine\n" in out and "hf_abcdef" not in out
    assert "trainer/0  SUCCEEDED  exit=0  host=node-1\n" in out
    assert "trainer/1  SUCCEEDED\n" in out  # no exit code, no host: not shown
    assert "Num restarts: 1\nStarted: " in out and "(after 1m30s)" in out


def test_a_status_with_a_secret_to_mask_is_the_full_paths(both: Both, acme: Path) -> None:
    acme.write_text(json.dumps({"apps": {"a1": _acme_app(msg="fine, hf_abcdef leaked")}}))
    # masked with the AppDef the scheduler gives back: the full path's to decide
    out = both.same("status", "acme://torchx/a1", taken=False).stdout
    assert "hf_abcdef" not in out and "Msg: fine, ****" in out
    shown = both.same("status", "--show-secrets", "acme://torchx/a1").stdout
    assert "Msg: fine, hf_abcdef leaked" in shown


@pytest.mark.parametrize(
    "args",
    [
        ("status", "acme://torchx/nope"),  # unknown app: the handler declines
        ("log", "acme://torchx/nope/trainer/0"),
        ("cancel", "acme://torchx/nope"),
        ("status", "acme://torchx"),  # bad handles: never reach the handler
        ("status", "acme://torchx/a1/trainer"),
        ("log", "acme://torchx/a1/trainer/x"),
        ("log", "acme://torchx/a1/nope"),
        ("log", "acme://torchx/a1/trainer/7"),
        ("status", "acme://torchx/a 1"),
    ],
)
def test_errors_of_a_plugins_apps_are_the_full_commands(
    both: Both, acme: Path, args: tuple[str, ...]
) -> None:
    proc = both.same(*args, taken=False)
    assert proc.returncode == 2
    assert _without_import_lines(proc.stderr).startswith(f"torchx {args[0]}: error: ")


def test_an_outage_of_a_plugins_backend_is_the_full_commands(both: Both, acme: Path) -> None:
    import re

    both.quick("status", "acme://torchx/a1")  # the quick path may answer in this world
    acme.write_text(json.dumps({"down": True, "apps": {}}))
    # the handler declines; the full path retries for 10 s, then says the state is unknown
    full, quick = (
        both.full("status", "acme://torchx/a1"),
        both.quick("status", "acme://torchx/a1", taken=False),
    )

    def said(proc: subprocess.CompletedProcess[str]) -> tuple[int, str, str]:
        took = re.sub(r"in [0-9.]+s", "in Ns", _without_import_lines(proc.stderr))
        return proc.returncode, proc.stdout, took

    assert said(quick) == said(full)
    assert quick.returncode == 4 and "acme's backend is down" in quick.stderr


@pytest.mark.parametrize("state", ["FAILED", "RUNNING"])
def test_what_a_handler_leaves_to_the_scheduler(both: Both, acme: Path, state: str) -> None:
    acme.write_text(json.dumps({"apps": {"a1": _acme_app(state)}}))
    # a failed app's error and hint are the full path's; so is stopping a live app
    args = ("status", "acme://torchx/a1") if state == "FAILED" else ("cancel", "acme://torchx/a1")
    both.same(*args, taken=False)
    both.same("log", "acme://torchx/a1/trainer/0", taken=state != "FAILED")


@pytest.mark.parametrize("option", [("--json",), ("--roles", "ps"), ("--log_level", "INFO")])
def test_options_a_handler_does_not_get_go_the_full_path(
    both: Both, acme: Path, option: tuple[str, ...]
) -> None:
    both.same("status", *option, "acme://torchx/a1", taken=False)
    both.same("log", "-t", "acme://torchx/a1/trainer/0", taken=False)


def test_a_handler_for_another_distributions_scheduler_is_ignored(both: Both) -> None:
    # the scheduler 'acme' comes from another distribution, 'zeta': acme's handler
    # must not answer for it
    _acme_world(
        both,
        """
        @hookimpl
        def torchx_quick_handlers():
            return {"acme": "acme_quick:HANDLER"}
        """,
    )
    zeta = both.cli.root / "zeta"
    info = zeta / "zeta-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: zeta\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[torchx]\nzeta = zeta_plugin\n")
    (zeta / "zeta_plugin.py").write_text(
        "from torchx.specs.hookspecs import hookimpl\n\n"
        "@hookimpl\ndef torchx_schedulers():\n    return {'acme': 'acme_sched:create_scheduler'}\n"
    )
    both.env["PYTHONPATH"] += os.pathsep + str(zeta)
    both.same("status", "acme://torchx/a1", taken=False)
    checked = both.cli("plugins", "--check", env=both.env).stdout
    assert (
        "    acme (acme_quick:HANDLER from acme): not used: "
        "the scheduler 'acme' comes from zeta, not from acme\n"
    ) in checked


def test_plugins_check_shows_the_quick_handlers_and_whether_they_are_used(
    both: Both, acme: Path
) -> None:
    import json

    listed = both.cli("plugins", env=both.env).stdout
    assert "acme 1.0\n    schedulers: acme\n    quick_handlers: acme\n" in listed
    assert "quick handlers (" not in listed  # whether they are used: --check's to say
    line = "    acme (acme_quick:HANDLER from acme): "
    before = both.cli("plugins", "--check", env=both.env).stdout
    assert line + "not used yet: the quick path has no record of this environment" in before
    assert ", 1 quick handlers: every one imports" in before
    both.quick("status", "acme://torchx/a1")  # a full run records it; the next is quick
    after = both.cli("plugins", "--check", env=both.env).stdout
    assert line + "allowed by the quick path's record\n" in after
    off = {**both.env, "TORCHX_NO_PLUGIN_CACHE": "1"}
    assert "not used: TORCHX_NO_PLUGIN_CACHE" in both.cli("plugins", "--check", env=off).stdout
    doc = json.loads(both.cli("plugins", "--json", "--check", env=both.env).stdout)["data"]
    assert doc["distributions"]["acme"]["quick_handlers"] == ["acme"]
    assert doc["checked"]["quick_handlers"] == 1
    (entry,) = doc["quick_handlers"]
    assert (entry["scheduler"], entry["distribution"], entry["allowed"]) == ("acme", "acme", True)


def test_a_handler_answers_only_the_calls_it_declares(both: Both, acme: Path) -> None:
    both.env["ACME_CALLS"] = "status"
    both.same("status", "acme://torchx/a1")  # answered by the handler
    both.same("log", "acme://torchx/a1/trainer/0", taken=False)  # not declared: the full path
    both.same("cancel", "acme://torchx/a1", taken=False)


@pytest.mark.parametrize(
    ("calls", "problem"),
    [
        ("", "a quick handler without calls"),
        ("status,watch", "a quick handler declaring 'watch'; calls are status, log, cancel"),
    ],
)
def test_plugins_check_fails_on_a_handler_that_declares_no_calls_it_can_answer(
    both: Both, calls: str, problem: str
) -> None:
    _acme_world(both, ACME_HOOKS)
    both.env["ACME_CALLS"] = calls
    out = both.cli("plugins", "--check", rc=1, env=both.env).stdout
    assert f"(torchx: acme): {problem}" in out


def test_plugins_check_fails_on_a_quick_handler_without_its_methods(both: Both) -> None:
    _acme_world(both, ACME_HOOKS.replace("acme_quick:HANDLER", "acme_quick:json"))
    out = both.cli("plugins", "--check", rc=1, env=both.env).stdout
    assert "(torchx: acme): a quick handler without status, log" in out
