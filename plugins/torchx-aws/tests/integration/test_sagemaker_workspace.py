"""A workspace run on aws_sagemaker: built by torchx-docker, pushed to dev/docker's registry.

``torchx run -s aws_sagemaker --workspace . -cfg image_repo=<registry>/...`` from a
directory holding a script: the dry run names the image and builds nothing; the run
builds it on the busybox test image, pushes it, and the training job names exactly the
pushed image. (What a training job runs is checked in test_sagemaker.py.)
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.request
import uuid
from pathlib import Path

import pytest
from awsenv import busybox

TORCHX = [sys.executable, "-m", "torchx.cli.main"]


def torchx(work: Path, *args: str) -> str:
    proc = subprocess.run(
        [*TORCHX, *args],
        cwd=work,
        env={**os.environ, "HOME": str(work.parent)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, f"torchx {' '.join(args)}: exit {proc.returncode}\n{proc.stderr}"
    return proc.stdout


def test_a_workspace_is_built_pushed_and_named_by_the_job(tmp_path: Path, endpoint: str) -> None:
    import boto3

    registry = os.environ.get("TORCHX_DEV_DOCKER_REGISTRY", "")
    if not registry:
        pytest.fail('TORCHX_DEV_DOCKER_REGISTRY is not set: run `eval "$(dev/docker up)"` first')
    iam = boto3.client("iam")
    role = f"torchx-sm-ws-{uuid.uuid4().hex[:8]}"
    iam.create_role(RoleName=role, AssumeRolePolicyDocument="{}")
    work = tmp_path / "proj"
    work.mkdir()
    (work / "main.sh").write_text('echo "workspace says $(cat data.txt)"\n')
    (work / "data.txt").write_text("hello from sagemaker\n")
    repo = f"{registry}/torchx-aws-sm-test"
    cfg = f"role={role},image_repo={repo},instance_type=ml.m5.large"
    cmd = ["-s", "aws_sagemaker", "--workspace", ".", "-cfg", cfg]
    app = ["utils.sh", "--image", busybox(), "sh", "main.sh"]
    try:
        dry = torchx(work, "run", "--dryrun", *cmd, *app)
        request = json.loads(dry[dry.index('{\n  "formatVersion"') :])
        image = request["CreateTrainingJob"]["AlgorithmSpecification"]["TrainingImage"]
        assert image.startswith(f"{repo}:"), image
        handle = torchx(work, "run", *cmd, *app).strip().splitlines()[-1]
        assert handle.startswith("aws_sagemaker://"), handle
        job = handle.rsplit("/", 1)[1]
        stored = boto3.client("sagemaker").describe_training_job(TrainingJobName=job)
        assert stored["AlgorithmSpecification"]["TrainingImage"] == image  # what was pushed
        assert stored["AlgorithmSpecification"]["ContainerEntrypoint"] == ["sh"]
        tag = image.rsplit(":", 1)[1]
        with urllib.request.urlopen(
            f"http://{registry}/v2/torchx-aws-sm-test/tags/list", timeout=10
        ) as r:
            assert tag in json.loads(r.read())["tags"]
    finally:
        iam.delete_role(RoleName=role)
