"""torchx.ui.testing, the kit of the integration tests on Slurm and Docker, on the local
scheduler: the real ``torchx ui`` and ``torchx run`` commands, as those tests use them."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from torchx.ui.testing import TICKER, UiProcess, follow_and_cancel

TORCHX = str(Path(sys.executable).parent / "torchx")


def test_a_person_follows_and_cancels_a_local_app(world: Path) -> None:
    env, cwd = dict(os.environ), world / "work"
    with (
        UiProcess(["-s", "local", "--interval", "0.5"], env=env, cwd=cwd, command=TORCHX) as ui,
        ui.events() as events,
    ):
        run = subprocess.run(
            [TORCHX, "run", "-s", "local", "utils.sh", "sh", "-c", TICKER],
            env=env,
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert run.returncode == 0, run.stderr
        handle = run.stdout.strip().splitlines()[-1]
        ended = follow_and_cancel(ui, events, handle, "sh", 0)
    (role,) = ended["data"]["status"]["roles"]
    assert [r["state"] for r in role["replicas"]] == ["CANCELLED"]


def test_a_server_that_printed_no_url_is_one_clear_failure(world: Path) -> None:
    try:
        UiProcess(["--port", "nope"], env=dict(os.environ), cwd=world, command=TORCHX)
    except AssertionError as e:
        assert "printed no URL" in str(e) and "port" in str(e)
    else:
        raise AssertionError("no failure")
