"""aws_sagemaker against an AWS API emulator (moto) on loopback: real boto3, real HTTP.

Collected only when TORCHX_AWS_INTEGRATION=1 (the ``integration_aws`` nox session sets it
after ``dev/aws up``), with ``AWS_ENDPOINT_URL`` naming the emulator. The emulator
accepts, stores, describes, tags and searches training jobs, but runs none: every job is
``Completed`` at once, and ``StopTrainingJob`` is not implemented (HTTP 500). What AWS
does beyond that is checked at the request level (tests/test_sagemaker_scheduler.py).
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator

import pytest

if os.environ.get("TORCHX_AWS_INTEGRATION") != "1":
    collect_ignore_glob = ["test_*.py"]

REGION = "us-east-1"


@pytest.fixture(scope="session")
def endpoint() -> str:
    url = os.environ.get("AWS_ENDPOINT_URL")
    if not url:
        pytest.fail('AWS_ENDPOINT_URL is not set: run `eval "$(dev/aws up)"` first')
    return url


@pytest.fixture
def aws_env(endpoint: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """The environment a user of the emulator has: endpoint, dummy credentials, region."""
    monkeypatch.setenv("AWS_ENDPOINT_URL", endpoint)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", os.environ.get("AWS_ACCESS_KEY_ID", "testing"))
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", os.environ.get("AWS_SECRET_ACCESS_KEY", "testing"))
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    return endpoint


@pytest.fixture
def iam_role(aws_env: str) -> Iterator[str]:
    """An IAM role of the emulator's account (its name; its ARN is looked up on submit)."""
    import boto3

    iam = boto3.client("iam", region_name=REGION)
    name = f"torchx-sm-{uuid.uuid4().hex[:8]}"
    iam.create_role(RoleName=name, AssumeRolePolicyDocument="{}")
    yield name
    iam.delete_role(RoleName=name)
