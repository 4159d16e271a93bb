"""torchx.ui.testing, which starts ``torchx ui`` for the browser tests (local, Slurm,
Docker): a server that printed no URL is one clear failure. Its use, a server started,
its page opened and the server stopped with exit 0, is every browser test's."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from torchx.ui.testing import UiProcess

TORCHX = str(Path(sys.executable).parent / "torchx")


def test_a_server_that_printed_no_url_is_one_clear_failure(world: Path) -> None:
    try:
        UiProcess(["--port", "nope"], env=dict(os.environ), cwd=world, command=TORCHX)
    except AssertionError as e:
        assert "printed no URL" in str(e) and "port" in str(e)
    else:
        raise AssertionError("no failure")
