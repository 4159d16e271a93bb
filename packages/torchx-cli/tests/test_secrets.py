"""Secrets that come in through run options are masked wherever torchx prints them.

A role's env was masked by name before; run options that carry ``NAME:VALUE`` pairs
(docker's ``env``, SageMaker's ``environment`` and ``hyperparameters``), given with
``-cfg`` or in ``.torchxconfig``, and host variables a run option copies into the
request (docker's ``copy_env``) were printed in clear. A plugin installed for these tests
(``vault-plugin``) has a scheduler with such options; its app fails with a message
holding the run option's secret, as an app that prints it to stderr does.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import Cli, scheduler_plugin

SCHEDULER = """
import json
import os

from torchx.schedulers.contract.api import DescribeAppResponse, Scheduler
from torchx.schedulers.contract.errors import SchedulerError
from torchx.specs import AppDryRunInfo, AppState
from torchx.specs.options import runopts


class Vault(Scheduler):
    def __init__(self, session_name):
        super().__init__("vault", session_name)

    def _run_opts(self):
        opts = runopts()
        opts.add("env", type_=dict[str, str], help="NAME:VALUE pairs for every replica")
        opts.add("copy_env", type_=list[str], help="host variables to copy")
        opts.add("refuse", type_=bool, default=False, help="refuse the request")
        return opts

    def _submit_dryrun(self, app, cfg):
        env = {n: os.environ[n] for n in cfg.get("copy_env") or [] if n in os.environ}
        env.update(cfg.get("env") or {})
        request = {"env": env, "roles": {r.name: r.env for r in app.roles}, "cfg": cfg}
        return AppDryRunInfo(request, lambda r: json.dumps(r, sort_keys=True))

    def schedule(self, dryrun_info):
        request = dryrun_info.request
        if request["cfg"].get("refuse"):
            raise SchedulerError(f"refused the env {request['env']}: quota")
        with open(os.environ["VAULT_APP"], "w") as f:
            json.dump(request["env"], f)
        return "app1"

    def describe(self, app_id):
        with open(os.environ["VAULT_APP"]) as f:
            env = json.load(f)
        if os.environ.get("VAULT_STORED"):  # a value from the backend's own secret store
            env["secret:vault/db"] = os.environ["VAULT_STORED"]
        # the app printed its env on stderr, and the scheduler tells it as the failure;
        # it knows the env the app ran with (as docker's inspect does)
        return DescribeAppResponse(
            app_id=app_id, state=AppState.FAILED, msg=f"exit 1: login with {env} refused",
            env=env,
        )

    def list(self, cfg=None):
        return []

    def _cancel_existing(self, app_id):
        pass


def create_scheduler(session_name, **kwargs):
    return Vault(session_name)
