"""A workspace run on aws_batch: built by torchx-docker, pushed to dev/docker's registry, run.

``torchx run -s aws_batch --workspace . -cfg image_repo=<registry>/torchx-aws-test``
from a directory holding a script: the dry run names the image and builds nothing; the
run builds it on the busybox test image, pushes it, and the Batch job definition names
exactly the pushed image, which the emulator's container runs.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from awsenv import busybox
from torchx_aws.batch.request import parse_app_id

TORCHX = [sys.executable, "-m", "torchx.cli.main"]


def torchx(work: Path, *args: str) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(
        [*TORCHX, *args],
        cwd=work,
        env={**os.environ, "HOME": str(work.parent)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, f"torchx {' '.join(args)}: exit {proc.returncode}\n{proc.stderr}"
    return proc


def test_a_workspace_is_built_pushed_and_run(tmp_path: Path, queue: str, batch: Any) -> None:
    registry = os.environ.get("TORCHX_DEV_DOCKER_REGISTRY", "")
    if not registry:
        pytest.fail('TORCHX_DEV_DOCKER_REGISTRY is not set: run `eval "$(dev/docker up)"` first')
    work = tmp_path / "proj"
    work.mkdir()
    (work / "main.sh").write_text('echo "workspace says $(cat data.txt)"\n')
    (work / "data.txt").write_text("hello from batch\n")
    repo = f"{registry}/torchx-aws-test"
    cmd = ["-s", "aws_batch", "--workspace", ".", "-cfg", f"queue={queue},image_repo={repo}"]
    app = ["utils.sh", "--image", busybox(), "sh", "main.sh"]
    dry = torchx(work, "run", "--dryrun", *cmd, *app).stdout
    request = json.loads(dry[dry.index('{\n  "region"') :])
    image = request["register_job_definition"]["containerProperties"]["image"]
    assert image.startswith(f"{repo}:"), image
    handle = torchx(work, "run", "--wait", *cmd, *app).stdout.strip().splitlines()[0]
    try:
        assert "SUCCEEDED" in torchx(work, "status", handle).stdout
        assert "workspace says hello from batch" in torchx(work, "log", f"{handle}/sh/0").stdout
        job_id = parse_app_id(handle.rsplit("/", 1)[1])[1]
        [job] = batch.describe_jobs(jobs=[job_id])["jobs"]
        [jd] = batch.describe_job_definitions(jobDefinitions=[job["jobDefinition"]])[
            "jobDefinitions"
        ]
        assert jd["containerProperties"]["image"] == image  # exactly what was pushed
        tag = image.rsplit(":", 1)[1]
        with urllib.request.urlopen(
            f"http://{registry}/v2/torchx-aws-test/tags/list", timeout=10
        ) as r:
            assert tag in json.loads(r.read())["tags"]
    finally:
        subprocess.run([*TORCHX, "delete", handle], capture_output=True, timeout=60)
