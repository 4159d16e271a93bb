"""aws_sagemaker against botocore's Stubber: the calls made and AWS's documented answers.

The integration tests run training jobs on an emulator (moto, made to run them in
containers); AWS's documented answers it cannot give (secondary statuses it never
passes through, throttling, a job Stopping while its instances save their work) are
checked here at the request level.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import botocore.session
import pytest
from botocore.stub import ANY, Stubber
from torchx_aws.sagemaker.backend import SageMakerBackend
from torchx_aws.sagemaker.scheduler import LOG_GROUP, AWSSageMakerScheduler, create_scheduler

from torchx.schedulers.contract.api import Stream
from torchx.schedulers.contract.errors import InvalidAppIdError, SchedulerError
from torchx.specs import AppDef, AppState, Role, resource
from torchx.specs.errors import SpecError

ROLE_ARN = "arn:aws:iam::123456789012:role/sm"
T0 = datetime(2026, 11, 25, 6, 0, tzinfo=UTC)


class Stubs:
    """One stubbed client per service, handed out by the scheduler's client factory."""

    def __init__(self) -> None:
        session = botocore.session.get_session()
        self.clients: dict[str, Any] = {}
        self.stubbers: dict[str, Stubber] = {}
        self.asked: list[tuple[str, str | None, str | None]] = []
        for service in ("sagemaker", "iam", "logs"):
            client = session.create_client(
                service,
                region_name="us-east-1",
                aws_access_key_id="x",
                aws_secret_access_key="y",
            )
            self.clients[service] = client
            self.stubbers[service] = Stubber(client)
            self.stubbers[service].activate()

    def factory(self, service: str, region: str | None, profile: str | None) -> Any:
        self.asked.append((service, region, profile))
        return self.clients[service]

    def __getattr__(self, service: str) -> Stubber:
        return self.stubbers[service]

    def verify(self) -> None:
        for stubber in self.stubbers.values():
            stubber.assert_no_pending_responses()


@pytest.fixture
def stubs() -> Iterator[Stubs]:
    s = Stubs()
    yield s
    s.verify()


@pytest.fixture
def sched(stubs: Stubs) -> AWSSageMakerScheduler:
    return create_scheduler("test", backend=SageMakerBackend(stubs.factory))


def app(n: int = 2) -> AppDef:
    role = Role(
        "trainer",
        image="train:1",
        entrypoint="python",
        args=["-m", "train"],
        num_replicas=n,
        resource=resource(h="aws_g5.xlarge"),
    )
    return AppDef("trainer", roles=[role])


def job(status: str, secondary: str = "", **extra: Any) -> dict[str, Any]:
    out: dict[str, Any] = {
        "TrainingJobName": "trainer-abc",
        "TrainingJobArn": "arn:aws:sagemaker:us-east-1:123456789012:training-job/trainer-abc",
        "TrainingJobStatus": status,
        "SecondaryStatus": secondary or status,
        "AlgorithmSpecification": {"TrainingInputMode": "File"},
        "ResourceConfig": {
            "InstanceType": "ml.g5.xlarge",
            "InstanceCount": 2,
            "VolumeSizeInGB": 30,
        },
        "StoppingCondition": {"MaxRuntimeInSeconds": 60},
        "CreationTime": T0,
        "ModelArtifacts": {"S3ModelArtifacts": "s3://b/m"},
        "Environment": {"TORCHX_ROLE_NAME": "trainer", "TORCHX_APP_NAME": "trainer"},
    }
    out.update(extra)
    return out


def client_error(stubber: Stubber, method: str, code: str, message: str, status: int = 400) -> None:
    stubber.add_client_error(
        method, service_error_code=code, service_message=message, http_status_code=status
    )


def test_schedule_looks_up_a_role_name_and_creates_the_job(
    stubs: Stubs, sched: AWSSageMakerScheduler
) -> None:
    info = sched.prepare(app(), {"role": "sm"})
    stubs.iam.add_response(
        "get_role",
        {
            "Role": {
                "Path": "/",
                "RoleName": "sm",
                "RoleId": "AROAEXAMPLE1234567890",
                "Arn": ROLE_ARN,
                "CreateDate": T0,
            }
        },
        {"RoleName": "sm"},
    )
    expected = dict(info.request.params)
    expected["RoleArn"] = ROLE_ARN
    expected["OutputDataConfig"] = {"S3OutputPath": "s3://sagemaker-us-east-1-123456789012/"}
    stubs.sagemaker.add_response("create_training_job", {"TrainingJobArn": "arn:x"}, expected)
    assert sched.schedule(info) == info.request.job_name
    # right after: AWS may not know the job yet (eventually consistent reads)
    client_error(
        stubs.sagemaker,
        "describe_training_job",
        "ValidationException",
        f"Could not find training job '{info.request.job_name}'.",
    )
    desc = sched.describe(info.request.job_name)
    assert desc is not None and desc.state == AppState.SUBMITTED


