"""aws_sagemaker through the Runner and real boto3, against the emulator on loopback.

The emulator (moto, with dev/aws_moto_sagemaker.py) runs each training job's instances
as containers of the busybox image on the Docker engine, with SageMaker's statuses,
``FailureReason``, ``StopTrainingJob`` and a CloudWatch Logs stream per instance. What
AWS does beyond that is checked at the request level (tests/test_sagemaker_scheduler.py,
botocore's Stubber).
"""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from awsenv import busybox
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


#: What each instance of the test apps runs: its host name, its env, its resource config.
SCRIPT = 'echo "on $(hostname) LR=$LR"; cat /opt/ml/input/config/resourceconfig.json; echo'


def app(name: str = "sm-trainer", n: int = 2, script: str = SCRIPT) -> AppDef:
    role = Role(
        "trainer",
        image=busybox(),
        entrypoint="sh",
        args=["-c", script],
        env={"LR": "0.1"},
        num_replicas=n,
        resource=resource(h="aws_g5.xlarge"),
    )
    return AppDef(name, roles=[role], metadata={"team": "ml"})


def _wait(runner: Any, handle: str) -> Any:
    status = runner.wait(handle, wait_interval=0.5)
    assert status is not None and status.state.is_terminal(), status
    return status


def test_submit_describe_and_status(iam_role: str) -> None:
    with get_runner("it") as runner:
        handle = runner.run(app(), "aws_sagemaker", cfg={"role": iam_role, "max_run": 600})
        job = handle.rsplit("/", 1)[1]
        # what the emulator stored is what we asked for (through real HTTP and boto3)
        stored = boto("sagemaker").describe_training_job(TrainingJobName=job)
        assert stored["RoleArn"] == f"arn:aws:iam::123456789012:role/{iam_role}"
        assert stored["ResourceConfig"]["InstanceType"] == "ml.g5.xlarge"
        assert stored["ResourceConfig"]["InstanceCount"] == 2
        assert stored["AlgorithmSpecification"]["ContainerEntrypoint"] == ["sh"]
        assert stored["AlgorithmSpecification"]["ContainerArguments"] == ["-c", SCRIPT]
        assert stored["StoppingCondition"]["MaxRuntimeInSeconds"] == 600
        assert stored["OutputDataConfig"]["S3OutputPath"] == (
            "s3://sagemaker-us-east-1-123456789012/"
        )
        assert stored["Environment"]["LR"] == "0.1"
        # the AppDef comes back from the hyperparameters it went with
        desc = runner.describe(handle)
        assert desc is not None and (desc.name, desc.roles) == ("sm-trainer", app().roles)
        # it runs: InProgress first (no instant Completed), then Completed
        assert stored["TrainingJobStatus"] in ("InProgress", "Completed"), stored
        status = _wait(runner, handle)
        assert status.state == AppState.SUCCEEDED, status
        [role] = status.roles
        assert role.role == "trainer" and len(role.replicas) == 2
        assert status.ui_url and job in status.ui_url
        done = boto("sagemaker").describe_training_job(TrainingJobName=job)
        steps = [t["Status"] for t in done["SecondaryStatusTransitions"]]
        assert steps[0] == "Starting" and "Training" in steps and steps[-1] == "Completed"
        # each instance ran the role's command with its env, knowing its host
        for k in (0, 1):
            lines = [x for x in runner.log_lines(handle, "trainer", k=k) if x]
            assert lines[0] == f"on algo-{k + 1} LR=0.1\n", lines
            assert f'"current_host": "algo-{k + 1}"' in lines[1], lines


def test_a_failing_command_fails_the_job_with_its_reason(iam_role: str) -> None:
    with get_runner("it") as runner:
        handle = runner.run(
            app("sm-fail", 1, "echo failing; exit 3"), "aws_sagemaker", cfg={"role": iam_role}
        )
        status = _wait(runner, handle)
        assert status.state == AppState.FAILED, status
        assert "exited with code 3" in status.msg, status.msg
        assert [x for x in runner.log_lines(handle, "trainer", k=0) if x] == ["failing\n"]


