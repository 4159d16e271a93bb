"""Integration tests against an AWS API emulator that runs Batch jobs as containers.

Collected only when TORCHX_AWS_INTEGRATION=1 (``nox -s integration_aws`` sets it after
``dev/docker up`` and ``dev/aws up``), so the plugin's unit session never runs them.
Every test talks to the endpoint ``AWS_ENDPOINT_URL`` names with real boto3, and the
jobs run as containers on the Docker engine moto was started with (the busybox image
of ``TORCHX_DEV_DOCKER_BUSYBOX_IMAGE``).

The Batch prerequisites are made here, once per session, as a user would make them:
an IAM role and instance profile, a VPC with a subnet and a security group, a managed
compute environment and a job queue of its own (``queue`` fixture); they are removed
at the end. ``starved_queue`` is one whose compute environment has no capacity.
"""

from __future__ import annotations

import os
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

if os.environ.get("TORCHX_AWS_INTEGRATION") != "1":
    collect_ignore_glob = ["test_*.py"]
else:
    sys.path.append(str(Path(__file__).parent))


@pytest.fixture(scope="session")
def endpoint() -> str:
    url = os.environ.get("AWS_ENDPOINT_URL")
    if not url:
        pytest.fail('AWS_ENDPOINT_URL is not set: run `eval "$(dev/aws up)"` first')
    import urllib.request

    try:
        urllib.request.urlopen(url + "/moto-api/data.json", timeout=5).read()
    except OSError as e:
        pytest.fail(f'no AWS emulator at {url} ({e}): run `eval "$(dev/aws up)"` first')
    return url


@pytest.fixture(scope="session")
def batch(endpoint: str) -> Any:
    import boto3

    return boto3.client("batch")


@pytest.fixture(scope="session")
def logs(endpoint: str) -> Any:
    import boto3

    return boto3.client("logs")


def _queue(batch: Any, tags: dict[str, str] | None = None) -> Iterator[str]:
    """A job queue on a compute environment of its own (tagged ``tags``), removed after."""
    import boto3

    tag = uuid.uuid4().hex[:8]
    iam, ec2 = boto3.client("iam"), boto3.client("ec2")
    role = iam.create_role(RoleName=f"torchx-it-{tag}", AssumeRolePolicyDocument="{}")["Role"]
    profile = iam.create_instance_profile(InstanceProfileName=f"torchx-it-{tag}")
    vpc = ec2.create_vpc(CidrBlock="10.0.0.0/16")["Vpc"]["VpcId"]
    subnet = ec2.create_subnet(VpcId=vpc, CidrBlock="10.0.0.0/24")["Subnet"]["SubnetId"]
    group = ec2.create_security_group(GroupName=f"torchx-it-{tag}", Description="it", VpcId=vpc)
    env = batch.create_compute_environment(
        computeEnvironmentName=f"torchx-it-{tag}",
        type="MANAGED",
        state="ENABLED",
        computeResources={
            "type": "EC2",
            "minvCpus": 0,
            "maxvCpus": 256,
            "desiredvCpus": 0,
            "instanceTypes": ["optimal"],
            "subnets": [subnet],
            "securityGroupIds": [group["GroupId"]],
            "instanceRole": profile["InstanceProfile"]["Arn"],
        },
        serviceRole=role["Arn"],
        **({"tags": tags} if tags else {}),
    )
    name = f"torchx-it-{tag}"
    batch.create_job_queue(
        jobQueueName=name,
        state="ENABLED",
        priority=1,
        computeEnvironmentOrder=[{"order": 1, "computeEnvironment": env["computeEnvironmentArn"]}],
    )
    yield name
    batch.update_job_queue(jobQueue=name, state="DISABLED")
    batch.delete_job_queue(jobQueue=name)
    batch.update_compute_environment(
        computeEnvironment=env["computeEnvironmentArn"], state="DISABLED"
    )
    batch.delete_compute_environment(computeEnvironment=env["computeEnvironmentArn"])


@pytest.fixture(scope="session")
def queue(batch: Any) -> Iterator[str]:
    """A job queue of this session's own, on a compute environment made for it."""
    yield from _queue(batch)


@pytest.fixture
def starved_queue(batch: Any) -> Iterator[str]:
    """A job queue whose compute environment has no capacity: the emulator holds its jobs
    in RUNNABLE, with AWS's reason (dev/aws-moto.py's ``torchx-dev-aws/no-capacity`` tag)."""
    yield from _queue(batch, {"torchx-dev-aws/no-capacity": "1"})