"""

SECRET = "hunter2-vault"
HOST_SECRET = "AKIA-host-only-9"


def _vault_plugin(root: Path) -> dict[str, str]:
    """The plugin ``vault-plugin`` on PYTHONPATH; returns the env."""
    return {
        **scheduler_plugin(root, "vault", SCHEDULER),
        "VAULT_APP": str(root / "vault-app.json"),
        "MY_SECRET_KEY": HOST_SECRET,
    }


@pytest.fixture
def env(cli: Cli) -> dict[str, str]:
    return _vault_plugin(cli.root)


RUN = ["run", "-s", "vault", "-cfg", f"env=DB_PASSWORD:{SECRET},LEVEL:debug"]


def test_dryrun_masks_run_options_and_copied_host_variables(cli: Cli, env: dict[str, str]) -> None:
    args = [*RUN, "-cfg", "copy_env=MY_SECRET_KEY", "--dryrun", "utils.sh", "true"]
    for extra in ([], ["--json"]):
        out = cli(*args[:-2], *extra, *args[-2:], env=env).stdout
        assert SECRET not in out and HOST_SECRET not in out, out
        assert "LEVEL" in out and "debug" in out  # what is not secret stays
        assert '\\"DB_PASSWORD\\": \\"****\\"' in out or '"DB_PASSWORD": "****"' in out
    shown = cli(*args[:-2], "--show-secrets", *args[-2:], env=env).stdout
    assert SECRET in shown and HOST_SECRET in shown


def test_dryrun_masks_run_options_of_torchxconfig(cli: Cli, env: dict[str, str]) -> None:
    (cli.work / ".torchxconfig").write_text(f"[vault]\nenv = API_TOKEN:{SECRET},LEVEL:debug\n")
    out = cli("run", "-s", "vault", "--dryrun", "utils.sh", "true", env=env).stdout
    assert SECRET not in out and "debug" in out
    shown = cli("run", "-s", "vault", "--dryrun", "--show-secrets", "utils.sh", "true", env=env)
    assert SECRET in shown.stdout


def test_the_status_of_run_wait_masks_a_run_options_secret(cli: Cli, env: dict[str, str]) -> None:
    proc = cli(*RUN, "--wait", "--json", "utils.sh", "true", env=env, rc=1)
    assert "login with" in proc.stderr  # the failure is told, its secret is not
    assert SECRET not in proc.stderr + proc.stdout
    doc = json.loads(proc.stdout.splitlines()[-1])  # one document per line
    assert doc["kind"] == "AppStatus"
    assert "****" in doc["data"]["status"]["msg"]
    shown = cli(*RUN, "--wait", "--show-secrets", "utils.sh", "true", env=env, rc=1)
    assert SECRET in shown.stderr


def test_the_status_of_run_wait_masks_a_secret_only_the_scheduler_knows(
    cli: Cli, env: dict[str, str]
) -> None:
    """A value the scheduler reads from its own store (k8s ``secret_env``) was never in
    a run option or the AppDef: ``run --wait``'s final status masks it too, as a later
    ``torchx status`` does."""
    stored = "s3cr3t-from-the-store"
    proc = cli(
        "run",
        "-s",
        "vault",
        "--wait",
        "utils.sh",
        "true",
        env={**env, "VAULT_STORED": stored},
        rc=1,
    )
    assert "login with" in proc.stderr and "****" in proc.stderr
    assert stored not in proc.stderr + proc.stdout


def test_status_of_a_later_process_masks_the_env_the_scheduler_tells(
    cli: Cli, env: dict[str, str]
) -> None:
    """A later ``torchx status`` knows no run option: the scheduler tells the env the app
    ran with (``DescribeAppResponse.env``), and its secrets are masked too."""
    handle = cli(*RUN, "utils.sh", "true", env=env).stdout.strip()
    for extra in ([], ["--json"]):
        out = cli("status", *extra, handle, env=env).stdout
        assert "login with" in out and "****" in out and SECRET not in out, out
    assert SECRET in cli("status", "--show-secrets", handle, env=env).stdout


def test_an_error_line_masks_a_run_options_secret(cli: Cli, env: dict[str, str]) -> None:
    proc = cli(*RUN, "-cfg", "refuse=true", "utils.sh", "true", env=env, rc=1)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr
    assert lines[0].startswith("torchx run: error: refused the env") and "quota" in lines[0]
    assert SECRET not in proc.stderr and "DB_PASSWORD" in proc.stderr


@pytest.mark.parametrize(
    "cfg",
    [
        f"env=DB_PASSWORD:{SECRET},BAD",  # a malformed pair after the secret
        f"env=DB_PASSWORD={SECRET}",  # = where : was meant
        f"vault_token={SECRET}",  # an unknown option whose name looks secret
    ],
)
def test_a_bad_run_option_is_one_line_with_its_secret_masked(
    cli: Cli, env: dict[str, str], cfg: str
) -> None:
    """The error line quotes the value that did not parse: its secrets as written are
    masked, from -cfg and from .torchxconfig; --show-secrets shows them."""
    args = ["run", "-s", "vault", "--dryrun", "utils.sh", "true"]
    proc = cli(*args[:3], "-cfg", cfg, *args[3:], env=env, rc=2)
    [line] = proc.stderr.splitlines()
    assert line.startswith("torchx run: error: ") and "****" in line and SECRET not in line
    shown = cli(*args[:3], "-cfg", cfg, "--show-secrets", *args[3:], env=env, rc=2)
    assert SECRET in shown.stderr
    key, _, value = cfg.partition("=")
    (cli.work / ".torchxconfig").write_text(f"[vault]\n{key} = {value}\n")
    [line] = cli(*args, env=env, rc=2).stderr.splitlines()
    assert ".torchxconfig: [vault]" in line and SECRET not in line
    assert "****" in line or "unknown key 'vault_token'" in line  # that one names no value


def test_torchx_log_lines_and_warnings_are_masked(
    capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    import logging
    import warnings

    from torchx.cli import _report
    from torchx.cli.output import mask_log_lines, remember_secrets, start_masking

    start_masking(False)
    remember_secrets([{"HF_TOKEN": SECRET}])
    mask_log_lines()  # on every handler logging prints with (here, pytest's)
    show = warnings.showwarning
    try:
        _report.warnings_as_lines("run")
        logging.getLogger("torchx.runner").warning("backend said: %s is bad", SECRET)
        warnings.warn(f"quota for {SECRET}", stacklevel=1)
        err = capsys.readouterr().err + caplog.text
        assert "backend said: **** is bad" in err and "quota for ****" in err
        assert SECRET not in err
        start_masking(True)  # --show-secrets
        logging.getLogger("torchx.runner").warning("backend said: %s is bad", SECRET)
        assert f"backend said: {SECRET} is bad" in caplog.text
    finally:
        warnings.showwarning = show
        start_masking(False)