def test_a_create_retried_after_a_lost_answer_is_not_a_failure(
    stubs: Stubs, sched: AWSSageMakerScheduler
) -> None:
    info = sched.prepare(app(), {"role": ROLE_ARN, "output_path": "s3://b/"})
    client_error(stubs.sagemaker, "create_training_job", "InternalFailure", "oops", 500)
    # the first attempt did create it: SageMaker refuses the same name again
    client_error(stubs.sagemaker, "create_training_job", "ResourceInUse", "already exists")
    assert sched.schedule(info) == info.request.job_name


def test_a_refused_create_is_one_line(stubs: Stubs, sched: AWSSageMakerScheduler) -> None:
    info = sched.prepare(app(), {"role": ROLE_ARN, "output_path": "s3://b/"})
    client_error(stubs.sagemaker, "create_training_job", "ResourceLimitExceeded", "no ml.g5")
    with pytest.raises(SchedulerError) as err:
        sched.schedule(info)
    assert str(err.value) == ("AWS refused CreateTrainingJob: ResourceLimitExceeded: no ml.g5")


@pytest.mark.parametrize(
    ("status", "secondary", "state"),
    [
        ("InProgress", "Starting", AppState.PENDING),
        ("InProgress", "Downloading", AppState.PENDING),
        ("InProgress", "Training", AppState.RUNNING),
        ("InProgress", "Uploading", AppState.RUNNING),
        ("Completed", "Completed", AppState.SUCCEEDED),
        ("Failed", "Failed", AppState.FAILED),
        ("Stopping", "Stopping", AppState.CANCELLED),
        ("Stopped", "Stopped", AppState.CANCELLED),
    ],
)
def test_describe_states(
    stubs: Stubs, sched: AWSSageMakerScheduler, status: str, secondary: str, state: AppState
) -> None:
    stubs.sagemaker.add_response(
        "describe_training_job", job(status, secondary), {"TrainingJobName": "trainer-abc"}
    )
    out = sched.describe("trainer-abc")
    assert out is not None and out.state == state
    [role] = out.roles_statuses
    assert role.role == "trainer" and [r.state for r in role.replicas] == [state, state]
    assert all(r.exit_code is None for r in role.replicas)
    assert out.ui_url == (
        "https://us-east-1.console.aws.amazon.com/sagemaker/home?region=us-east-1#/jobs/trainer-abc"
    )


def test_describe_gives_back_the_appdef_the_job_carries(
    stubs: Stubs, sched: AWSSageMakerScheduler
) -> None:
    submitted = app()
    submitted.metadata["team"] = "ml"
    info = sched.submit_dryrun(submitted, {"role": "arn:aws:iam::123456789012:role/sm"})
    hyper = info.request.params["HyperParameters"]
    stubs.sagemaker.add_response(
        "describe_training_job", job("InProgress", "Training", HyperParameters=hyper)
    )
    out = sched.describe("trainer-abc")
    assert out is not None
    assert (out.name, out.roles, out.metadata) == ("trainer", submitted.roles, {"team": "ml"})


def test_describe_tells_the_env_the_run_options_gave_for_torchx_status_to_mask(
    stubs: Stubs, sched: AWSSageMakerScheduler
) -> None:
    """A failed job's message may quote what the program printed: the ``environment`` and
    ``hyperparameters`` it ran with are the response's ``env`` (not the AppDef's chunks)."""
    cfg = {
        "role": "arn:aws:iam::123456789012:role/sm",
        "environment": {"DB_PASSWORD": "s3cret"},
        "hyperparameters": {"api_key": "k3y-value"},
    }
    params = sched.submit_dryrun(app(), cfg).request.params
    stubs.sagemaker.add_response(
        "describe_training_job",
        job(
            "Failed",
            FailureReason="AlgorithmError: login s3cret refused",
            Environment=params["Environment"],
            HyperParameters=params["HyperParameters"],
        ),
    )
    out = sched.describe("trainer-abc")
    assert out is not None
    assert out.env["DB_PASSWORD"] == "s3cret" and out.env["api_key"] == "k3y-value"
    assert not [k for k in out.env if k.startswith("torchx_appdef_")]
    # the run options come back masked: the hyperparameters are readable by others
    assert out.run_options["environment"] == {"DB_PASSWORD": "****"}
    assert out.run_options["hyperparameters"] == {"api_key": "****"}
    assert out.run_options["role"] == cfg["role"]
    assert "s3cret" not in "".join(params["HyperParameters"].values())


