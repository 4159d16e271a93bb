"""The README's Python example runs as shown (against scripted Slurm tools)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from torchx_slurm.parse import SEP

from torchx.schedulers.testing.fake_tools import FakeTools

README = Path(__file__).resolve().parent.parent / "README.md"

pytestmark = pytest.mark.skipif(not README.exists(), reason="needs the source tree's README")


def test_the_python_example_submits_and_waits(fake_slurm: FakeTools, tmp_path: Path) -> None:
    [code] = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)
    fake_slurm.answer("sbatch", stdout="1234\n")
    fake_slurm.answer(
        "squeue",
        stdout=SEP.join(["1234+0", "COMPLETED", "me", "n1", "None", "echo-x:echo:0", str(tmp_path)])
        + "\n",
    )
    env = {**os.environ, "HOME": str(tmp_path), "TORCHX_HOME": str(tmp_path / "state")}
    env.pop("TORCHXCONFIG", None)
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "SUCCEEDED"
    [script] = fake_slurm.stdin("sbatch")
    assert "#SBATCH --partition=debug" in script
    assert "#SBATCH hetjob" in script  # two replicas, two groups
