"""``torchx ui -s slurm`` against the real cluster of ``dev/slurm up``, as a person uses
the page (over its HTTP API and event streams: :mod:`torchx.ui.testing`): an app run
from the CLI appears, its page opens, its log lines arrive while it runs, cancel from
the page ends it. Run by ``nox -s integration_slurm`` (``TORCHX_UI_INTEGRATION=slurm``)."""

from __future__ import annotations

from pathlib import Path

from torchx.schedulers.testing.cli import TorchxCli
from torchx.ui.testing import TICKER, UiProcess, follow_and_cancel


def test_a_person_follows_and_cancels_a_slurm_app_in_torchx_ui(tmp_path: Path) -> None:
    cli = TorchxCli(tmp_path / "cli", scheduler="slurm")
    try:
        # the server runs where the user's commands run: the job directory holds the logs
        args = ["-s", "slurm", "--interval", "0.5"]
        with (
            UiProcess(args, env=cli.env, cwd=cli.work, command=cli.command) as ui,
            ui.events() as events,
        ):
            handle = cli.start("utils.sh", "sh", "-c", TICKER)
            ended = follow_and_cancel(ui, events, handle, "sh", 0)
        (role,) = ended["data"]["status"]["roles"]
        assert [r["state"] for r in role["replicas"]] == ["CANCELLED"]
        # the CLI, a new process asking Slurm, agrees
        assert cli.wait_state(handle, {"CANCELLED"}, timeout=30)["state"] == "CANCELLED"
    finally:
        cli.cleanup()
