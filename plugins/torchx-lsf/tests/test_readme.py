"""The README's Python example runs as shown (against scripted LSF tools)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from torchx.schedulers.testing.fake_tools import FakeTools

README = Path(__file__).resolve().parent.parent / "README.md"

pytestmark = pytest.mark.skipif(not README.exists(), reason="needs the source tree's README")

# answers each replica of the app bjobs is asked about (-P APP) as DONE
_BJOBS = r"""#!/bin/sh
while [ "$#" -gt 0 ]; do
  if [ "$1" = -P ]; then app=$2; fi
  shift
done
for k in 0 1; do printf '%s|DONE|%s|-|hostA|%s-echo-%s|Nov 25 06:40|Nov 25 06:41|-\n' "$((100 + k))" "$app" "$app" "$k"; done
"""


def test_the_python_example_submits_and_waits(fake_lsf: FakeTools, tmp_path: Path) -> None:
    [code] = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)
    fake_lsf.answer(
        "bsub",
        stdout="Job <100> is submitted to default queue <normal>.\n",
        then=[{"stdout": "Job <101> is submitted to queue <normal>.\n"}],
    )
    (fake_lsf.bin / "bjobs").write_text(_BJOBS)
    env = {**os.environ, "HOME": str(tmp_path), "TORCHX_HOME": str(tmp_path / "state")}
    env.pop("TORCHXCONFIG", None)
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "SUCCEEDED"
    calls = fake_lsf.calls("bsub")
    assert len(calls) == 2 and all(c[c.index("-q") + 1] == "normal" for c in calls)