def test_an_appdef_too_large_to_keep_is_left_out_and_the_dry_run_says_so(
    sched: AWSSageMakerScheduler,
) -> None:
    big = app(1)
    big.roles[0].args = ["x" * 250] * 36  # each within SageMaker's 256
    with pytest.warns(UserWarning, match=r"^the AppDef of app 'trainer' is not kept .*9\d+ b"):
        info = sched.submit_dryrun(big, {"role": "arn:aws:iam::123456789012:role/sm"})
    assert "HyperParameters" not in info.request.params


def test_describe_of_a_failed_job_says_why(stubs: Stubs, sched: AWSSageMakerScheduler) -> None:
    ended = T0.replace(minute=5)
    stubs.sagemaker.add_response(
        "describe_training_job",
        job(
            "Failed",
            FailureReason="AlgorithmError: exit code 3",
            TrainingStartTime=T0,
            TrainingEndTime=ended,
        ),
    )
    out = sched.describe("trainer-abc")
    assert out is not None
    assert out.msg == "AlgorithmError: exit code 3"
    assert (out.start_time, out.end_time) == (T0.timestamp(), ended.timestamp())


@pytest.mark.parametrize("limit", ["MaxRuntimeExceeded", "MaxWaitTimeExceeded"])
def test_a_job_sagemaker_stopped_at_its_time_limit_failed(
    stubs: Stubs, sched: AWSSageMakerScheduler, limit: str
) -> None:
    # DescribeTrainingJob: Stopped, with the secondary status saying why; nobody cancelled
    transitions = [{"Status": limit, "StartTime": T0, "StatusMessage": "over the limit"}]
    stubs.sagemaker.add_response(
        "describe_training_job", job("Stopped", limit, SecondaryStatusTransitions=transitions)
    )
    out = sched.describe("trainer-abc")
    assert out is not None and out.state == AppState.FAILED, out
    assert out.msg == f"SageMaker stopped the job: {limit} (over the limit)"
    stubs.sagemaker.add_response("describe_training_job", job("Stopped", "Stopped"))
    assert sched.describe("trainer-abc").state == AppState.CANCELLED  # type: ignore[union-attr]


def test_describe_of_an_unknown_job_is_none(stubs: Stubs, sched: AWSSageMakerScheduler) -> None:
    client_error(stubs.sagemaker, "describe_training_job", "ValidationException",
                 "Requested resource not found.")  # fmt: skip
    assert sched.describe("nope-1") is None


def test_describe_with_a_region_asks_that_region(
    stubs: Stubs, sched: AWSSageMakerScheduler
) -> None:
    stubs.sagemaker.add_response("describe_training_job", job("Completed"))
    sched.describe("eu-west-1:trainer-abc")
    assert ("sagemaker", "eu-west-1", None) in stubs.asked


def test_a_malformed_app_id_is_one_line(sched: AWSSageMakerScheduler) -> None:
    with pytest.raises(InvalidAppIdError, match="expected a training job name"):
        sched.describe("a/b")


def test_throttling_is_retried(stubs: Stubs, sched: AWSSageMakerScheduler) -> None:
    client_error(stubs.sagemaker, "describe_training_job", "ThrottlingException", "Rate exceeded")
    stubs.sagemaker.add_response("describe_training_job", job("Completed"))
    out = sched.describe("trainer-abc")
    assert out is not None and out.state == AppState.SUCCEEDED


def test_an_outage_is_given_up_within_the_readmes_15_s_and_not_retried_again(
    stubs: Stubs, sched: AWSSageMakerScheduler, monkeypatch: pytest.MonkeyPatch
) -> None:
    from torchx.schedulers.helpers import retry
    from torchx.schedulers.helpers.retry import RetriesExhaustedError, is_transient

    slept: list[float] = []  # the waits, instead of waiting them
    assert retry.call_with_retries.__kwdefaults__ is not None
    monkeypatch.setitem(retry.call_with_retries.__kwdefaults__, "sleep", slept.append)
    for _ in range(5):  # as aws_batch's calls: 5 attempts, then one line
        client_error(stubs.sagemaker, "describe_training_job", "ServiceUnavailable", "down", 503)
    with pytest.raises(RetriesExhaustedError) as err:
        sched.describe("trainer-abc")
    assert len(slept) == 4 and sum(slept) <= 15, slept
    # not transient: the Runner's own retries of a status poll do not start again on top
    assert not is_transient(err.value) and "\n" not in str(err.value)


