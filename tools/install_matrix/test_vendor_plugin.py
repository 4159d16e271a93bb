"""Row: a vendor's plugin (examples/vendor-plugin) installed beside torchx-cli from its wheel.

Each contribution is used through the installed ``torchx`` command: the ``acme``
scheduler (dry-run, then a real app followed with status, log, list, cancel and
delete from later processes), the ``acme.*`` named resources, the ``acme.hello``
component and the ``torchx acme-sizes`` command. The plugin reaches TorchX
through the public hooks only (tools/tests/test_vendor_plugin_source.py checks
its imports).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import REPO, Env, MakeEnv, Wheels, ok, stop_acme_tasks


@pytest.fixture(scope="module")
def env(make_env: MakeEnv) -> Iterator[Env]:
    env = make_env("vendor", "torchx-cli", "acme-torchx")
    yield env
    stop_acme_tasks(env)


def test_installed_beside_torchx_cli_with_nothing_else(env: Env) -> None:
    installed = env.installed()
    ours = {"acme-torchx", "torchx-cli", "torchx-runner", "torchx-specs"}
    assert ours <= installed
    # PyYAML: torchx-cli's (`torchx run app.yaml`)
    assert installed - ours <= {"attrs", "cattrs", "pluggy", "typing-extensions", "pyyaml"}


def test_torchx_plugins_lists_every_contribution(env: Env) -> None:
    data = json.loads(ok(env.torchx("plugins", "--json")))["data"]
    assert data["distributions"]["acme-torchx"] == {
        "version": "0.1.0",
        "schedulers": ["acme"],
        "named_resources": ["acme.gpu8", "acme.small"],
        "components": ["acme.hello"],
        "cli_commands": ["acme-sizes"],
    }
    assert data["failures"] == [] and data["clashes"] == []
    text = ok(env.torchx("plugins"))
    assert "acme-torchx 0.1.0\n    schedulers: acme\n" in text


def test_the_cli_command(env: Env) -> None:
    helped = ok(env.torchx("--help"))
    assert "acme-sizes" in helped
    assert "list the Acme Batch instance sizes (named resources acme.*)" in helped
    assert "--min-gpus" in ok(env.torchx("acme-sizes", "--help"))
    assert ok(env.torchx("acme-sizes")) == (
        "acme.gpu8: 96 CPUs, 8 GPUs, 1048576 MB\nacme.small: 2 CPUs, 0 GPUs, 4096 MB\n"
    )
    assert ok(env.torchx("acme-sizes", "--min-gpus", "1")) == (
        "acme.gpu8: 96 CPUs, 8 GPUs, 1048576 MB\n"
    )
    bad = env.torchx("acme-sizes", "--min-gpus", "many")
    assert bad.returncode == 2 and "invalid int value: 'many'" in bad.stderr


def test_the_component_is_listed_and_documented(env: Env) -> None:
    assert "acme.hello" in ok(env.torchx("builtins"))
    helped = ok(env.torchx("run", "--dryrun", "acme.hello", "--help"))
    assert "whom to greet" in helped


def test_the_named_resource_with_a_builtin_component(env: Env) -> None:
    out = ok(
        env.torchx(
            "run",
            "--dryrun",
            "--json",
            "-s",
            "local",
            "utils.sh",
            "-h",
            "acme.gpu8",
            "python",
            "train.py",  # as docs/plugins.md shows it
        )
    )
    app = json.loads(out)["data"]["app"]
    assert app["kind"] == "AppDef"
    (role,) = app["spec"]["roles"]
    resource = role["resource"]
    assert (resource["cpu"], resource["gpu"], resource["memMB"]) == (96, 8, 1_048_576)
    assert resource["capabilities"]["acme/instance"] == "gpu8"


def test_the_scheduler_runopts(env: Env) -> None:
    out = ok(env.torchx("runopts", "acme"))
    assert out.startswith("acme:\n") and "queue" in out and "the Acme Batch queue" in out


def test_dryrun_on_the_scheduler_submits_nothing(env: Env) -> None:
    out = ok(
        env.torchx(
            "run", "--dryrun", "--json", "-s", "acme", "-cfg", "queue=gpu",
            "acme.hello", "--who", "matrix", "--replicas", "2",
        )
    )  # fmt: skip
    data = json.loads(out)["data"]
    assert data["scheduler"] == "acme"
    request = json.loads(data["request"])
    assert request["queue"] == "gpu"
    assert [t["argv"] for t in request["tasks"]] == [
        ["echo", "hello matrix from replica 0"],
        ["echo", "hello matrix from replica 1"],
    ]
    assert {t["instance"] for t in request["tasks"]} == {"small"}
    assert not (env.work / "acme-batch").exists()  # nothing was submitted


def test_run_and_follow_an_app_from_later_processes(env: Env) -> None:
    run = env.torchx(
        "run", "-s", "acme", "--wait", "acme.hello", "--who", "you", "--replicas", "2"
    )  # as docs/plugins.md and the vendor plugin's README show it
    handle = ok(run).strip()
    assert handle.startswith("acme://torchx/hello-"), run.stdout
    assert "SUCCEEDED" in run.stderr

    status = ok(env.torchx("status", handle))
    assert "State: SUCCEEDED" in status and "greeter/1  SUCCEEDED  exit=0" in status
    logs = ok(env.torchx("log", handle))
    assert sorted(logs.splitlines()) == [
        "greeter/0 hello you from replica 0",
        "greeter/1 hello you from replica 1",
    ]
    assert ok(env.torchx("log", f"{handle}/greeter/1")) == "greeter/1 hello you from replica 1\n"
    # a stream the scheduler cannot give: said for each replica, and the exit status says so
    refused = env.torchx("log", "--streams", "stderr", handle)
    assert refused.returncode == 1 and "Traceback" not in refused.stderr, refused
    # an error is said on stderr, the way every other read error is; stdout holds log lines only
    assert refused.stderr.count("use streams=combined") == 2, refused.stderr
    assert refused.stdout == "", refused.stdout
    listed = json.loads(ok(env.torchx("list", "-s", "acme", "--json")))["data"]
    mine = [a for a in listed if a["handle"] == handle]
    assert [(a["state"], a["name"]) for a in mine] == [("SUCCEEDED", "hello")], listed
    # no times from this backend: the JSON says so rather than leaving the keys out
    assert (mine[0]["start_time"], mine[0]["end_time"], mine[0]["duration_s"]) == (None,) * 3
    # listed by queue, as submitted: the app ran on the default queue, none on "gpu"
    by_queue = ["list", "-s", "acme", "--json", "-cfg"]
    listed = json.loads(ok(env.torchx(*by_queue, "queue=default")))["data"]
    assert handle in {a["handle"] for a in listed}, listed
    assert json.loads(ok(env.torchx(*by_queue, "queue=gpu")))["data"] == []


def test_run_with_log_follows_the_output_until_the_app_ends(env: Env) -> None:
    script = "echo one; sleep 0.5; echo two; exit 3"
    run = env.torchx("run", "-s", "acme", "--log", "utils.sh", "sh", "-c", script)
    assert run.returncode == 1, run.stderr  # the app failed: exit status 1, no traceback
    assert "Traceback" not in run.stderr and "FAILED" in run.stderr
    handle, *lines = run.stdout.splitlines()
    assert handle.startswith("acme://torchx/sh-")
    assert lines == ["sh/0 one", "sh/0 two"]


def _wait_gone(pid: int, timeout: float = 20) -> bool:
    """True once process ``pid`` no longer exists (it is not our child: poll /proc)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not Path(f"/proc/{pid}").exists():
            return True
        time.sleep(0.05)
    return False


