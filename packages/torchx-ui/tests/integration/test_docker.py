"""``torchx ui -s docker`` against the real engine of ``dev/docker up``, in Chromium: the
steps a person takes on the page (``browser/flow.py``, as on the local scheduler): an app
run from the CLI appears, its page opens (its run option env shown masked), its log lines
arrive while it runs, cancel from the page ends it, delete from the page removes it from
the list. Run by ``nox -s integration_docker`` (``TORCHX_UI_INTEGRATION=docker``)."""

from __future__ import annotations

import os
from pathlib import Path

from browser import flow

from torchx.schedulers.testing.cli import TorchxCli
from torchx.ui.testing import UiProcess


def test_a_person_follows_cancels_and_deletes_a_docker_app_in_torchx_ui(tmp_path: Path) -> None:
    image = os.environ["TORCHX_DEV_DOCKER_BUSYBOX_IMAGE"]
    # deleted at the end whatever happens: the engine keeps a cancelled app's containers
    # and network until then (the page's delete does it when the test gets that far)
    cli = TorchxCli(tmp_path / "cli", scheduler="docker", timeout=120, ending="delete")
    try:
        args = ["-s", "docker", "--interval", "0.5"]
        with (
            UiProcess(args, env=cli.env, cwd=cli.work, command=cli.command) as ui,
            flow.chromium_page() as page,
        ):
            flow.open_list(page, ui.url)
            ticker = flow.ticker("tick")
            # a secret-looking variable of the run option env: its page shows it masked
            secret = ["-cfg", "env=HF_TOKEN:ui-docker-secret"]
            handle = cli.start(
                *secret, "utils.sh", "--image", image, "--memMB", "64", "sh", "-c", ticker
            )
            # listed under the scheduler's name for it, titled by the AppDef's (utils.sh)
            name = flow.listed_name(cli, handle)
            flow.follow_and_cancel(
                page,
                handle,
                name=name,
                app_name="sh",
                role="sh",
                text="tick",
                option=("env", "HF_TOKEN:****"),
                timeout=120,
            )
            table = page.evaluate("document.getElementById('run-options').textContent")
            assert "ui-docker-secret" not in table
            # the CLI, a new process asking the engine, agrees
            assert cli.wait_state(handle, {"CANCELLED"}, timeout=30)["state"] == "CANCELLED"
            # delete removes the containers and the network: the engine lists it no more
            flow.delete(page, handle)
        assert handle not in cli("list", "-s", "docker").stdout
    finally:
        cli.cleanup()