def test_list_searches_the_torchx_tag_page_by_page(
    stubs: Stubs, sched: AWSSageMakerScheduler
) -> None:
    search = {
        "Resource": "TrainingJob",
        "SearchExpression": {
            "Filters": [
                {
                    "Name": "Tags.torchx.pytorch.org/scheduler",
                    "Operator": "Equals",
                    "Value": "aws_sagemaker",
                }
            ]
        },
        "SortBy": "CreationTime",
        "SortOrder": "Descending",
        "MaxResults": 100,
    }
    tagged = [{"Key": "torchx.pytorch.org/app-name", "Value": "my app"}]
    first = job("InProgress", "Training", TrainingJobName="a-1", Tags=tagged)
    second = job("Completed", TrainingJobName="b-2", TrainingEndTime=T0)
    stubs.sagemaker.add_response(
        "search", {"Results": [{"TrainingJob": first}], "NextToken": "t1"}, search
    )
    stubs.sagemaker.add_response(
        "search", {"Results": [{"TrainingJob": second}]}, {**search, "NextToken": "t1"}
    )
    apps = sched.list({"region": "us-west-2"})
    assert [(a.app_id, a.state, a.name) for a in apps] == [
        ("us-west-2:a-1", AppState.RUNNING, "my app"),
        ("us-west-2:b-2", AppState.SUCCEEDED, "b-2"),
    ]
    assert apps[1].end_time == T0.timestamp()


def test_cancel_stops_the_job(stubs: Stubs, sched: AWSSageMakerScheduler) -> None:
    stubs.sagemaker.add_response("describe_training_job", job("InProgress", "Training"))
    stubs.sagemaker.add_response("stop_training_job", {}, {"TrainingJobName": "trainer-abc"})
    sched.cancel("trainer-abc")


def test_cancel_of_an_ended_job_calls_no_stop(stubs: Stubs, sched: AWSSageMakerScheduler) -> None:
    stubs.sagemaker.add_response("describe_training_job", job("Completed"))
    sched.cancel("trainer-abc")  # the Stubber fails on any call not queued


def test_a_stop_refused_because_the_job_just_ended_is_no_error(
    stubs: Stubs, sched: AWSSageMakerScheduler
) -> None:
    # AWS documents StopTrainingJob on a job that is not InProgress as a ValidationException;
    # the job may end between describe and stop
    stubs.sagemaker.add_response("describe_training_job", job("InProgress", "Training"))
    client_error(stubs.sagemaker, "stop_training_job", "ValidationException",
                 "The request was rejected because the training job is in status Completed.")  # fmt: skip
    sched.cancel("trainer-abc")


def test_a_stop_of_a_job_that_vanished_is_an_error(
    stubs: Stubs, sched: AWSSageMakerScheduler
) -> None:
    stubs.sagemaker.add_response("describe_training_job", job("InProgress", "Training"))
    client_error(stubs.sagemaker, "stop_training_job", "ValidationException",
                 "Requested resource not found.")  # fmt: skip
    with pytest.raises(SchedulerError, match="AWS refused StopTrainingJob"):
        sched.cancel("trainer-abc")


def test_cancel_of_an_unknown_job_calls_nothing_else(
    stubs: Stubs, sched: AWSSageMakerScheduler
) -> None:
    client_error(stubs.sagemaker, "describe_training_job", "ValidationException",
                 "Requested resource not found.")  # fmt: skip
    sched.cancel("nope-1")


def test_log_iter_reads_the_instance_stream(stubs: Stubs, sched: AWSSageMakerScheduler) -> None:
    stubs.logs.add_response(
        "describe_log_streams",
        {"logStreams": [{"logStreamName": "trainer-abc/algo-2-1764050000"}]},
        {"logGroupName": LOG_GROUP, "logStreamNamePrefix": "trainer-abc/algo-2-"},
    )
    page = {
        "logGroupName": LOG_GROUP,
        "logStreamName": "trainer-abc/algo-2-1764050000",
        "startFromHead": True,
        "limit": ANY,
    }
    stubs.logs.add_response(
        "get_log_events",
        {
            "events": [{"timestamp": 1, "message": "hello"}, {"timestamp": 2, "message": "loss=1"}],
            "nextForwardToken": "f/1",
        },
        page,
    )
    stubs.logs.add_response(
        "describe_log_streams",
        {"logStreams": [{"logStreamName": "trainer-abc/algo-2-1764050000"}]},
        {"logGroupName": LOG_GROUP, "logStreamNamePrefix": "trainer-abc/algo-2-"},
    )
    stubs.logs.add_response(
        "get_log_events", {"events": [], "nextForwardToken": "f/1"}, {**page, "nextToken": "f/1"}
    )
    lines = [line for line in sched.log_iter("trainer-abc", "trainer", k=1) if line]
    assert lines == ["hello\n", "loss=1\n"]


