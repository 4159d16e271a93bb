"""The README's "Coming from upstream TorchX" examples run as shown (docs as a test).

The section lists each deliberate difference from upstream TorchX with what to write
instead; its Python block is that advice as a script, run here in a fresh process
against the installed torchx-specs and torchx-runner, on the real local scheduler.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

README = Path(__file__).resolve().parents[2] / "README.md"
SECTION = "## Coming from upstream TorchX"


def _section() -> str:
    text = README.read_text()
    start = text.index(SECTION)
    end = text.find("\n## ", start + len(SECTION))
    return text[start : end if end != -1 else len(text)]


def test_the_section_names_each_difference_with_what_to_write_instead() -> None:
    section = _section()
    for needle in (
        "attrs.evolve",  # attrs classes, not dataclasses
        "info.app",  # a dry run never changes the caller's AppDef
        "outlive",  # local apps outlive the launcher
        "Scheduler._validate(app, scheduler, cfg)",  # the newest signature
    ):
        assert needle in section, needle


def test_the_sections_examples_run(tmp_path: Path) -> None:
    blocks = re.findall(r"```python\n(.*?)```", _section(), flags=re.S)
    assert len(blocks) == 1
    env = {**os.environ, "TORCHX_HOME": str(tmp_path / "home"), "HOME": str(tmp_path)}
    env.pop("TORCHXCONFIG", None)
    out = subprocess.run(
        [sys.executable, "-c", blocks[0]],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=tmp_path,
    )
    assert out.returncode == 0, out.stderr
