"""``torchx ui -s docker`` against the real engine of ``dev/docker up``, as a person uses
the page (over its HTTP API and event streams: :mod:`torchx.ui.testing`): an app run
from the CLI appears, its page opens, its log lines arrive while it runs, cancel from
the page ends it. Run by ``nox -s integration_docker`` (``TORCHX_UI_INTEGRATION=docker``)."""

from __future__ import annotations

import os
from pathlib import Path

from torchx.schedulers.testing.cli import TorchxCli
from torchx.ui.testing import TICKER, UiProcess, follow_and_cancel


def test_a_person_follows_and_cancels_a_docker_app_in_torchx_ui(tmp_path: Path) -> None:
    image = os.environ["TORCHX_DEV_DOCKER_BUSYBOX_IMAGE"]
    # deleted at the end: the engine keeps a cancelled app's containers and network
    cli = TorchxCli(tmp_path / "cli", scheduler="docker", timeout=120, ending="delete")
    try:
        args = ["-s", "docker", "--interval", "0.5"]
        with (
            UiProcess(args, env=cli.env, cwd=cli.work, command=cli.command) as ui,
            ui.events() as events,
        ):
            handle = cli.start("utils.sh", "--image", image, "--memMB", "64", "sh", "-c", TICKER)
            ended = follow_and_cancel(ui, events, handle, "sh", 0)
        (role,) = ended["data"]["status"]["roles"]
        assert [r["state"] for r in role["replicas"]] == ["CANCELLED"]
        # the CLI, a new process asking the engine, agrees
        assert cli.wait_state(handle, {"CANCELLED"}, timeout=30)["state"] == "CANCELLED"
    finally:
        cli.cleanup()