def test_log_iter_of_a_job_without_logs_yet_is_empty(
    stubs: Stubs, sched: AWSSageMakerScheduler
) -> None:
    client_error(stubs.logs, "describe_log_streams", "ResourceNotFoundException", "no group")
    assert [line for line in sched.log_iter("trainer-abc", "trainer") if line] == []


def test_log_iter_has_no_separate_streams(sched: AWSSageMakerScheduler) -> None:
    with pytest.raises(SpecError, match="use streams=combined"):
        sched.log_iter("trainer-abc", "trainer", streams=Stream.STDERR)


def test_two_roles_are_refused_at_dryrun(sched: AWSSageMakerScheduler) -> None:
    two = app()
    two.roles.append(Role("ps", image="x", entrypoint="y", resource=resource(h="aws_t3.medium")))
    with pytest.raises(SpecError, match="one role as one training job"):
        sched.prepare(two, {"role": ROLE_ARN}, dryrun=True)


def test_a_dry_run_imports_no_boto3() -> None:
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from torchx.specs import AppDef, Role, resource\n"
        "from torchx.runner import get_runner\n"
        "role = Role('r', 'img', entrypoint='echo', num_replicas=16, "
        "resource=resource(h='aws_p4d.24xlarge'))\n"
        "with get_runner('s') as runner:\n"
        "    info = runner.dryrun(AppDef('a', [role]), 'aws_sagemaker', cfg={'role': 'sm'})\n"
        "print(info.request.params['ResourceConfig']['InstanceCount'],"
        " [m for m in sys.modules if m.split('.')[0] in ('boto3', 'botocore')])\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "16 []"


def test_a_workspace_without_image_repo_is_one_line(tmp_path: Any) -> None:
    from torchx.specs.errors import InvalidRunConfigException

    with pytest.raises(InvalidRunConfigException) as err:
        create_scheduler("s").prepare(
            app(), {"role": ROLE_ARN}, workspace=str(tmp_path), dryrun=True
        )
    text = str(err.value)
    assert "workspace on aws_sagemaker needs the run option 'image_repo'" in text
    assert "registry SageMaker pulls from" in text and "\n" not in text


def test_a_workspace_without_torchx_docker_is_one_line(tmp_path: Any) -> None:
    import importlib.util

    assert importlib.util.find_spec("torchx_docker") is None  # tested without the extra
    with pytest.raises(SpecError) as err:
        create_scheduler("s").prepare(
            app(), {"role": ROLE_ARN, "image_repo": "r.example/team"},
            workspace=str(tmp_path), dryrun=True,
        )  # fmt: skip
    text = str(err.value)
    assert "pip install 'torchx-aws[docker]'" in text and "\n" not in text


def test_without_a_workspace_nothing_needs_torchx_docker() -> None:
    info = create_scheduler("s").prepare(app(), {"role": ROLE_ARN}, dryrun=True)
    assert info.request.params["AlgorithmSpecification"]["TrainingImage"] == "train:1"


def test_describe_without_environment_reads_the_names_from_the_tags(
    stubs: Stubs, sched: AWSSageMakerScheduler
) -> None:
    # AWS returns Environment; an endpoint that leaves it out costs one ListTags call
    bare = job("Completed")
    del bare["Environment"]
    stubs.sagemaker.add_response("describe_training_job", bare)
    stubs.sagemaker.add_response(
        "list_tags",
        {
            "Tags": [
                {"Key": "torchx.pytorch.org/role-name", "Value": "worker"},
                {"Key": "torchx.pytorch.org/app-name", "Value": "my app"},
            ]
        },
        {"ResourceArn": bare["TrainingJobArn"]},
    )
    out = sched.describe("trainer-abc")
    assert out is not None and out.name == "my app"
    assert [r.role for r in out.roles_statuses] == ["worker"]


def test_the_job_is_given_the_apps_handle_in_torchx_job_id(sched: AWSSageMakerScheduler) -> None:
    info = sched.submit_dryrun(app(), {"role": "arn:aws:iam::123456789012:role/sm"})
    env = info.request.params["Environment"]
    assert env["TORCHX_JOB_ID"] == f"aws_sagemaker://test/{info.request.app_id}"
