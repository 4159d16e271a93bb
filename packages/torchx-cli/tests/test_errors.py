"""How ``torchx`` reports errors, through the real command: by type, one line, exit status.

A plugin installed for these tests (``faulty-plugin``) has a scheduler and commands that
fail in each way the CLI tells apart.
"""

from __future__ import annotations

import itertools
import re
import textwrap
from pathlib import Path

import pytest
from helpers import Cli

HINT = "rerun with --log_level DEBUG (or TORCHX_DEBUG=1) to see the traceback"


def _faulty_plugin(root: Path) -> dict[str, str]:
    """An installed distribution ``faulty-plugin 3.0`` on PYTHONPATH; returns the env."""
    d = root / "faulty"
    info = d / "faulty_plugin-3.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: faulty-plugin\nVersion: 3.0\n")
    (info / "entry_points.txt").write_text("[torchx]\nfaulty = faulty_plugin.plugin\n")
    pkg = d / "faulty_plugin"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "plugin.py").write_text(
        textwrap.dedent(
            """
            from torchx.specs.hookspecs import hookimpl

            @hookimpl
            def torchx_schedulers():
                return {"faulty": "faulty_plugin.scheduler:create_scheduler"}

            @hookimpl
            def torchx_cli_commands():
                return {
                    "crash": "faulty_plugin.commands:Crash",
                    "refuse": "faulty_plugin.commands:Refuse",
                    "namesake": "faulty_plugin.commands:Namesake",
                }
            """
        )
    )
    (pkg / "scheduler.py").write_text(
        textwrap.dedent(
            """
            import json
            import os
            import time

            from torchx.schedulers.contract.api import DescribeAppResponse, Scheduler
            from torchx.schedulers.contract.errors import SchedulerError, TransientSchedulerError
            from torchx.specs import AppDryRunInfo, AppState, ReplicaStatus, RoleStatus


            class Faulty(Scheduler):
                def __init__(self, session_name):
                    super().__init__("faulty", session_name)

                def _submit_dryrun(self, app, cfg):
                    return AppDryRunInfo({"app": app.name}, str)

                def schedule(self, dryrun_info):
                    return "down"  # submitted; its backend then stops answering

                def describe(self, app_id):
                    if app_id == "down":  # a backend that does not answer, however often asked
                        if "FAULTY_CALLS" in os.environ:  # when each call was made
                            with open(os.environ["FAULTY_CALLS"], "a") as f:
                                f.write(f"{time.monotonic()}\\n")
                        raise TransientSchedulerError("controller down")
                    if app_id == "sdk":
                        return json.loads("{")  # the SDK's own exception, deep in the stdlib
                    if app_id.startswith("log"):  # running; its log breaks (see log_iter)
                        replica = ReplicaStatus(0, AppState.RUNNING, "w", "host")
                        return DescribeAppResponse(
                            app_id=app_id,
                            state=AppState.RUNNING,
                            roles_statuses=[RoleStatus("w", [replica])],
                        )
                    raise RuntimeError(f"kaboom\\nsecond line for {app_id}")

                def log_iter(self, app_id, role_name, k=0, *args, **kwargs):
                    yield "first line"
                    if app_id == "logdown":  # the backend stopped answering mid-stream
                        raise TransientSchedulerError("log service down")
                    raise SchedulerError("log stream refused: no such replica log")

                def list(self, cfg=None):
                    raise SchedulerError("queue 'q' is gone: ask your admin")

                def _cancel_existing(self, app_id):
                    pass


            def create_scheduler(session_name, **kwargs):
                return Faulty(session_name)
            """
        )
    )
    (pkg / "commands.py").write_text(
        textwrap.dedent(
            """
            from torchx.specs.errors import SpecError


            class SchedulerError(Exception):
                '''Named like torchx's, but not it: the CLI must not be fooled by the name.'''


            class Crash:
                help = "a command with a bug"

                def add_arguments(self, parser):
                    pass

                def run(self, args):
                    return {}["missing"]


            class Refuse:
                help = "a command refusing bad input"

                def add_arguments(self, parser):
                    pass

                def run(self, args):
                    raise SpecError("bad input: give --size as NxM, e.g. 2x8")


            class Namesake:
                help = "raises an exception named SchedulerError"

                def add_arguments(self, parser):
                    pass

                def run(self, args):
                    raise SchedulerError("not torchx's")
            """
        )
    )
    return {"PYTHONPATH": str(d)}


@pytest.fixture
def env(cli: Cli) -> dict[str, str]:
    return _faulty_plugin(cli.root)


