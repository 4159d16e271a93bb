"""torchx.functions on AWS Batch and SageMaker (the emulator, their jobs as containers
of dev/docker's python image): the call in the job's environment, the result in its
CloudWatch log (the kit's checks, :mod:`torchx.schedulers.testing.functions`)."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from torchx.schedulers.testing.functions import LogChannelChecks


class TestBatchFunctions(LogChannelChecks):
    scheduler = "aws_batch"
    node_var = "HOSTNAME"  # the container's
    image = os.environ.get("TORCHX_DEV_DOCKER_PYTHON_IMAGE", "torchx-dev/python:2")
    # the emulator writes a job's log to CloudWatch once its container has ended
    live_logs = False

    @pytest.fixture(autouse=True)
    def _in_queue(self, queue: str) -> None:
        self.queue = queue

    def options(self) -> dict[str, Any]:
        return {**super().options(), "cfg": {"queue": self.queue}}


@pytest.fixture(scope="module")
def training_role(endpoint: str) -> Iterator[str]:
    """An IAM role of the emulator's account for the training jobs (its name)."""
    import boto3

    iam = boto3.client("iam")
    name = f"torchx-fn-{uuid.uuid4().hex[:8]}"
    iam.create_role(RoleName=name, AssumeRolePolicyDocument="{}")
    yield name
    iam.delete_role(RoleName=name)


class TestSageMakerFunctions(LogChannelChecks):
    """Each call a training job of one instance (``algo-1``), the call and the worker in
    pieces of its ``Environment``, the result in its CloudWatch Logs stream."""

    scheduler = "aws_sagemaker"
    node_var = "HOSTNAME"  # the instance's host name: algo-1
    node_prefix = "algo-"
    image = os.environ.get("TORCHX_DEV_DOCKER_PYTHON_IMAGE", "torchx-dev/python:2")
    # a failed training job has a FailureReason text, no exit code per instance
    replica_exit_codes = False

    @pytest.fixture(autouse=True)
    def _with_role(self, training_role: str) -> None:
        self.role = training_role

    def options(self) -> dict[str, Any]:
        # the default resource (1 CPU, 1024 MB) names no instance type: the option does
        cfg = {"role": self.role, "instance_type": "ml.m5.large", "max_run": 600}
        return {**super().options(), "cfg": cfg}
