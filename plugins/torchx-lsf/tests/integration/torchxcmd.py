"""The real ``torchx`` command as a subprocess, each test in its own world.

:class:`Cli` gives a test a private ``HOME`` (no ``~/.torchxconfig`` leaks in),
``TORCHX_HOME`` and working directory, which is also the LSF job directory (the
scheduler's default ``jobdir``: the apps' private directories land there). Apps a test leaves
running are cancelled when it ends.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

TORCHX = str(Path(sys.executable).parent / "torchx")


class Cli:
    """``cli("run", ..., rc=0)`` runs torchx in this test's private world and checks the exit."""

    def __init__(self, root: Path) -> None:
        self.home = root / "home"
        self.work = root / "work"
        for d in (self.home, self.work):
            d.mkdir()
        self.env = {**os.environ, "HOME": str(self.home), "TORCHX_HOME": str(root / "state")}
        for name in ("TORCHXCONFIG", "TORCHX_DEBUG"):
            self.env.pop(name, None)
        self.started: list[str] = []

    def __call__(
        self,
        *args: str,
        rc: int | None = 0,
        timeout: float = 60,
        cwd: Path | None = None,
        env: dict[str, str] | None = None,
    ) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run(
            [TORCHX, *args],
            cwd=cwd or self.work,
            env={**self.env, **(env or {})},
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        if rc is not None:
            assert proc.returncode == rc, (
                f"torchx {' '.join(args)} exited {proc.returncode}, expected {rc}\n"
                f"stdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
            )
            assert "Traceback" not in proc.stderr, proc.stderr
        return proc

    def start(self, *args: str) -> str:
        """``torchx run -s lsf ARGS`` without waiting; the handle (cancelled at teardown)."""
        handle = self("run", "-s", "lsf", *args).stdout.strip().splitlines()[-1]
        assert handle.startswith("lsf://"), handle
        self.started.append(handle)
        return handle

    def wait_output(self, handle: str, text: str, timeout: float = 60) -> None:
        """Polls ``torchx log HANDLE`` until it shows ``text``: the program itself runs."""
        deadline = time.monotonic() + timeout
        while text not in self("log", handle, rc=None).stdout:
            assert time.monotonic() < deadline, f"{handle}: the replica did not print {text!r}"
            time.sleep(0.3)

    def status(self, handle: str, cwd: Path | None = None) -> dict[str, Any]:
        """``torchx status --json HANDLE``: the AppStatus as a dict."""
        out = json.loads(self("status", "--json", handle, cwd=cwd).stdout)
        assert out["kind"] == "AppStatus", out
        return dict(out["data"]["status"])

    def wait_state(
        self, handle: str, states: set[str], timeout: float = 120, cwd: Path | None = None
    ) -> dict[str, Any]:
        """Polls ``torchx status`` until the app is in one of ``states``; that status."""
        deadline = time.monotonic() + timeout
        while True:
            status = self.status(handle, cwd=cwd)
            if status["state"] in states:
                return status
            assert time.monotonic() < deadline, f"{handle} still {status['state']}: {status}"
            time.sleep(0.3)

    def cleanup(self) -> None:
        for handle in self.started:
            self("cancel", handle, rc=None)


def app_id(handle: str) -> str:
    """The app id (the LSF project of its jobs) of a ``lsf://SESSION/APP_ID`` handle."""
    return handle.rsplit("/", 1)[1]


def replicas(status: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Every replica of a status dict, by ``role/id``."""
    return {
        f"{r['role']}/{rep['id']}": rep for r in status.get("roles", []) for rep in r["replicas"]
    }