def test_cancel_and_delete_a_running_app(env: Env) -> None:
    handle = ok(env.torchx("run", "-s", "acme", "-cfg", "queue=long", "utils.sh", "sleep", "300"))
    handle = handle.strip()
    app_id = handle.rsplit("/", 1)[1]
    assert "State: RUNNING" in ok(env.torchx("status", handle))
    (pid_file,) = (env.work / "acme-batch" / app_id).glob("*/0/pid")
    pid = int(pid_file.read_text())
    assert Path(f"/proc/{pid}").exists()
    listed = ok(env.torchx("list", "-s", "acme"))
    assert handle in listed

    assert ok(env.torchx("cancel", handle)) == f"cancelled {handle}\n"
    assert _wait_gone(pid), "the cancelled task's process is still running"
    assert "State: CANCELLED" in ok(env.torchx("status", handle))

    assert ok(env.torchx("delete", handle)) == f"deleted {handle}\n"
    gone = env.torchx("status", handle)
    assert gone.returncode != 0 and "Traceback" not in gone.stderr
    assert not (env.work / "acme-batch" / app_id).exists()


def test_plugin_modules_are_imported_only_when_used(env: Env) -> None:
    code = """
import contextlib, io, sys
from torchx.cli.main import main
def acme():
    return sorted(m for m in sys.modules if m.startswith("acme_torchx."))
with contextlib.redirect_stdout(io.StringIO()):
    main(["--help"])
    print(acme(), file=sys.stderr)
    main(["run", "--dryrun", "-s", "acme", "acme.hello"])
    print(acme(), file=sys.stderr)
"""
    proc = env.python_code(code)
    assert proc.returncode == 0, proc.stderr
    after_help, after_dryrun = proc.stderr.strip().splitlines()[-2:]
    # `torchx --help` imports the plugin module and its command module, nothing else
    assert after_help == "['acme_torchx.cli', 'acme_torchx.plugin']"
    # a dry-run needs the scheduler and its modules (the backend module imports its
    # client on first call), the component and the resource, never the batch "SDK"
    assert after_dryrun == (
        "['acme_torchx.backend', 'acme_torchx.cli', 'acme_torchx.components', "
        "'acme_torchx.options', 'acme_torchx.plugin', 'acme_torchx.request', "
        "'acme_torchx.resources', 'acme_torchx.scheduler', 'acme_torchx.status']"
    )
    assert "acme_torchx.batch" not in after_dryrun


