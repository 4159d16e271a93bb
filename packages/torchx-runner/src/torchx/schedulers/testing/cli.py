"""The real ``torchx`` command as a subprocess, each test in a private world of its own.

A plugin's integration tests drive its scheduler the way a user does: through the
installed ``torchx`` command. :class:`TorchxCli` gives each test a private ``HOME`` (no
``~/.torchxconfig`` of the user's leaks in), ``TORCHX_HOME`` and working directory
(which a batch plugin's job directory defaults to), checks every exit status and that
no traceback was printed, and cancels (or deletes, ``ending="delete"``) what the test
started when it ends::

    @pytest.fixture
    def cli(tmp_path):
        c = TorchxCli(tmp_path, scheduler="acme")
        yield c
        c.cleanup()

    def test_echo(cli):
        handle = cli.start("utils.echo", "--msg", "hi")
        assert cli.wait_state(handle, {"SUCCEEDED", "FAILED"})["state"] == "SUCCEEDED"
        assert "hi" in cli("log", handle).stdout
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Any, Literal

__all__ = ["TORCHX", "TorchxCli", "app_id", "replicas"]

#: The ``torchx`` command installed beside the running interpreter (the test venv's).
TORCHX = str(Path(sys.executable).parent / "torchx")


class TorchxCli:
    """``cli("run", ..., rc=0)`` runs ``torchx`` in this test's world and checks its exit.

    Args:
        root: a directory of the test's own (``tmp_path``): ``home``, ``work`` and
            ``state`` are made in it
        scheduler: what :meth:`start` runs on (``torchx run -s SCHEDULER``)
        timeout: the default timeout of each command, in seconds
        command: the ``torchx`` executable (default :data:`TORCHX`)
        ending: what :meth:`cleanup` does to each app :meth:`start` started: ``cancel``,
            or ``delete`` where the scheduler keeps a cancelled app's leftovers (docker's
            stopped containers and network) until it is deleted
    """

    def __init__(
        self,
        root: Path,
        scheduler: str,
        *,
        timeout: float = 60,
        command: str = TORCHX,
        ending: Literal["cancel", "delete"] = "cancel",
    ) -> None:
        self.command = command
        self.ending = ending
        self.scheduler = scheduler
        self.timeout = timeout
        self.home = root / "home"
        self.work = root / "work"
        for d in (self.home, self.work):
            d.mkdir(parents=True)
        self.env = {**os.environ, "HOME": str(self.home), "TORCHX_HOME": str(root / "state")}
        for name in ("TORCHXCONFIG", "TORCHX_DEBUG"):
            self.env.pop(name, None)
        #: the handles :meth:`start` gave, cancelled (or deleted) by :meth:`cleanup`
        self.started: list[str] = []

    def __call__(
        self,
        *args: str,
        rc: int | None = 0,
        timeout: float | None = None,
        cwd: Path | None = None,
        env: Mapping[str, str] | None = None,
    ) -> subprocess.CompletedProcess[str]:
        """Runs ``torchx ARGS`` (in ``work`` unless ``cwd``); checks the exit status is
        ``rc`` (None: any) and that nothing printed a traceback."""
        proc = subprocess.run(
            [self.command, *args],
            cwd=cwd or self.work,
            env={**self.env, **(env or {})},
            capture_output=True,
            text=True,
            timeout=self.timeout if timeout is None else timeout,
        )
        if rc is not None:
            assert proc.returncode == rc, (
                f"torchx {' '.join(args)} exited {proc.returncode}, expected {rc}\n"
                f"stdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
            )
            assert "Traceback" not in proc.stderr, proc.stderr
        return proc

    def start(self, *args: str) -> str:
        """``torchx run -s SCHEDULER ARGS`` without waiting; the handle (cancelled at the end)."""
        return self.run(*args)[0]

    def run(self, *args: str) -> tuple[str, subprocess.CompletedProcess[str]]:
        """``torchx run -s SCHEDULER ARGS``, which may wait (``--wait``, ``--log``): the
        handle (cancelled at the end) and the finished command, to read what it printed.

        The handle is the first line: ``run`` prints it before any log line or status."""
        proc = self("run", "-s", self.scheduler, *args)
        handle = proc.stdout.splitlines()[0].strip() if proc.stdout else ""
        assert handle.startswith(f"{self.scheduler}://"), proc.stdout
        self.started.append(handle)
        return handle, proc

    def status(self, handle: str, cwd: Path | None = None) -> dict[str, Any]:
        """``torchx status --json HANDLE``: the AppStatus as a dict."""
        out = json.loads(self("status", "--json", handle, cwd=cwd).stdout)
        assert out["kind"] == "AppStatus", out
        return dict(out["data"]["status"])

    def wait_state(
        self,
        handle: str,
        states: Collection[str],
        timeout: float = 120,
        cwd: Path | None = None,
    ) -> dict[str, Any]:
        """Polls ``torchx status`` until the app is in one of ``states``; that status."""
        deadline = time.monotonic() + timeout
        while True:
            status = self.status(handle, cwd=cwd)
            if status["state"] in states:
                return status
            assert time.monotonic() < deadline, f"{handle} still {status['state']}: {status}"
            time.sleep(0.3)

    def wait_output(self, handle: str, text: str, timeout: float = 60) -> None:
        """Polls ``torchx log HANDLE`` until it shows ``text``: the program itself runs
        (a RUNNING app may still be starting it)."""
        deadline = time.monotonic() + timeout
        while text not in self("log", handle, rc=None).stdout:
            assert time.monotonic() < deadline, f"{handle}: the replica did not print {text!r}"
            time.sleep(0.3)

    def cleanup(self) -> None:
        """Cancels (or deletes: ``ending``) every app :meth:`start` started, whatever
        state it is in; they are then forgotten, so a second call does nothing."""
        for handle in self.started:
            self(self.ending, handle, rc=None)
        self.started.clear()


def app_id(handle: str) -> str:
    """The app id of a ``SCHEDULER://SESSION/APP_ID`` handle.

    >>> app_id("lsf://torchx/trainer-x7k2p9q1z0")
    'trainer-x7k2p9q1z0'
    """
    return handle.rsplit("/", 1)[1]


def replicas(status: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """Every replica of a :meth:`TorchxCli.status` dict, by ``role/id``.

    >>> replicas({"roles": [{"role": "w", "replicas": [{"id": 0, "state": "RUNNING"}]}]})
    {'w/0': {'id': 0, 'state': 'RUNNING'}}
    """
    return {
        f"{r['role']}/{rep['id']}": rep for r in status.get("roles", []) for rep in r["replicas"]
    }
