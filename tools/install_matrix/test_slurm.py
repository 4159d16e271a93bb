"""Row: torchx-runner + torchx-slurm, the minimal HPC install. Submit from Python, no CLI.

No cluster here: the environment's ``bin`` (first on its PATH) gets stand-ins for
``sbatch`` (records the script, answers a job id) and ``squeue`` (answers that job as
COMPLETED); the real cluster is exercised by ``nox -s integration_slurm``.
"""

from __future__ import annotations

import json

import pytest
from conftest import Env, MakeEnv

ALLOWED = {
    "torchx-specs",
    "torchx-runner",
    "torchx-slurm",
    "attrs",
    "cattrs",
    "pluggy",
    "typing-extensions",
}

_SBATCH = """#!/bin/sh
cat > "$HOME/submitted.sh"
echo 4242
"""

# squeue -o "%i<US>%T<US>%u<US>%N<US>%r<US>%j<US>%Z": the job, completed, in $HOME
_SQUEUE = r"""#!/bin/sh
printf '4242\037COMPLETED\037me\037n1\037None\037hello-x:echo:0\037%s\n' "$HOME"
"""


@pytest.fixture(scope="module")
def env(make_env: MakeEnv) -> Env:
    env = make_env("slurm", "torchx-runner", "torchx-slurm")
    for name, text in (("sbatch", _SBATCH), ("squeue", _SQUEUE)):
        path = env.bin / name
        path.write_text(text)
        path.chmod(0o755)
    return env


def test_only_runner_slurm_and_their_dependencies_are_installed(env: Env) -> None:
    installed = env.installed()
    assert {"torchx-runner", "torchx-specs", "torchx-slurm"} <= installed <= ALLOWED, sorted(
        installed
    )
    assert not (env.bin / "torchx").exists()


def test_a_runner_submits_to_slurm_and_follows_the_job(env: Env) -> None:
    code = """
import json
from torchx.runner import get_runner
with get_runner() as runner:
    assert "slurm" in runner.scheduler_backends()
    info = runner.dryrun_component(
        "utils.echo", ["--msg", "hello; rm -rf ~"], "slurm", cfg={"partition": "debug"}
    )
    handle = runner.run_component(
        "utils.echo", ["--msg", "hello; rm -rf ~"], "slurm", cfg={"partition": "debug"}
    )
    status = runner.status(handle)
print(json.dumps({"dryrun": str(info), "handle": handle, "state": str(status.state)}))
"""
    proc = env.python_code(code, timeout=90)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["handle"] == "slurm://torchx/4242"
    assert result["state"] == "SUCCEEDED"
    assert "#SBATCH --partition=debug" in result["dryrun"]
    submitted = (env.work / "home" / "submitted.sh").read_text()
    assert "#SBATCH --partition=debug" in submitted
    assert "'hello; rm -rf ~'" in submitted


def test_a_missing_slurm_conf_is_one_line(env: Env) -> None:
    code = """
import os, time
os.environ["SLURM_CONF"] = "/nonexistent/slurm.conf"
from torchx.runner import get_runner
start = time.monotonic()
try:
    with get_runner() as runner:
        runner.status("slurm://torchx/4242")
except Exception as e:
    print(type(e).__name__, str(e), round(time.monotonic() - start))
"""
    proc = env.python_code(code, timeout=60)
    assert proc.returncode == 0, proc.stderr
    [line] = proc.stdout.strip().splitlines()
    assert "SLURM_CONF=/nonexistent/slurm.conf does not exist" in line
    assert line.endswith(" 0")
