"""``torchx run``: components and AppDef files, --wait/--log, --dryrun, -cfg, [cli:run], errors."""

from __future__ import annotations

import json
import re
import time

from helpers import Cli


def test_run_returns_the_handle_at_once_and_the_app_keeps_running(cli: Cli) -> None:
    t = time.monotonic()
    handle = cli.start("utils.sh", "sleep", "60")
    assert time.monotonic() - t < 20
    assert re.fullmatch(r"local://torchx/sh-[a-z0-9]+", handle)
    assert cli.status_json(handle)["state"] in ("PENDING", "RUNNING")


def test_wait_exit_0_on_success_and_status_block_on_its_own_line(cli: Cli) -> None:
    # stdout and stderr of one process into one pipe, as a terminal shows them
    import subprocess

    from helpers import TORCHX

    proc = subprocess.run(
        [TORCHX, "run", "--wait", "--log", "utils.echo", "--msg", "hello"],
        cwd=cli.work,
        env={**__import__("os").environ, **cli.env},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stdout
    lines = proc.stdout.splitlines()
    assert "echo/0 hello" in lines
    assert "State: SUCCEEDED" in lines


def test_wait_exit_1_when_the_app_fails(cli: Cli) -> None:
    proc = cli("run", "--wait", "utils.sh", "exit", "3", rc=1)
    assert "State: FAILED" in proc.stderr and "exit=3" in proc.stderr
    assert proc.stdout.startswith("local://torchx/sh-")


def test_log_streams_every_replica_prefixed(cli: Cli) -> None:
    proc = cli("run", "--log", "utils.echo", "--msg", "hi there", "--num_replicas", "3")
    lines = proc.stdout.splitlines()
    for k in range(3):
        assert f"echo/{k} hi there" in lines
    assert "\033[" not in proc.stdout  # no colors when stdout is not a terminal
    assert "State: SUCCEEDED" in proc.stderr


def test_a_double_dollar_reaches_the_program_as_typed_and_escapes_a_macro(cli: Cli) -> None:
    """``pa$$word`` arrived as ``pa$word``; ``$${app_id}`` stays upstream's escape (the
    macro's text) and ``${app_id}`` is the app's id."""
    proc = cli("run", "--log", "utils.echo", "--msg", "pa$$word $${app_id} ${app_id}")
    app_id = proc.stdout.splitlines()[0].rsplit("/", 1)[1]
    assert f"echo/0 pa$$word ${{app_id}} {app_id}" in proc.stdout.splitlines(), proc.stdout


def test_log_failed_app_exits_1_and_shows_stderr(cli: Cli) -> None:
    proc = cli("run", "--log", "utils.sh", "sh", "-c", "echo boom >&2; exit 1", rc=1)
    assert "sh/0 boom" in proc.stdout
    assert "State: FAILED" in proc.stderr


def test_appdef_files_yaml_and_json(cli: Cli) -> None:
    (cli.work / "app.yaml").write_text(
        "name: hello\n"
        "roles:\n"
        "  - name: greeter\n"
        "    image: .\n"
        "    entrypoint: echo\n"
        "    args: [from, yaml]\n"
        "    num_replicas: 2\n"
    )
    proc = cli("run", "--log", "app.yaml")
    assert "greeter/0 from yaml" in proc.stdout and "greeter/1 from yaml" in proc.stdout
    doc = {
        "apiVersion": "torchx.specs/v1",
        "kind": "AppDef",
        "spec": {
            "name": "j",
            "roles": [{"name": "r", "image": ".", "entrypoint": "echo", "args": ["json"]}],
        },
    }
    (cli.work / "app.json").write_text(json.dumps(doc))
    assert "r/0 json" in cli("run", "--log", "app.json").stdout


def test_bad_appdef_files_are_one_line_errors(cli: Cli) -> None:
    (cli.work / "bad.yaml").write_text(
        "name: x\nroles:\n  - name: r\n    image: .\n    entrypont: echo\n"
    )
    err = cli("run", "bad.yaml", rc=2).stderr
    assert "bad.yaml" in err and "entrypont" in err and "did you mean 'entrypoint'" in err
    assert len(err.strip().splitlines()) == 1
    assert "cannot read AppDef file" in cli("run", "missing.json", rc=2).stderr
    (cli.work / "ok.yaml").write_text("name: x\nroles: [{name: r, image: ., entrypoint: echo}]\n")
    assert "takes no arguments" in cli("run", "ok.yaml", "--msg", "x", rc=2).stderr
    assert cli("list").stdout.strip() == "no apps"  # nothing was submitted


def test_apps_local_cannot_run_are_refused_in_one_line_before_anything_starts(cli: Cli) -> None:
    role = {"name": "r", "image": ".", "entrypoint": "echo"}
    cases = {
        "twins.json": ([role, role], "two roles named 'r'"),
        "eq.json": ([{**role, "env": {"A=B": "1"}}], "env key 'A=B' contains '='"),
        "img.json": ([{**role, "image": "nowhere"}], "image 'nowhere' does not exist"),
        "retries.json": ([{**role, "max_retries": -2}], "max_retries=-2: it must be >= 0"),
    }
    for name, (roles, message) in cases.items():
        doc = {
            "apiVersion": "torchx.specs/v1",
            "kind": "AppDef",
            "spec": {"name": "x", "roles": roles},
        }
        (cli.work / name).write_text(json.dumps(doc))
        for args in (["--dryrun", name], [name]):
            err = cli("run", *args, rc=2).stderr
            assert message in err and len(err.strip().splitlines()) == 1, err
    assert cli("list").stdout.strip() == "no apps"
    assert not cli.state.exists() or not (cli.state / "apps").exists()


def test_describe_json_runs_again(cli: Cli) -> None:
    handle = cli.start("utils.echo", "--msg", "again")
    text = cli("describe", "--json", handle).stdout
    doc = json.loads(text)
    assert doc["apiVersion"] == "torchx.specs/v1" and doc["kind"] == "AppDef"
    (cli.work / "again.json").write_text(text)
    assert "echo/0 again" in cli("run", "--log", "again.json").stdout


def test_dryrun_prints_the_appdef_and_request_and_submits_nothing(cli: Cli) -> None:
    (cli.work / "train.py").write_text("print('hi')\n")
    out = cli(
        "run",
        "--dryrun",
        "dist.ddp",
        "-j",
        "2x3",
        "--script",
        "train.py",
        "--env",
        "HF_TOKEN=hf_abcdef,DB_PASSWORD=hunter22,PLAIN=visible",
    ).stdout
    assert "=== APPLICATION ===" in out and "=== SCHEDULER REQUEST (local) ===" in out
    assert "Role train: 2 replicas" in out and "--nproc_per_node 3" in out
    assert "HF_TOKEN=****" in out and "DB_PASSWORD=****" in out and "PLAIN=visible" in out
    assert "hf_abcdef" not in out and "hunter22" not in out
    assert "AppDef(" not in out  # readable, not a repr
    shown = cli(
        "run", "--dryrun", "--show-secrets", "utils.sh", "--env", "MY_KEY=k3y", "true"
    ).stdout
    assert "MY_KEY=k3y" in shown
    assert cli("list").stdout.strip() == "no apps"


def test_dryrun_masks_secrets_by_key_however_the_request_renders_them(cli: Cli) -> None:
    env = {
        "API_TOKEN": "abc'def123",  # shell-quoted in the request
        "DB_PASSWORD": "pa$$word99",  # '$$' escapes no macro: rendered as typed
        "MY_SECRET": "${app_id}-xyzzy",  # a macro, substituted in the request
        "HF_KEY": "Zq",  # short
    }
    role = {"name": "r", "image": ".", "entrypoint": "true", "env": env}
    doc = {
        "apiVersion": "torchx.specs/v1",
        "kind": "AppDef",
        "spec": {"name": "x", "roles": [role]},
    }
    (cli.work / "app.json").write_text(json.dumps(doc))
    for extra in ([], ["--json"]):
        out = cli("run", "--dryrun", *extra, "app.json").stdout
        for leak in ("def123", "word99", "xyzzy", "Zq"):
            assert leak not in out, (leak, out)
        assert "API_TOKEN=****" in out
    shown = cli("run", "--dryrun", "--show-secrets", "app.json").stdout
    assert "word99" in shown and "xyzzy" in shown


def test_running_a_described_app_with_masked_secrets_is_refused(cli: Cli) -> None:
    handle = cli.start("utils.sh", "--env", "API_TOKEN=t0k3n", "true")
    (cli.work / "masked.json").write_text(cli("describe", "--json", handle).stdout)
    err = cli("run", "masked.json", rc=2).stderr
    assert "env API_TOKEN is ****" in err and "--show-secrets" in err
    assert len(err.strip().splitlines()) == 1
    assert len(cli("list").stdout.strip().splitlines()) == 2  # header + the first app only
    (cli.work / "real.json").write_text(cli("describe", "--json", "--show-secrets", handle).stdout)
    cli("run", "--wait", "real.json")


def test_dryrun_json_has_format_versions(cli: Cli) -> None:
    out = cli("run", "--dryrun", "--json", "utils.sh", "--env", "API_SECRET=s3cr3t", "true").stdout
    doc = json.loads(out)
    assert doc["formatVersion"] == "torchx.cli/v1" and doc["kind"] == "DryRun"
    assert doc["data"]["scheduler"] == "local"
    assert doc["data"]["app"]["apiVersion"] == "torchx.specs/v1"
    assert doc["data"]["app"]["spec"]["roles"][0]["env"]["API_SECRET"] == "****"
    assert "s3cr3t" not in out


def test_run_json_prints_the_handle(cli: Cli) -> None:
    doc = json.loads(cli("run", "--json", "utils.echo").stdout)
    assert doc["formatVersion"] == "torchx.cli/v1" and doc["kind"] == "AppHandle"
    assert doc["data"]["handle"].startswith("local://torchx/echo-")


def test_cfg_repeats_and_is_checked(cli: Cli) -> None:
    logs = cli.root / "mylogs"
    out = cli(
        "run", "--dryrun", "-cfg", f"log_dir={logs}", "-cfg", "prepend_cwd=true", "utils.echo"
    ).stdout
    assert str(logs) in out
    err = cli("run", "-cfg", "log_dri=/tmp", "utils.echo", rc=2).stderr
    assert "unknown run option 'log_dri'" in err and "did you mean 'log_dir'" in err
    assert "expects a float" in cli("run", "-cfg", "grace_period=soon", "utils.echo", rc=2).stderr
    assert "KEY=VALUE" in cli("run", "-cfg", "log_dir", "utils.echo", rc=2).stderr


def test_cli_run_section_sets_the_default_scheduler_and_component(cli: Cli) -> None:
    (cli.work / ".torchxconfig").write_text(
        "[cli:run]\nscheduler = local_cwd\ncomponent = utils.echo\n"
    )
    handle = cli("run").stdout.strip()
    assert handle.startswith("local_cwd://torchx/echo-")
    assert cli("run", "-s", "local", "utils.echo").stdout.startswith("local://")
    (cli.work / ".torchxconfig").write_text("[cli:run]\nscheduler = lcoal\n")
    err = cli("run", "utils.echo", rc=2).stderr
    assert "unknown scheduler 'lcoal'" in err and "did you mean 'local'" in err


def test_did_you_mean(cli: Cli) -> None:
    err = cli("run", "-s", "locla", "utils.echo", rc=2).stderr
    assert "did you mean 'local'" in err and "installed: local" in err
    err = cli("run", "utils.ecoh", rc=2).stderr
    assert "unknown component 'utils.ecoh'" in err and "did you mean 'utils.echo'" in err
    (cli.work / "t.py").write_text("")
    err = cli("run", "dist.ddp", "--script", "t.py", "-h", "gpu.smal", rc=2).stderr
    assert "unknown named resource 'gpu.smal'" in err and "did you mean 'gpu.small'" in err
    err = cli("run", "utils.echo", "--mgs", "x", rc=2).stderr
    assert "did you mean --msg" in err
    for e in (err,):
        assert "Traceback" not in e


def test_missing_required_argument_shows_the_component_usage(cli: Cli) -> None:
    err = cli("run", "utils.copy", "--src", "a", rc=2).stderr
    assert err.startswith("usage: utils.copy")
    assert "the following arguments are required: --dst" in err
    err = cli("run", "dist.ddp", "-j", "1x2", rc=2).stderr
    assert err.startswith("usage: dist.ddp") and "--script" in err.splitlines()[-1]


def test_component_help_exits_0(cli: Cli) -> None:
    out = cli("run", "utils.echo", "--help").stdout
    assert out.startswith("usage: utils.echo") and "--msg MSG" in out
    assert cli("list").stdout.strip() == "no apps"


def test_no_component_is_a_usage_error(cli: Cli) -> None:
    err = cli("run", rc=2).stderr
    assert "no component given" in err and "torchx builtins" in err


def test_parent_run_id_reaches_the_app(cli: Cli) -> None:
    out = cli(
        "run",
        "--log",
        "--parent_run_id",
        "exp-42",
        "utils.sh",
        "sh",
        "-c",
        "echo $TORCHX_PARENT_RUN_ID",
    ).stdout
    assert "sh/0 exp-42" in out


def test_tracebacks_only_when_debugging(cli: Cli) -> None:
    quiet = cli("run", "utils.ecoh", rc=2).stderr
    assert "Traceback" not in quiet and len(quiet.strip().splitlines()) == 1
    loud = cli("run", "utils.ecoh", rc=None, env={"TORCHX_DEBUG": "1"})
    assert loud.returncode != 0 and "Traceback" in loud.stderr
    loud = cli("--log_level", "DEBUG", "run", "utils.ecoh", rc=None)
    assert loud.returncode != 0 and "Traceback" in loud.stderr


def test_usage_errors_exit_2(cli: Cli) -> None:
    # (status and cancel take several handles; describe takes one)
    assert "unrecognized arguments" in cli("describe", "a", "b", rc=2).stderr
    assert "malformed app handle 'b'" in cli("status", "a", "b", rc=2).stderr
    assert "required" in cli("status", rc=2).stderr
    err = cli("log", "--streams", "both", "x://y/z", rc=2).stderr
    assert "unknown choice 'both'; choose from stdout, stderr, combined" in err


def test_cfg_from_torchxconfig_and_explicit_cfg_wins(cli: Cli) -> None:
    from_file, explicit = cli.root / "from-file", cli.root / "explicit"
    (cli.work / ".torchxconfig").write_text(f"[local]\nlog_dir = {from_file}\n")
    assert str(from_file) in cli("run", "--dryrun", "utils.echo").stdout
    out = cli("run", "--dryrun", "-cfg", f"log_dir={explicit}", "utils.echo").stdout
    assert str(explicit) in out and str(from_file) not in out