def _one_line(stderr: str) -> str:
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, stderr
    assert "Traceback" not in stderr
    return lines[0]


def test_a_plugin_bug_names_the_plugin_and_exits_3(cli: Cli, env: dict[str, str]) -> None:
    proc = cli("status", "faulty://s/app1", env=env, rc=3)
    assert _one_line(proc.stderr) == (
        "torchx status: error: unexpected RuntimeError: kaboom second line for app1 from the "
        f"plugin faulty-plugin 3.0 (faulty_plugin.scheduler), not caused by your input; {HINT}"
    )


def test_an_sdk_exception_inside_a_plugin_names_the_plugin(cli: Cli, env: dict[str, str]) -> None:
    line = _one_line(cli("status", "faulty://s/sdk", env=env, rc=3).stderr)
    assert line.startswith("torchx status: error: unexpected JSONDecodeError: ")
    assert "from the plugin faulty-plugin 3.0 (faulty_plugin.scheduler)" in line


def test_debug_shows_the_traceback(cli: Cli, env: dict[str, str]) -> None:
    proc = cli("status", "faulty://s/app1", env={**env, "TORCHX_DEBUG": "1"}, rc=None)
    assert proc.returncode != 0
    assert "Traceback" in proc.stderr and "faulty_plugin/scheduler.py" in proc.stderr


def test_a_scheduler_error_is_one_line_and_exits_1(cli: Cli, env: dict[str, str]) -> None:
    proc = cli("list", "-s", "faulty", env=env, rc=1)
    assert _one_line(proc.stderr) == "torchx list: error: queue 'q' is gone: ask your admin"


def test_a_plugin_commands_bug_exits_3(cli: Cli, env: dict[str, str]) -> None:
    line = _one_line(cli("crash", env=env, rc=3).stderr)
    assert line.startswith("torchx crash: error: unexpected KeyError: 'missing' from the plugin ")
    assert "faulty-plugin 3.0 (faulty_plugin.commands)" in line and line.endswith(HINT)


def test_a_plugins_spec_error_is_a_usage_error(cli: Cli, env: dict[str, str]) -> None:
    proc = cli("refuse", env=env, rc=2)
    assert _one_line(proc.stderr) == (
        "torchx refuse: error: bad input: give --size as NxM, e.g. 2x8"
    )


def test_errors_are_told_apart_by_type_not_by_name(cli: Cli, env: dict[str, str]) -> None:
    line = _one_line(cli("namesake", env=env, rc=3).stderr)
    assert "unexpected SchedulerError: not torchx's from the plugin faulty-plugin 3.0" in line


def test_a_file_that_cannot_be_read_is_a_usage_error(cli: Cli) -> None:
    proc = cli("run", str(cli.work / "missing.yaml"), rc=2)
    assert "missing.yaml" in _one_line(proc.stderr)


def test_a_backend_that_stays_down_is_retried_with_backoff_then_one_answer(
    cli: Cli, env: dict[str, str]
) -> None:
    """status retries a transient failure with growing waits for the one-shot budget
    (10 s, at most 6 calls), says so at once, then says the state is unknown (not
    failed) in one line, exit 4 (not 1: the app did not fail). How long that takes in seconds is the bench's to time:
    here, on a loaded machine, only what was done is asserted."""
    calls = cli.root / "calls"
    proc = cli("status", "faulty://s/down", env={**env, "FAULTY_CALLS": str(calls)}, rc=4)
    lines = proc.stderr.strip().splitlines()
    assert "Traceback" not in proc.stderr
    assert lines[0] == "status of faulty://s/down: controller down; retrying for up to 10 s"
    assert len(lines) == 2, proc.stderr
    assert lines[1].startswith("torchx status: error: status of faulty://s/down: ")
    assert "the app's state is unknown, not failed" in lines[1]
    made = [float(t) for t in calls.read_text().split()]
    said = re.search(r"gave up after (\d+) attempts in ([\d.]+)s", lines[1])
    assert said and int(said.group(1)) == len(made), lines[1]
    # retried (the first wait, 0.25 s, leaves room in 10 s), never more than 6 calls
    assert 2 <= len(made) <= 6, made
    # each wait at least the backoff's (0.25 s doubling, less 20 % jitter): a sleep is
    # never shorter than asked, however loaded the machine
    waits = [b - a for a, b in itertools.pairwise(made)]
    assert all(w >= 0.8 * 0.25 * 2**n for n, w in enumerate(waits)), waits


