"""``torchx ui`` as a person starts it, for tests that drive its page in a browser.

The browser tests of torchx-ui (on the local scheduler, and against real Slurm and
Docker in the plugins' integration sessions) run ``torchx ui ARGS`` in a process of its
own, open the URL it printed, and stop it as Ctrl-C would at the end, checking it exits
0::

    with UiProcess(["-s", "slurm"], env=cli.env, cwd=cli.work) as ui:
        page.browser.send("Page.navigate", page.session, url=ui.url)

A server that prints no URL (a bad option, a port taken) is one clear failure, with what
it printed on stderr.
"""

from __future__ import annotations

import signal
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import TracebackType


class UiProcess:
    """``torchx ui ARGS`` in a process of its own, stopped (SIGTERM, exit 0) at the end.

    ``env`` and ``cwd`` are those of the test's ``torchx`` commands: the server must see
    the same apps (``TORCHX_HOME``, a job directory) as the CLI that starts them.
    """

    def __init__(
        self,
        args: Sequence[str],
        *,
        env: Mapping[str, str],
        cwd: Path,
        command: str = "torchx",
    ) -> None:
        self._proc = subprocess.Popen(
            [command, "ui", *args],
            cwd=cwd,
            env=dict(env),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert self._proc.stdout is not None
        #: the URL ``torchx ui`` printed
        self.url = self._proc.stdout.readline().strip()
        if not self.url.startswith("http://"):
            self._proc.kill()
            _, err = self._proc.communicate(timeout=30)
            raise AssertionError(f"torchx ui printed no URL: {err}")

    def __enter__(self) -> UiProcess:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def stop(self) -> None:
        """Stops the server as Ctrl-C would; it must exit 0 within 30 s."""
        if self._proc.poll() is None:
            self._proc.send_signal(signal.SIGTERM)
        _, err = self._proc.communicate(timeout=30)
        assert self._proc.returncode == 0, f"torchx ui exited {self._proc.returncode}: {err}"
