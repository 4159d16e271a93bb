"""aws_sagemaker through the Runner and real boto3, against the emulator on loopback.

The emulator accepts, stores, describes, tags and searches training jobs, but runs none:
every job is ``Completed`` at once, and ``StopTrainingJob`` is not implemented (HTTP 500).
What AWS does beyond that is checked at the request level
(tests/test_sagemaker_scheduler.py, botocore's Stubber).
"""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from torchx_aws.sagemaker.scheduler import LOG_GROUP

from torchx.runner import get_runner
from torchx.specs import AppDef, AppState, Role, resource

REGION = "us-east-1"


def boto(service: str, region: str = REGION) -> Any:
    """A plain boto3 client of the emulator (AWS_ENDPOINT_URL), to see what torchx did."""
    import boto3

    return boto3.client(service, region_name=region)


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
    iam = boto("iam")
    name = f"torchx-sm-{uuid.uuid4().hex[:8]}"
    iam.create_role(RoleName=name, AssumeRolePolicyDocument="{}")
    yield name
    iam.delete_role(RoleName=name)


def app(name: str = "sm-trainer", n: int = 2) -> AppDef:
    role = Role(
        "trainer",
        image="123456789012.dkr.ecr.us-east-1.amazonaws.com/train:1",
        entrypoint="python",
        args=["-m", "train", "--epochs", "3"],
        env={"LR": "0.1"},
        num_replicas=n,
        resource=resource(h="aws_g5.xlarge"),
    )
    return AppDef(name, roles=[role], metadata={"team": "ml"})


def test_submit_describe_and_status(iam_role: str) -> None:
    with get_runner("it") as runner:
        handle = runner.run(app(), "aws_sagemaker", cfg={"role": iam_role, "max_run": 600})
        job = handle.rsplit("/", 1)[1]
        # what the emulator stored is what we asked for (through real HTTP and boto3)
        stored = boto("sagemaker").describe_training_job(TrainingJobName=job)
        assert stored["RoleArn"] == f"arn:aws:iam::123456789012:role/{iam_role}"
        assert stored["ResourceConfig"]["InstanceType"] == "ml.g5.xlarge"
        assert stored["ResourceConfig"]["InstanceCount"] == 2
        assert stored["AlgorithmSpecification"]["ContainerEntrypoint"] == ["python"]
        assert stored["AlgorithmSpecification"]["ContainerArguments"] == [
            "-m", "train", "--epochs", "3",
        ]  # fmt: skip
        assert stored["StoppingCondition"]["MaxRuntimeInSeconds"] == 600
        assert stored["OutputDataConfig"]["S3OutputPath"] == (
            "s3://sagemaker-us-east-1-123456789012/"
        )
        status = runner.status(handle)
        assert status is not None
        # the emulator completes every job at once
        assert status.state == AppState.SUCCEEDED
        [role] = status.roles
        assert role.role == "trainer" and len(role.replicas) == 2
        assert status.ui_url and job in status.ui_url


def test_list_finds_torchx_jobs_by_tag_only(iam_role: str) -> None:
    foreign = f"not-torchx-{uuid.uuid4().hex[:8]}"
    sm = boto("sagemaker")
    sm.create_training_job(
        TrainingJobName=foreign,
        RoleArn=f"arn:aws:iam::123456789012:role/{iam_role}",
        AlgorithmSpecification={"TrainingImage": "x:1", "TrainingInputMode": "File"},
        OutputDataConfig={"S3OutputPath": "s3://b/"},
        ResourceConfig={"InstanceType": "ml.m5.xlarge", "InstanceCount": 1, "VolumeSizeInGB": 1},
        StoppingCondition={"MaxRuntimeInSeconds": 60},
    )
    with get_runner("it") as runner:
        handles = [
            runner.run(app(f"listed-{i}"), "aws_sagemaker", cfg={"role": iam_role})
            for i in range(2)
        ]
        listed = {a.app_handle: a for a in runner.list("aws_sagemaker")}
        for h in handles:
            assert h in listed and listed[h].state == AppState.SUCCEEDED
        assert {listed[h].name for h in handles} == {"listed-0", "listed-1"}
        assert not [h for h in listed if h.endswith(foreign)]


