"""``torchx describe`` shows the app as submitted; a component's own job id says whose it is."""

from __future__ import annotations

import json
import stat

from torchx.schedulers.testing.cli import TorchxCli
from torchx.schedulers.testing.cli import app_id as job_id

FINAL = {"SUCCEEDED", "FAILED", "CANCELLED"}


def test_describe_shows_the_submitted_app_with_its_secrets_masked(cli: TorchxCli) -> None:
    handle = cli.start(
        "utils.sh", "--num_replicas", "2", "--env", "HF_TOKEN=hf_verysecret", "echo", "kept"
    )
    doc = json.loads(cli("describe", "--json", handle).stdout)
    app = doc["spec"]
    assert app["name"] == "sh", app
    [role] = app["roles"]
    assert (role["name"], role["entrypoint"], role["num_replicas"]) == ("sh", "sh", 2), role
    assert role["args"][-1] == "echo kept", role
    assert role["env"]["HF_TOKEN"] == "****", role["env"]
    shown = json.loads(cli("describe", "--json", "--show-secrets", handle).stdout)
    assert shown["spec"]["roles"][0]["env"]["HF_TOKEN"] == "hf_verysecret"
    # kept with the job, readable by the user alone
    kept = cli.work / ".torchx-slurm" / job_id(handle) / "appdef.json"
    assert stat.S_IMODE(kept.stat().st_mode) == 0o600
    # the text form too, from another directory
    text = cli("describe", handle, cwd=cli.home).stdout
    assert "echo kept" in text and "hf_verysecret" not in text, text
    cli.wait_state(handle, FINAL)


def test_a_component_job_id_names_its_app(cli: TorchxCli) -> None:
    handle = cli.start("utils.echo", "--msg", "two", "--num_replicas", "2")
    leader = job_id(handle)
    component = handle.rsplit("/", 1)[0] + f"/{int(leader) + 1}"
    expected = f"component 1 of heterogeneous job {leader} (replica echo/1 of its app)"
    for command in ("status", "describe"):
        proc = cli(command, component, rc=1)
        assert expected in proc.stderr, proc.stderr
        assert handle in proc.stderr, proc.stderr
    cli.wait_state(handle, FINAL)
    # once it ended too
    proc = cli("status", component, rc=1)
    assert expected in proc.stderr, proc.stderr
