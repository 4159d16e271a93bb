"""Shared test setup: fake LSF tools on PATH, and a private plugin cache.

The unit tests never need LSF (``tests/integration``, run by ``nox -s
integration_lsf``, uses the project's stand-in of ``dev/lsf``). :class:`FakeLsf` puts
``bsub``, ``bjobs`` and ``bkill`` on ``PATH``: each records its argv (and stdin) and
answers what the test scripted for it::

    def test_x(fake_lsf):
        fake_lsf.answer("bjobs", stdout="...", returncode=0)
        ...
        assert fake_lsf.calls("bjobs") == [["-noheader", ...]]
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

collect_ignore_glob = ["fixtures/*"]

TOOLS = ("bsub", "bjobs", "bkill")

_FAKE = r"""#!{python}
import json, os, sys, time
tool = os.path.basename(sys.argv[0])
state = os.environ["FAKE_LSF_DIR"]
stdin = "" if sys.stdin.isatty() else sys.stdin.read()
with open(os.path.join(state, "calls.jsonl"), "a") as f:
    f.write(json.dumps({{"tool": tool, "argv": sys.argv[1:], "stdin": stdin}}) + "\n")
answers = os.path.join(state, tool + ".json")
spec = {{}}
if os.path.exists(answers):
    with open(answers) as f:
        queue = json.load(f)
    spec = queue[0]
    if len(queue) > 1:
        with open(answers, "w") as f:
            json.dump(queue[1:], f)
time.sleep(spec.get("sleep", 0))
sys.stdout.write(spec.get("stdout", ""))
sys.stderr.write(spec.get("stderr", ""))
sys.exit(spec.get("returncode", 0))
"""


class FakeLsf:
    """Scripted LSF tools in a private directory put first on PATH."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.bin = root / "bin"
        self.bin.mkdir()
        for tool in TOOLS:
            path = self.bin / tool
            path.write_text(_FAKE.format(python=sys.executable))
            path.chmod(0o755)

    def answer(
        self,
        tool: str,
        stdout: str = "",
        stderr: str = "",
        returncode: int = 0,
        sleep: float = 0,
        *,
        then: list[dict[str, object]] | None = None,
    ) -> None:
        """What ``tool`` answers next (and, with ``then``, the answers after that)."""
        spec = {"stdout": stdout, "stderr": stderr, "returncode": returncode, "sleep": sleep}
        (self.root / f"{tool}.json").write_text(json.dumps([spec, *(then or [])]))

    def all_calls(self) -> list[dict[str, object]]:
        path = self.root / "calls.jsonl"
        if not path.exists():
            return []
        return [json.loads(line) for line in path.read_text().splitlines()]

    def calls(self, tool: str) -> list[list[str]]:
        """The argv (without the tool) of each call of ``tool``, in order."""
        return [c["argv"] for c in self.all_calls() if c["tool"] == tool]  # type: ignore[misc]

    def stdin(self, tool: str) -> list[str]:
        return [c["stdin"] for c in self.all_calls() if c["tool"] == tool]  # type: ignore[misc]


@pytest.fixture
def fake_lsf(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> FakeLsf:
    root = tmp_path / "fake-lsf"
    root.mkdir()
    fake = FakeLsf(root)
    monkeypatch.setenv("FAKE_LSF_DIR", str(root))
    monkeypatch.setenv("PATH", f"{fake.bin}{os.pathsep}{os.environ.get('PATH', '')}")
    monkeypatch.delenv("TORCHX_LSF_TIMEOUT", raising=False)
    return fake


@pytest.fixture(autouse=True, scope="session")
def _private_cache_dir() -> Iterator[str]:
    with tempfile.TemporaryDirectory(prefix="torchx-lsf-test-cache-") as d:
        old = os.environ.get("XDG_CACHE_HOME")
        os.environ["XDG_CACHE_HOME"] = d
        yield d
        if old is None:
            os.environ.pop("XDG_CACHE_HOME", None)
        else:
            os.environ["XDG_CACHE_HOME"] = old