def test_wait_that_gives_up_on_an_outage_exits_4_not_1(cli: Cli, env: dict[str, str]) -> None:
    """1 says the app failed: a wait that lost the backend says the state is unknown
    (after 2 s of retries here; 60 s by default)."""
    short = {**env, "TORCHX_RETRY_S": "2"}
    proc = cli("run", "-s", "faulty", "--wait", "utils.echo", env=short, rc=4)
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("torchx run: error: status of faulty://torchx/down: "), proc.stderr
    assert "the app's state is unknown, not failed" in last
    assert "deleted" not in proc.stderr and "Traceback" not in proc.stderr


def test_log_of_an_app_whose_state_is_unknown_exits_4(cli: Cli, env: dict[str, str]) -> None:
    proc = cli("log", "faulty://s/down", env=env, rc=4)
    assert "the app's state is unknown, not failed" in proc.stderr.strip().splitlines()[-1]


def test_following_a_log_rides_out_an_outage_like_a_wait(cli: Cli, env: dict[str, str]) -> None:
    """log -t follows an app for long: it keeps the budget of run --wait (TORCHX_RETRY_S
    sets it), not the 10 s of a one-shot log; the warning says the budget it keeps."""
    short = {**env, "TORCHX_RETRY_S": "1.5"}
    proc = cli("log", "-t", "faulty://s/down", env=short, rc=4)
    lines = proc.stderr.strip().splitlines()
    assert lines[0] == "status of faulty://s/down: controller down; retrying for up to 1.5 s"
    assert "the app's state is unknown, not failed" in lines[-1]
    proc = cli("log", "faulty://s/down", env=short, rc=4)
    assert proc.stderr.splitlines()[0].endswith("retrying for up to 10 s")


def test_a_log_the_backend_could_not_give_exits_4_other_read_errors_1(
    cli: Cli, env: dict[str, str]
) -> None:
    """A log cut short by an outage says nothing of the app: its state is unknown (exit
    4, as status says in an outage); a log the backend refused is an error (exit 1)."""
    for follow in ([], ["-t"]):
        proc = cli("log", *follow, "faulty://s/logdown", env=env, rc=4)
        assert proc.stdout == "w/0 first line\n"
        assert proc.stderr.splitlines() == [
            "torchx log: error reading the log of w/0: TransientSchedulerError: log service down"
        ]
        proc = cli("log", *follow, "faulty://s/logrefused", env=env, rc=1)
        assert proc.stdout == "w/0 first line\n"
        assert proc.stderr.splitlines() == [
            "torchx log: error reading the log of w/0: SchedulerError: log stream refused: "
            "no such replica log"
        ]


def test_a_bad_retry_budget_is_one_line(cli: Cli, env: dict[str, str]) -> None:
    proc = cli(
        "run", "-s", "faulty", "--wait", "utils.echo", env={**env, "TORCHX_RETRY_S": "1m"}, rc=2
    )
    assert _one_line(proc.stderr) == (
        "torchx run: error: TORCHX_RETRY_S='1m': give the seconds to keep retrying a "
        "scheduler that cannot be reached while following an app, a number > 0 (default 60)"
    )


def test_help_lists_the_exit_status_of_an_outage(cli: Cli) -> None:
    out = cli("--help").stdout
    assert "4 the scheduler could not be reached" in " ".join(out.split())


RAISING_COMPONENT = """\
import torchx.specs as specs


def fn(msg: str = "hi") -> specs.AppDef:
    \"\"\"A component with a bug.

    Args:
        msg: a message
    \"\"\"
    return _build(msg)


def _build(msg: str) -> specs.AppDef:
    raise RuntimeError("boom")
"""


def test_a_component_that_raises_is_blamed_on_the_component(cli: Cli) -> None:
    (cli.work / "comp.py").write_text(RAISING_COMPONENT)
    for args in (["run", "./comp.py:fn"], ["run", "--dryrun", "./comp.py:fn", "--msg", "x"]):
        proc = cli(*args, rc=2)
        assert proc.stderr.strip().splitlines() == [
            "torchx run: error: component ./comp.py:fn raised RuntimeError: boom (comp.py:14)"
        ]
        assert "bug of torchx" not in proc.stderr
    assert not (cli.state / "apps").exists() or not list((cli.state / "apps").iterdir())
    # debugging shows where it came from
    debug = cli("run", "./comp.py:fn", rc=None, env={"TORCHX_DEBUG": "1"})
    assert debug.returncode != 0
    assert 'comp.py", line 14, in _build' in debug.stderr