def test_cancel_stops_the_job(iam_role: str) -> None:
    with get_runner("it") as runner:
        handle = runner.run(
            app("sm-cancel", 2, "echo up; sleep 300"), "aws_sagemaker", cfg={"role": iam_role}
        )
        lines = iter(runner.log_lines(handle, "trainer", k=1, should_tail=True))
        assert next(x for x in lines if x) == "up\n"  # running, its log read as it runs
        runner.cancel(handle)
        job = handle.rsplit("/", 1)[1]
        assert boto("sagemaker").describe_training_job(TrainingJobName=job)[
            "TrainingJobStatus"
        ] in ("Stopping", "Stopped")
        status = _wait(runner, handle)
        assert status.state == AppState.CANCELLED, status
        assert [x for x in lines if x] == []  # the follow ends with the job
        # an ended job cannot be stopped again: AWS's answer, which cancel leaves alone
        from botocore.exceptions import ClientError

        with pytest.raises(ClientError) as err:
            boto("sagemaker").stop_training_job(TrainingJobName=job)
        assert err.value.response["Error"]["Code"] == "ValidationException"
        runner.cancel(handle)
        assert runner.status(handle).state == AppState.CANCELLED  # type: ignore[union-attr]


def test_a_job_past_its_max_run_is_stopped_by_sagemaker_and_failed(iam_role: str) -> None:
    # SageMaker stops a job at StoppingCondition.MaxRuntimeInSeconds: Stopped, secondary
    # status MaxRuntimeExceeded; nobody cancelled it, so the app FAILED
    with get_runner("it") as runner:
        handle = runner.run(
            app("sm-late", 1, "echo up; sleep 300"),
            "aws_sagemaker",
            cfg={"role": iam_role, "max_run": 2},
        )
        status = _wait(runner, handle)
        assert status.state == AppState.FAILED, status
        assert "MaxRuntimeExceeded" in status.msg, status.msg
        job = boto("sagemaker").describe_training_job(TrainingJobName=handle.rsplit("/", 1)[1])
        assert (job["TrainingJobStatus"], job["SecondaryStatus"]) == (
            "Stopped",
            "MaxRuntimeExceeded",
        )
        assert [x for x in runner.log_lines(handle, "trainer", k=0) if x] == ["up\n"]


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
        for h in handles:
            _wait(runner, h)
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
        assert _wait(runner, handle).state == AppState.SUCCEEDED


def test_an_unknown_job_has_no_status(aws_env: str) -> None:
    with get_runner("it") as runner:
        assert runner.status("aws_sagemaker://it/no-such-job-123") is None


def test_logs_read_back_from_cloudwatch(iam_role: str) -> None:
    # each instance's output, where SageMaker writes it; read through torchx (real
    # GetLogEvents paging, time window, regex, follow)
    script = 'i=0; while [ $i -lt 25 ]; do echo "$(hostname) line $i"; i=$((i+1)); done'
    with get_runner("it") as runner:
        handle = runner.run(app("sm-logs", 2, script), "aws_sagemaker", cfg={"role": iam_role})
        job = handle.rsplit("/", 1)[1]
        assert _wait(runner, handle).state == AppState.SUCCEEDED
        lines = list(runner.log_lines(handle, "trainer", k=1))
        assert [x for x in lines if x] == [f"algo-2 line {i}\n" for i in range(25)]
        logs = boto("logs")
        [stream] = logs.describe_log_streams(
            logGroupName=LOG_GROUP, logStreamNamePrefix=f"{job}/algo-1-"
        )["logStreams"]
        events = logs.get_log_events(
            logGroupName=LOG_GROUP, logStreamName=stream["logStreamName"], startFromHead=True
        )["events"]
        assert [e["message"] for e in events] == [f"algo-1 line {i}" for i in range(25)]
        at = datetime.fromtimestamp(events[10]["timestamp"] / 1000, UTC)
        window = [x for x in runner.log_lines(handle, "trainer", k=0, since=at, until=at) if x]
        same = [e["message"] + "\n" for e in events if e["timestamp"] == events[10]["timestamp"]]
        assert window == same and "algo-1 line 10\n" in window
        matched = list(runner.log_lines(handle, "trainer", k=0, regex=r"line 2\d"))
        assert [x for x in matched if x] == [f"algo-1 line {i}\n" for i in (20, 21, 22, 23, 24)]
        # followed: the job has ended, so the log ends once read
        tailed = list(runner.log_lines(handle, "trainer", k=0, should_tail=True))
        assert len([x for x in tailed if x]) == 25


def test_an_endpoint_that_is_down_is_one_line_within_seconds(
    aws_env: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import socket

    from torchx.schedulers.contract.errors import SchedulerError

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
