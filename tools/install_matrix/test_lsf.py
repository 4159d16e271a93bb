"""Row: torchx-runner + torchx-lsf, the minimal LSF install. Submit from Python, no CLI.

No LSF here: the environment's ``bin`` (first on its PATH) gets stand-ins for ``bsub``
(records the job file, answers a job id) and ``bjobs`` (answers that job as DONE); the
project's LSF stand-in is exercised by ``nox -s integration_lsf``.
"""

from __future__ import annotations

import json

import pytest
from conftest import Env, MakeEnv

ALLOWED = {
    "torchx-specs",
    "torchx-runner",
    "torchx-lsf",
    "attrs",
    "cattrs",
    "pluggy",
    "typing-extensions",
}

_BSUB = """#!/bin/sh
echo "$@" > "$HOME/bsub.argv"
cat > "$HOME/job.sh"
echo "Job <4242> is submitted to default queue <normal>."
"""

# bjobs -P APP -o "jobid stat proj_name exit_code exec_host job_name start_time finish_time
# output_dir delimiter='|'"
_BJOBS = r"""#!/bin/sh
app=$(cat "$HOME/app_id" 2>/dev/null)
printf '4242|DONE|%s|-|hostA|%s-echo-0|Nov 25 06:40|Nov 25 06:41|-\n' "$app" "$app"
"""


@pytest.fixture(scope="module")
def env(make_env: MakeEnv) -> Env:
    env = make_env("lsf", "torchx-runner", "torchx-lsf")
    for name, text in (("bsub", _BSUB), ("bjobs", _BJOBS)):
        path = env.bin / name
        path.write_text(text)
        path.chmod(0o755)
    return env


def test_only_runner_lsf_and_their_dependencies_are_installed(env: Env) -> None:
    installed = env.installed()
    assert {"torchx-runner", "torchx-specs", "torchx-lsf"} <= installed <= ALLOWED, sorted(
        installed
    )
    assert not (env.bin / "torchx").exists()


def test_a_runner_submits_to_lsf_and_follows_the_app(env: Env) -> None:
    code = """
import json, os
from torchx.runner import get_runner
args = ["--msg", "hello; rm -rf ~", "--image", "/tmp"]
with get_runner() as runner:
    assert "lsf" in runner.scheduler_backends()
    info = runner.dryrun_component("utils.echo", args, "lsf", cfg={"lsf_queue": "normal"})
    handle = runner.run_component("utils.echo", args, "lsf", cfg={"lsf_queue": "normal"})
    app_id = handle.rsplit("/", 1)[1]
    with open(os.path.join(os.environ["HOME"], "app_id"), "w") as f:
        f.write(app_id)
    status = runner.status(handle)
print(json.dumps({"dryrun": str(info), "handle": handle, "state": str(status.state)}))
"""
    proc = env.python_code(code, timeout=90)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["handle"].startswith("lsf://torchx/echo-")
    assert result["state"] == "SUCCEEDED"
    assert "-q normal" in result["dryrun"]
    home = env.work / "home"
    argv = (home / "bsub.argv").read_text()
    assert "-q normal" in argv and "-P echo-" in argv
    assert (home / "job.sh").read_text().startswith("#!/bin/sh\n# torchx-lsf job file v1\n")
