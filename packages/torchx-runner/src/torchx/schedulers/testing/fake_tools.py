"""Scripted stand-ins of a batch system's command-line tools, for a plugin's unit tests.

A scheduler driven through client tools (``sbatch``/``squeue``, ``bsub``/``bjobs``, ...)
is unit-tested without its backend by putting fakes of those tools first on ``PATH``.
:class:`FakeTools` writes one executable per tool: each call appends its argv, stdin
and the environment variables asked for to a log, then answers what the test scripted
for that tool (stdout, stderr, exit status, a delay), the scripted answers used in
turn (the last one again once they run out)::

    @pytest.fixture
    def fake_acme(tmp_path, monkeypatch):
        fake = FakeTools(tmp_path / "fake-acme", ("asub", "astat"))
        fake.activate(monkeypatch)
        return fake

    def test_status(fake_acme):
        fake_acme.answer("astat", stdout="12 RUNNING\\n")
        ...
        assert fake_acme.calls("astat") == [["-j", "12"]]

Integration tests use the real backend (or the project's stand-in of it), never these.
The module also holds :func:`private_env_dir`, for the session fixtures that keep a
test run's plugin cache or state out of the user's home.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

__all__ = ["ENV", "FakeTools", "private_env_dir"]

#: The environment variable that tells the fakes where their answers and log are.
ENV = "TORCHX_FAKE_TOOLS_DIR"

_FAKE = r"""#!{python}
import json, os, sys, time
tool = os.path.basename(sys.argv[0])
state = os.environ[{env!r}]
stdin = "" if sys.stdin.isatty() else sys.stdin.read()
record = {{"tool": tool, "argv": sys.argv[1:], "stdin": stdin,
          "env": {{k: os.environ.get(k) for k in {record_env!r}}}}}
with open(os.path.join(state, "calls.jsonl"), "a") as f:
    f.write(json.dumps(record) + "\n")
answers = os.path.join(state, tool + ".json")
spec = {{}}
if os.path.exists(answers):
    with open(answers) as f:
        queue = json.load(f)
    # the first answer of the queue is used (and dropped, unless it is the last)
    spec = queue[0]
    if len(queue) > 1:
        with open(answers, "w") as f:
            json.dump(queue[1:], f)
time.sleep(spec.get("sleep", 0))
sys.stdout.write(spec.get("stdout", ""))
sys.stderr.write(spec.get("stderr", ""))
sys.exit(spec.get("returncode", 0))
"""


class FakeTools:
    """Scripted ``tools`` in ``root/bin``; their answers and call log in ``root``.

    Args:
        root: a directory of the test's own (made if missing)
        tools: the tool names (``("bsub", "bjobs", "bkill")``)
        record_env: environment variables each call records (``call["env"]``), to
            check what the scheduler sets for its tools
    """

    def __init__(self, root: Path, tools: Sequence[str], record_env: Sequence[str] = ()) -> None:
        self.root = root
        self.bin = root / "bin"
        self.bin.mkdir(parents=True)
        script = _FAKE.format(python=sys.executable, env=ENV, record_env=tuple(record_env))
        for tool in tools:
            path = self.bin / tool
            path.write_text(script)
            path.chmod(0o755)

    def activate(self, monkeypatch: Any) -> None:
        """Puts the fakes first on ``PATH`` (through pytest's ``monkeypatch``)."""
        monkeypatch.setenv(ENV, str(self.root))
        monkeypatch.setenv("PATH", f"{self.bin}{os.pathsep}{os.environ.get('PATH', '')}")

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

    def all_calls(self) -> list[dict[str, Any]]:
        """Every call so far, in order: ``{"tool", "argv", "stdin", "env"}``."""
        path = self.root / "calls.jsonl"
        if not path.exists():
            return []
        return [json.loads(line) for line in path.read_text().splitlines()]

    def calls(self, tool: str) -> list[list[str]]:
        """The argv (without the tool) of each call of ``tool``, in order."""
        return [c["argv"] for c in self.all_calls() if c["tool"] == tool]

    def stdin(self, tool: str) -> list[str]:
        """What each call of ``tool`` read on stdin, in order."""
        return [c["stdin"] for c in self.all_calls() if c["tool"] == tool]


@contextmanager
def private_env_dir(var: str, prefix: str) -> Iterator[str]:
    """A fresh temporary directory named by ``$var`` while the block runs; ``var``
    restored (or unset) after. For an autouse session fixture::

        @pytest.fixture(autouse=True, scope="session")
        def _private_cache_dir():
            with private_env_dir("XDG_CACHE_HOME", prefix="acme-test-cache-") as d:
                yield d
    """
    with tempfile.TemporaryDirectory(prefix=prefix) as d:
        old = os.environ.get(var)
        os.environ[var] = d
        try:
            yield d
        finally:
            if old is None:
                os.environ.pop(var, None)
            else:
                os.environ[var] = old
