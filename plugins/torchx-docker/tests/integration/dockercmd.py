"""Helpers of the integration tests: the test image, and the real ``torchx`` command."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any


def busybox() -> str:
    return os.environ.get("TORCHX_DEV_DOCKER_BUSYBOX_IMAGE", "torchx-dev/busybox:1")


TORCHX = str(Path(sys.executable).parent / "torchx")


class Cli:
    """The real ``torchx`` command in a private HOME; apps it started are deleted at the end."""

    def __init__(self, root: Path) -> None:
        self.home = root / "home"
        self.home.mkdir()
        self.env = {**os.environ, "HOME": str(self.home), "TORCHX_HOME": str(root / "state")}
        self.env.pop("TORCHXCONFIG", None)
        self.handles: list[str] = []

    def __call__(self, *args: str, rc: int | None = 0, timeout: float = 120) -> Any:
        proc = subprocess.run(
            [TORCHX, *args],
            cwd=self.home,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        if rc is not None:
            assert proc.returncode == rc, (args, proc.returncode, proc.stdout, proc.stderr)
        for line in proc.stdout.splitlines():
            if line.startswith("docker://") and line not in self.handles:
                self.handles.append(line.strip())
        return proc

    def cleanup(self) -> None:
        for handle in self.handles:
            self("delete", handle, rc=None)
