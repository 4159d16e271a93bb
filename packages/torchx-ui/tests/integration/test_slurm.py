"""``torchx ui -s slurm`` against the real cluster of ``dev/slurm up``, in Chromium: the
steps a person takes on the page (``browser/flow.py``, as on the local scheduler): an app
run from the CLI appears, its page opens, its log lines arrive while it runs, cancel from
the page ends it, delete from the page keeps it listed (Slurm keeps ended jobs). Run by
``nox -s integration_slurm`` (``TORCHX_UI_INTEGRATION=slurm``)."""

from __future__ import annotations

from pathlib import Path

from browser import flow

from torchx.schedulers.testing.cli import TorchxCli
from torchx.ui.testing import UiProcess


def test_a_person_follows_cancels_and_deletes_a_slurm_app_in_torchx_ui(tmp_path: Path) -> None:
    cli = TorchxCli(tmp_path / "cli", scheduler="slurm")
    try:
        # the server runs where the user's commands run: the job directory (the working
        # directory, Slurm's default) holds the logs the page follows
        args = ["-s", "slurm", "--interval", "0.5"]
        with (
            UiProcess(args, env=cli.env, cwd=cli.work, command=cli.command) as ui,
            flow.chromium_page() as page,
        ):
            flow.open_list(page, ui.url)
            handle = cli.start("utils.sh", "sh", "-c", flow.ticker("tick"))
            # listed under the scheduler's name for it, titled by the AppDef's (utils.sh)
            name = flow.listed_name(cli, handle)
            flow.follow_and_cancel(
                page, handle, name=name, app_name="sh", role="sh", text="tick", timeout=120
            )
            # the CLI, a new process asking Slurm, agrees
            assert cli.wait_state(handle, {"CANCELLED"}, timeout=30)["state"] == "CANCELLED"
            # torchx-slurm's delete only cancels (Slurm keeps every job in its accounting:
            # `delete` is among its missing_capabilities), so the list keeps the app,
            # CANCELLED, and so does the CLI asked after the delete
            flow.delete(page, handle, kept=True)
            assert cli.status(handle)["state"] == "CANCELLED"
            assert page.evaluate(f"{flow.row(handle)}.querySelector('.state').textContent") == (
                "CANCELLED"
            )
    finally:
        cli.cleanup()
