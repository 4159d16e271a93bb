"""dev/README.md's example of the LSF stand-in runs as shown, line by line, in bash.

The lines between ``eval "$(dev/lsf up)"`` and ``dev/lsf down`` of its ``dev/lsf``
section are read from the doc itself (the session has already run ``up``).
"""

from __future__ import annotations

import os
import re
import subprocess
import time
from pathlib import Path

DOC = (
    Path(os.environ.get("TORCHX_REPO_ROOT", Path(__file__).resolve().parents[4]))
    / "dev"
    / "README.md"
)


def _example() -> list[str]:
    section = DOC.read_text().split("## dev/lsf", 1)[1]
    [block] = re.findall(r"```sh\n(.*?)```", section, flags=re.S)[:1]
    lines = [line.split("  #", 1)[0].strip() for line in block.splitlines()]
    return [x for x in lines if x and not x.startswith(("eval ", "dev/lsf"))]


def test_the_stand_ins_example_submits_runs_and_lists(tmp_path: Path) -> None:
    submit, query = _example()
    assert submit.startswith("bsub ") and query.startswith("bjobs ")
    out = subprocess.run(
        ["bash", "-c", submit], cwd=tmp_path, capture_output=True, text=True, check=True
    ).stdout
    job = re.fullmatch(r"Job <(\d+)> is submitted to default queue <normal>\.\n", out)
    assert job, out
    deadline = time.monotonic() + 30
    while True:
        rows = subprocess.run(
            ["bash", "-c", query], cwd=tmp_path, capture_output=True, text=True, check=True
        ).stdout.splitlines()
        mine = [r for r in rows if r.split("|")[0] == job.group(1)]
        if mine and mine[0].split("|")[1] == "DONE":
            break
        assert time.monotonic() < deadline, rows
        time.sleep(0.2)
    assert mine[0].split("|")[4] == "hello"
    said = (tmp_path / "hello.out").read_text()
    assert said.startswith(f"hello from {job.group(1)} on ")
