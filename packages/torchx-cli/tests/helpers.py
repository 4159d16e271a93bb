"""Running the real ``torchx`` console script as a subprocess, each test in its own world.

:class:`Cli` gives every test a private ``TORCHX_HOME`` (apps' records and logs), ``HOME``
(so no ``~/.torchxconfig`` of the user leaks in) and working directory, all under the
test's ``tmp_path``. Apps a test leaves running are cancelled when the test ends.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

TORCHX = str(Path(sys.executable).parent / "torchx")


def torchx(
    *args: str,
    cwd: str | Path | None = None,
    env: dict[str, str] | None = None,
    timeout: float = 120,
    check_rc: int | None = None,
) -> subprocess.CompletedProcess[str]:
    full_env = {**os.environ, **(env or {})}
    if "TORCHX_DEBUG" not in (env or {}):
        full_env.pop("TORCHX_DEBUG", None)
    proc = subprocess.run(
        [TORCHX, *args], cwd=cwd, env=full_env, capture_output=True, text=True, timeout=timeout
    )
    if check_rc is not None:
        assert proc.returncode == check_rc, (
            f"torchx {' '.join(args)} exited {proc.returncode}, expected {check_rc}\n"
            f"stdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
        )
    return proc


class Cli:
    """``cli("run", ..., rc=0)`` runs torchx in this test's private world and checks the exit."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.home = root / "home"
        self.work = root / "work"
        self.state = root / "state"
        for d in (self.home, self.work):
            d.mkdir()
        self.env = {"TORCHX_HOME": str(self.state), "HOME": str(self.home)}
        self.env.pop("TORCHXCONFIG", None)
        self.started: list[str] = []

    def __call__(
        self,
        *args: str,
        rc: int | None = 0,
        env: dict[str, str] | None = None,
        timeout: float = 60,
        cwd: Path | None = None,
    ) -> subprocess.CompletedProcess[str]:
        proc = torchx(
            *args,
            cwd=cwd or self.work,
            env={**self.env, **(env or {})},
            timeout=timeout,
            check_rc=rc,
        )
        if rc is not None and rc != 2:
            assert "Traceback" not in proc.stderr, proc.stderr
        if args and args[0] == "sweep":  # its supervisor and trials: cancelled at teardown
            self.started += [w for w in proc.stdout.split() if w.startswith("sweep://")][:1]
        return proc

    def start(self, *args: str) -> str:
        """``torchx run ARGS`` without waiting; returns the handle (cancelled at teardown)."""
        handle = self("run", *args).stdout.strip().splitlines()[-1]
        assert handle.startswith("local://"), handle
        self.started.append(handle)
        return handle

    def status_json(self, handle: str) -> dict[str, Any]:
        doc = json.loads(self("status", "--json", handle).stdout)
        assert doc["formatVersion"] == "torchx.cli/v1" and doc["kind"] == "AppStatus"
        status: dict[str, Any] = doc["data"]["status"]
        return status

    def cleanup(self) -> None:
        for handle in self.started:
            self("cancel", handle, rc=None)


def scheduler_plugin(root: Path, name: str, scheduler_source: str) -> dict[str, str]:
    """A distribution ``NAME-plugin 1.0`` installed under ``root`` whose scheduler ``NAME``
    is ``create_scheduler`` of ``scheduler_source``; returns the env putting it on
    PYTHONPATH (for :class:`Cli` calls)."""
    import textwrap

    d = root / f"{name}-plugin"
    package = f"{name}_plugin"
    info = d / f"{package}-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}-plugin\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(f"[torchx]\n{name} = {package}.plugin\n")
    pkg = d / package
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "plugin.py").write_text(
        textwrap.dedent(
            f"""
            from torchx.specs.hookspecs import hookimpl

            @hookimpl
            def torchx_schedulers():
                return {{"{name}": "{package}.scheduler:create_scheduler"}}
            """
        )
    )
    (pkg / "scheduler.py").write_text(scheduler_source)
    return {"PYTHONPATH": str(d)}
