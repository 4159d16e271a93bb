"""Each job gets its own rendezvous port on rank 0's node (TORCHX_RDZV_PORT), for dist.ddp."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from torchx_slurm.scheduler import create_scheduler

from torchx.components.dist import RDZV_PORT_ENV, ddp


def _port_lines(script: str) -> str:
    lines = script.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("_port=$("))
    end = next(i for i, line in enumerate(lines) if line.startswith(f"export {RDZV_PORT_ENV}="))
    return "\n".join(lines[start : end + 1])


def _port(script: str, path: str, job: int) -> int:
    code = f"_job={job}\n{_port_lines(script)}\necho ${RDZV_PORT_ENV}\n"
    out = subprocess.run(
        ["/bin/bash", "-c", code], env={"PATH": path}, capture_output=True, text=True, check=True
    )
    return int(out.stdout)


def test_the_script_gives_each_job_a_free_port_of_its_own() -> None:
    app = ddp(script="train.py", j="2x1", image="/nonexistent")
    script = create_scheduler("me").submit_dryrun(app, {"job_dir": "/jobs"}).request.script
    with_python = str(Path(sys.executable).parent)
    ports = {_port(script, with_python, job=7) for _ in range(5)}
    # free ports below the range of outgoing connections' ports, picked at random
    assert all(20000 <= p < 32000 for p in ports) and len(ports) > 1, ports
    # without python on the node: a port of the job id's, still one per job
    assert _port(script, "/nonexistent", job=123) == 20123
    assert _port(script, "/nonexistent", job=124) == 20124