def test_config_errors_name_the_file_and_the_section(cli: Cli) -> None:
    config = cli.work / ".torchxconfig"
    config.write_text("[cli:run]\ncomponent = utils.ehco\n")
    proc = cli("run", rc=2)
    assert proc.stderr.startswith(f"torchx run: error: {config}: [cli:run]: component: ")
    assert "unknown component 'utils.ehco' (did you mean 'utils.echo'?)" in proc.stderr
    # a component named on the command line is not blamed on the file
    assert str(config) not in cli("run", "utils.ehco", rc=2).stderr

    config.write_text("[component:utils.echo]\nmgs = x\n")
    proc = cli("run", "utils.echo", rc=2)
    (first,) = proc.stderr.splitlines()  # one line: no bare "usage:" before it (the file is wrong)
    assert first.startswith(f"torchx run: error: {config}: [component:utils.echo]: ")
    assert "unknown default 'mgs' (did you mean 'msg'?)" in first

    config.write_text("[component:utils.echo]\nnum_replicas = many\n")
    (first,) = cli("run", "utils.echo", rc=2).stderr.splitlines()
    assert first.startswith(f"torchx run: error: {config}: [component:utils.echo]: ")
    assert "--num_replicas" in first and "'many'" in first

    config.write_text("[cli:run]\nscheduler = slrum\n")
    (line,) = cli("run", "utils.echo", rc=2).stderr.splitlines()
    assert line.startswith(f"torchx run: error: {config}: [cli:run]: scheduler: ")
    assert "'slrum' (did you mean 'slurm'?)" in line or "unknown scheduler 'slrum'" in line
    # a scheduler named on the command line is not blamed on the file
    assert str(config) not in cli("run", "-s", "slrum", "utils.echo", rc=2).stderr


def test_a_first_party_scheduler_not_installed_says_what_to_install(cli: Cli) -> None:
    import importlib.util

    # the tests-torchx-cli session installs torchx-cli and what it declares, no plugin
    assert importlib.util.find_spec("torchx_slurm") is None
    for args in (["run", "-s", "slurm", "utils.echo"], ["list", "-s", "slurm"]):
        proc = cli(*args, rc=2)
        assert proc.stderr.splitlines() == [
            f"torchx {args[0]}: error: scheduler 'slurm' is provided by torchx-slurm, which is "
            "not installed: pip install torchx-slurm (from a clone of the repository: "
            "pip install ./plugins/torchx-slurm); installed: local, local_cwd"
        ]
    assert "provided by torchx-k8s" in cli("runopts", "kubernetes_mcad", rc=2).stderr
    assert "provided by torchx-aws" in cli("run", "-s", "aws_batch", "utils.echo", rc=2).stderr
    # a typo of an installed one is still a typo
    assert "did you mean 'local'?" in cli("run", "-s", "locl", "utils.echo", rc=2).stderr


def test_python_warnings_are_one_clean_line(cli: Cli) -> None:
    (cli.work / "train.py").write_text("print('hi')\n")
    proc = cli("run", "--dryrun", "dist.spmd", "-j", "1x4", "--script", "train.py")
    warnings = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(warnings) == 1, proc.stderr
    assert warnings[0].startswith("torchx run: warning: -j 1x4 runs 4 processes per node")
    assert "UserWarning" not in proc.stderr and ".py:" not in proc.stderr
    # debugging keeps Python's own format (where it came from)
    debug = cli(
        "run",
        "--dryrun",
        "dist.spmd",
        "-j",
        "1x4",
        "--script",
        "train.py",
        env={"TORCHX_DEBUG": "1"},
    )
    assert "UserWarning: -j 1x4" in debug.stderr


def test_ddp_without_torch_is_refused_before_it_starts_not_exit_127_later(cli: Cli) -> None:
    import importlib.util

    # the tests-torchx-cli session installs no torch: torchrun is nowhere
    assert importlib.util.find_spec("torch") is None
    (cli.work / "train.py").write_text("print('hi')\n")
    env = {"PATH": "/usr/bin:/bin"}
    for args in (["--wait"], []):
        proc = cli("run", *args, "dist.ddp", "-j", "1x2", "--script", "train.py", rc=2, env=env)
        assert proc.stderr.splitlines() == [
            "torchx run: error: role 'train': 'torchrun' (the first command of its bash script) "
            "is not on the PATH its replicas get: it comes with PyTorch: pip install torch"
        ]
        assert proc.stdout == ""  # no handle: nothing was submitted
    assert not (cli.state / "apps").exists() or not list((cli.state / "apps").iterdir())
    # a dry run still shows the request (to run it where torch is)
    assert "torchrun" in cli("run", "--dryrun", "dist.ddp", "--script", "train.py", env=env).stdout