def test_a_region_run_option_travels_in_the_handle(iam_role: str) -> None:
    boto("iam", "eu-west-1")  # IAM is global: the role exists there too
    with get_runner("it") as runner:
        handle = runner.run(app(), "aws_sagemaker", cfg={"role": iam_role, "region": "eu-west-1"})
        assert "/eu-west-1:" in handle
        job = handle.rsplit(":", 1)[1]
        assert boto("sagemaker", "eu-west-1").describe_training_job(TrainingJobName=job)
        # not in the default region: only the handle's region finds it
        assert not boto("sagemaker").search(
            Resource="TrainingJob",
            SearchExpression={
                "Filters": [{"Name": "TrainingJobName", "Operator": "Equals", "Value": job}]
            },
        )["Results"]
    with get_runner("another-shell") as runner:
        status = runner.status(handle)
        assert status is not None and status.state == AppState.SUCCEEDED


def test_an_unknown_job_has_no_status(aws_env: str) -> None:
    with get_runner("it") as runner:
        assert runner.status("aws_sagemaker://it/no-such-job-123") is None


def test_the_emulator_does_not_implement_stop_training_job(iam_role: str) -> None:
    # the declared gap: cancel's StopTrainingJob is checked against AWS's documented answers
    # with botocore's Stubber. When the emulator implements it, replace this by a real cancel.
    from botocore.exceptions import ClientError

    with get_runner("it") as runner:
        handle = runner.run(app(), "aws_sagemaker", cfg={"role": iam_role})
    job = handle.rsplit("/", 1)[1]
    with pytest.raises(ClientError) as err:
        boto("sagemaker").stop_training_job(TrainingJobName=job)
    assert err.value.response["ResponseMetadata"]["HTTPStatusCode"] == 500


def test_logs_read_back_from_cloudwatch(iam_role: str) -> None:
    # the emulator writes no training job logs: write them where SageMaker does, then read
    # them through torchx (real GetLogEvents paging, time window, regex)
    with get_runner("it") as runner:
        handle = runner.run(app(), "aws_sagemaker", cfg={"role": iam_role})
        job = handle.rsplit("/", 1)[1]
        logs = boto("logs")
        try:
            logs.create_log_group(logGroupName=LOG_GROUP)
        except logs.exceptions.ResourceAlreadyExistsException:
            pass
        base = datetime.now(UTC).replace(microsecond=0) - timedelta(minutes=5)
        for host in (1, 2):
            stream = f"{job}/algo-{host}-{int(time.time())}"
            logs.create_log_stream(logGroupName=LOG_GROUP, logStreamName=stream)
            logs.put_log_events(
                logGroupName=LOG_GROUP,
                logStreamName=stream,
                logEvents=[
                    {
                        "timestamp": int((base + timedelta(seconds=i)).timestamp() * 1000),
                        "message": f"host {host} line {i}",
                    }
                    for i in range(25)
                ],
            )
        lines = list(runner.log_lines(handle, "trainer", k=1))
        assert [x for x in lines if x] == [f"host 2 line {i}\n" for i in range(25)]
        window = list(
            runner.log_lines(
                handle,
                "trainer",
                k=0,
                since=base + timedelta(seconds=10),
                until=base + timedelta(seconds=12),
            )
        )
        assert [x for x in window if x] == [f"host 1 line {i}\n" for i in (10, 11, 12)]
        matched = list(runner.log_lines(handle, "trainer", k=0, regex=r"line 2\d"))
        assert [x for x in matched if x] == [f"host 1 line {i}\n" for i in (20, 21, 22, 23, 24)]
        # followed: the job has ended, so the log ends once read
        tailed = list(runner.log_lines(handle, "trainer", k=0, should_tail=True))
        assert len([x for x in tailed if x]) == 25


def test_an_endpoint_that_is_down_is_one_line_within_seconds(
    aws_env: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import socket

    from torchx.schedulers.errors import SchedulerError

    with socket.socket() as s:  # a loopback port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://127.0.0.1:{port}")
    start = time.monotonic()
    with get_runner("it") as runner, pytest.raises(SchedulerError) as err:
        runner.status("aws_sagemaker://it/some-job-1")
    assert time.monotonic() - start < 30
    text = str(err.value)
    assert "\n" not in text and "cannot reach the AWS endpoint" in text
    assert "state is unknown, not failed" in text
