"""Running the real ``torchx`` console script as a subprocess."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

TORCHX = str(Path(sys.executable).parent / "torchx")


def torchx(
    *args: str,
    cwd: str | Path | None = None,
    env: dict[str, str] | None = None,
    timeout: float = 120,
    check_rc: int | None = None,
) -> subprocess.CompletedProcess[str]:
    full_env = {**os.environ, **(env or {})}
    full_env.pop("TORCHX_DEBUG", None) if "TORCHX_DEBUG" not in (env or {}) else None
    proc = subprocess.run(
        [TORCHX, *args], cwd=cwd, env=full_env, capture_output=True, text=True, timeout=timeout
    )
    if check_rc is not None:
        assert proc.returncode == check_rc, (
            f"torchx {' '.join(args)} exited {proc.returncode}, expected {check_rc}\n"
            f"stdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
        )
    return proc