def test_it_type_checks_against_the_installed_wheels(make_env: MakeEnv) -> None:
    """The wheels ship py.typed: a vendor's mypy --strict sees TorchX's types."""
    env = make_env("typed", "torchx-runner", pypi=["mypy==2.4.1"])
    mypy = [env.python, "-m", "mypy", "--strict", "--cache-dir", env.work / ".mypy_cache"]
    vendor = REPO / "examples" / "vendor-plugin" / "src" / "acme_torchx"
    checked = env.run(*mypy, vendor)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "Success: no issues found in 11 source files" in checked.stdout
    # a control: the same check does catch a misuse of an installed TorchX type
    bad = env.work / "bad.py"
    bad.write_text("from torchx.specs import Resource\n\nResource(cpu='many', gpu=0, memMB=1)\n")
    caught = env.run(*mypy, bad)
    assert caught.returncode == 1
    assert 'Argument "cpu" to "Resource" has incompatible type "str"' in caught.stdout


#: A plugin written against the flat layout's module names (upstream's and this
#: project's earlier ones): they import their new homes' modules (see
#: torchx.schedulers._moved), and a type checker must see the same types through them.
EARLIER_NAMES = """\
from collections.abc import Mapping

from torchx.schedulers.api import DescribeAppResponse, Scheduler, Stream
from torchx.schedulers.capabilities import Capability
from torchx.schedulers.errors import SchedulerError, TransientSchedulerError
from torchx.schedulers.ids import make_app_id
from torchx.schedulers.local_scheduler import LocalScheduler, create_scheduler
from torchx.schedulers.retry import Backoff
from torchx.schedulers.states import to_app_state
from torchx.specs import AppState, CfgVal

scheduler: Scheduler[Mapping[str, CfgVal]] = create_scheduler("typed")
local: LocalScheduler = LocalScheduler("typed")
app_id: str = make_app_id("echo")
response: DescribeAppResponse | None = scheduler.describe(app_id)
stream: Stream = Stream.COMBINED
error: SchedulerError = TransientSchedulerError("throttled", retry_after=1.0)
state: AppState = to_app_state("RUNNING", {"RUNNING": AppState.RUNNING})
lacks: Capability = Capability.RETRIES
backoff: Backoff = Backoff()
"""


def test_the_earlier_module_names_type_check_as_before(make_env: MakeEnv) -> None:
    """``from torchx.schedulers.api import Scheduler`` checks under mypy --strict, and runs."""
    env = make_env("earlier", "torchx-runner", pypi=["mypy==2.4.1"])
    mypy = [env.python, "-m", "mypy", "--strict", "--cache-dir", env.work / ".mypy_cache"]
    plugin = env.work / "earlier_names.py"
    plugin.write_text(EARLIER_NAMES)
    checked = env.run(*mypy, plugin)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "Success: no issues found in 1 source file" in checked.stdout
    ran = env.run(env.python, plugin)
    assert ran.returncode == 0, ran.stderr
    # a control: a misuse through an earlier name is caught
    plugin.write_text(EARLIER_NAMES + "wrong: Stream = make_app_id('echo')\n")
    caught = env.run(*mypy, plugin)
    assert caught.returncode == 1
    assert (
        'Incompatible types in assignment (expression has type "str", variable has type "Stream")'
        in caught.stdout
    )


def test_installing_and_removing_the_wheel_is_all_a_user_does(
    make_env: MakeEnv, wheels: Wheels
) -> None:
    """The entry points cached on disk by an earlier `torchx` never hide a change."""
    env = make_env("late", "torchx-cli")

    def distributions() -> set[str]:
        return set(json.loads(ok(env.torchx("plugins", "--json")))["data"]["distributions"])

    assert "acme-torchx" not in distributions()
    assert list((env.work / "home" / ".cache" / "torchx").glob("entry-points-*"))  # cached
    env.uv_pip("install", "-q", wheels["acme-torchx"])
    assert "acme-torchx" in distributions()
    assert ok(env.torchx("acme-sizes")).startswith("acme.gpu8: ")
    env.uv_pip("uninstall", "-q", "acme-torchx")
    assert "acme-torchx" not in distributions()
    gone = env.torchx("acme-sizes")
    assert gone.returncode == 2 and "unknown command 'acme-sizes'" in gone.stderr
