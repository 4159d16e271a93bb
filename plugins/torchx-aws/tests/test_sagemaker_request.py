"""aws_sagemaker: run options and the CreateTrainingJob request (pure: no AWS)."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path
from typing import Any

import botocore.session
import pytest
from hypothesis import given
from hypothesis import strategies as st
from torchx_aws.sagemaker.options import SageMakerOpts
from torchx_aws.sagemaker.request import (
    ENV_VALUE_MAX,
    FORMAT_VERSION,
    HYPERPARAMETER_MAX,
    MARKED_ENV,
    REPLICA_WRAPPER,
    WRAPPER_ENV,
    appdef_of,
    build_request,
    finish,
    job_name_for,
    parse_app_id,
)

from torchx.schedulers.contract.errors import InvalidAppIdError
from torchx.specs import AppDef, Resource, Role, macros, resource
from torchx.specs.errors import InvalidRunConfigException, SpecError

ROLE_ARN = "arn:aws:iam::123456789012:role/sm"


def app(**role_kw: Any) -> AppDef:
    kw: dict[str, Any] = {
        "name": "trainer",
        "image": "123456789012.dkr.ecr.us-east-1.amazonaws.com/train:1",
        "entrypoint": "python",
        "args": ["-m", "train", "--lr", "0.1"],
        "num_replicas": 2,
        "resource": resource(h="aws_g5.12xlarge"),
        "env": {"A": "1"},
    }
    kw.update(role_kw)
    return AppDef("my trainer", roles=[Role(**kw)], metadata={"team": "ml"})


def params(app_def: AppDef, **cfg: Any) -> dict[str, Any]:
    opts = SageMakerOpts.from_cfg(
        SageMakerOpts.as_runopts().resolve({"role": ROLE_ARN, "user": "alice", **cfg})
    )
    return build_request(app_def, opts, "0.1.0").params


def test_the_role_becomes_the_training_job() -> None:
    p = params(app())
    assert re.fullmatch(r"my-trainer-[a-z0-9]{10}", p["TrainingJobName"])
    assert p["RoleArn"] == ROLE_ARN
    algo = p["AlgorithmSpecification"]
    assert algo["TrainingImage"].endswith("/train:1")
    assert algo["ContainerEntrypoint"] == ["python"]
    assert algo["ContainerArguments"] == ["-m", "train", "--lr", "0.1"]
    assert algo["TrainingInputMode"] == "File"
    assert p["ResourceConfig"] == {
        "InstanceType": "ml.g5.12xlarge",
        "InstanceCount": 2,
        "VolumeSizeInGB": 30,
    }
    assert p["StoppingCondition"] == {"MaxRuntimeInSeconds": 86400}
    assert p["Environment"]["A"] == "1"
    assert p["Environment"]["TORCHX_ROLE_NAME"] == "trainer"
    tags = {t["Key"]: t["Value"] for t in p["Tags"]}
    assert tags["team"] == "ml"
    assert tags["torchx.pytorch.org/scheduler"] == "aws_sagemaker"
    assert tags["torchx.pytorch.org/user"] == "alice"
    assert tags["torchx.pytorch.org/app-name"] == "my trainer"
    assert p["EnableManagedSpotTraining"] is False
    assert p["OutputDataConfig"] == {"S3OutputPath": None}  # finished by schedule


def test_the_request_is_valid_for_botocore() -> None:
    # botocore's own model of CreateTrainingJob checks names, types and required members
    from botocore.validate import validate_parameters

    model = botocore.session.get_session().get_service_model("sagemaker")
    shape = model.operation_model("CreateTrainingJob").input_shape
    p = params(
        app(),
        use_spot_instances=True,
        max_wait=90000,
        checkpoint_s3_uri="s3://b/ckpt",
        checkpoint_local_path="/opt/ml/checkpoints",
        subnets=["subnet-1"],
        security_group_ids=["sg-1"],
        model_uri="s3://b/model",
        metric_definitions={"loss": "loss=(\\S+)"},
        hyperparameters={"epochs": "3"},
        keep_alive_period_in_seconds=600,
        volume_kms_key="k1",
        output_kms_key="k2",
        disable_output_compression=True,
        training_repository_access_mode="Vpc",
        training_repository_credentials_provider_arn="arn:aws:lambda:us-east-1:1:function:f",
        enable_infra_check=True,
        debugger_hook_config=True,
        disable_profiler=True,
        max_retry_attempts=3,
        tags={"env": "dev"},
        environment={"B": "2", "A": "from-option"},
    )
    finish_params = dict(p)
    finish_params["OutputDataConfig"] = {**p["OutputDataConfig"], "S3OutputPath": "s3://b/out"}
    finish_params["DebugHookConfig"] = {"S3OutputPath": "s3://b/out"}
    validate_parameters(finish_params, shape)
    assert p["StoppingCondition"] == {"MaxRuntimeInSeconds": 86400, "MaxWaitTimeInSeconds": 90000}
    assert p["CheckpointConfig"] == {"S3Uri": "s3://b/ckpt", "LocalPath": "/opt/ml/checkpoints"}
    assert p["VpcConfig"] == {"Subnets": ["subnet-1"], "SecurityGroupIds": ["sg-1"]}
    assert p["InputDataConfig"][0]["ChannelName"] == "model"
    assert p["AlgorithmSpecification"]["MetricDefinitions"] == [
        {"Name": "loss", "Regex": "loss=(\\S+)"}
    ]
    assert p["OutputDataConfig"]["CompressionType"] == "NONE"
    assert p["RetryStrategy"] == {"MaximumRetryAttempts": 3}
    assert p["Environment"]["A"] == "1" and p["Environment"]["B"] == "2"  # the role's env wins


def test_spot_without_max_wait_waits_as_long_as_it_runs() -> None:
    p = params(app(), use_spot_instances=True, max_run=3600)
    assert p["EnableManagedSpotTraining"] is True
    assert p["StoppingCondition"] == {"MaxRuntimeInSeconds": 3600, "MaxWaitTimeInSeconds": 3600}


def test_instance_type_and_count_options_win() -> None:
    p = params(app(), instance_type="p4d.24xlarge", instance_count=4)
    assert p["ResourceConfig"]["InstanceType"] == "ml.p4d.24xlarge"
    assert p["ResourceConfig"]["InstanceCount"] == 4
    assert params(app(), instance_type="ml.m5.xlarge")["ResourceConfig"]["InstanceType"] == (
        "ml.m5.xlarge"
    )


def test_max_retries_are_ignored_as_declared() -> None:
    # SageMaker's RetryStrategy retries internal errors only, never a failed command, so
    # the role's max_retries has nothing to map to (Capability.RETRIES is declared missing)
    assert "RetryStrategy" not in params(app(max_retries=2))
    assert params(app(), max_retry_attempts=2)["RetryStrategy"] == {"MaximumRetryAttempts": 2}


def test_a_resource_without_instance_type_is_one_line() -> None:
    with pytest.raises(SpecError, match=r"needs an instance type for role 'trainer'") as err:
        params(app(resource=Resource(cpu=4, gpu=0, memMB=1024)))
    assert "\n" not in str(err.value) and "aws_g5.xlarge" in str(err.value)


def test_macros() -> None:
    role_kw = {
        "num_replicas": 1,
        "args": ["--id", macros.app_id, "--rank0", f"${{{macros.rank0_env}}}", macros.replica_id],
    }
    p = params(app(**role_kw))
    args = p["AlgorithmSpecification"]["ContainerArguments"]
    assert args == ["--id", p["TrainingJobName"], "--rank0", "${TORCHX_RANK0_HOST}", "0"]
    assert p["Environment"]["TORCHX_RANK0_HOST"] == "algo-1"


def test_replica_id_on_several_instances_comes_from_the_host_name(tmp_path: Path) -> None:
    # SageMaker runs one command on every instance: the wrapper reads the instance's host
    # (algo-<k>) from resourceconfig.json and puts k - 1 where ${replica_id} stood
    p = params(
        app(
            args=["--rank", macros.replica_id, f"r{macros.replica_id}x{macros.replica_id}"],
            env={"ID": f"id-{macros.replica_id}", "PLAIN": "1"},
        )
    )
    algo, env = p["AlgorithmSpecification"], p["Environment"]
    assert algo["ContainerEntrypoint"] == [
        "sh",
        "-c",
        f'eval "${WRAPPER_ENV}"',
        "torchx-replica",
        "python",
    ]
    assert env[WRAPPER_ENV] == REPLICA_WRAPPER and env[MARKED_ENV] == "ID"
    assert len(REPLICA_WRAPPER) <= ENV_VALUE_MAX  # SageMaker's longest env value
    config = tmp_path / "resourceconfig.json"
    config.write_text(json.dumps({"current_host": "algo-12", "hosts": ["algo-1", "algo-12"]}))
    script = REPLICA_WRAPPER.replace("/opt/ml/input/config/resourceconfig.json", str(config))
    entry = algo["ContainerEntrypoint"]
    command = [*entry[:2], entry[2].replace(f"${WRAPPER_ENV}", "$W"), *entry[3:-1]]
    show = 'printf "%s|" "$@" "$ID" "$PLAIN" "$TORCHX_REPLICA_ID"'
    out = subprocess.run(
        [*command, "sh", "-c", show, "kit", *algo["ContainerArguments"]],
        env={**env, "W": script, "PATH": os.environ["PATH"]},
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert out == "--rank|11|r11x11|id-11|1|11|"
    # not on SageMaker: one line, no command run
    config.write_text("{}")
    failed = subprocess.run(
        [*command, "true"], env={"W": script, "PATH": os.environ["PATH"]}, capture_output=True
    )
    assert failed.returncode != 0 and b"current_host" in failed.stderr


def test_one_instance_or_no_replica_id_runs_the_command_as_it_is() -> None:
    for role_kw in ({"num_replicas": 1, "args": [macros.replica_id]}, {"num_replicas": 2}):
        p = params(app(**role_kw))
        assert p["AlgorithmSpecification"]["ContainerEntrypoint"] == ["python"]
        assert WRAPPER_ENV not in p["Environment"]


@pytest.mark.parametrize(
    "role_kw, says",
    [
        ({"args": ["-c", "x" * 257]}, r"args\[1\] is 257 characters; SageMaker takes at most 256"),
        ({"args": ["a"] * 101}, r"101 args items; SageMaker takes at most 100"),
        ({"entrypoint": "e" * 300}, r"entrypoint\[0\] is 300 characters"),
        ({"env": {"BIG": "v" * 513}}, r"env BIG is 513 characters; SageMaker takes at most 512"),
        ({"env": {f"E{i}": "1" for i in range(100)}}, r"SageMaker takes at most 100"),
    ],
)
def test_what_create_training_job_refuses_is_one_line_at_dry_run(
    role_kw: dict[str, Any], says: str
) -> None:
    with pytest.raises(SpecError, match=says) as err:
        params(app(**role_kw))
    assert "\n" not in str(err.value)


def test_one_role_only() -> None:
    two = app()
    two.roles.append(Role("ps", image="x", entrypoint="y", resource=resource(h="aws_m5.2xlarge")))
    with pytest.raises(SpecError, match=r"one role as one training job; app 'my trainer' has 2"):
        params(two)
    none = app()
    none.roles = []
    with pytest.raises(SpecError) as err:
        params(none)
    assert str(err.value) == "app 'my trainer' has no roles: give it at least one Role"


def test_region_goes_into_the_app_id() -> None:
    opts = SageMakerOpts.from_cfg(
        SageMakerOpts.as_runopts().resolve({"role": ROLE_ARN, "region": "eu-west-1"})
    )
    req = build_request(app(), opts, "0.1.0")
    assert req.app_id == f"eu-west-1:{req.job_name}"
    assert parse_app_id(req.app_id) == ("eu-west-1", req.job_name)


def test_the_printed_request_is_versioned_json() -> None:
    opts = SageMakerOpts.from_cfg(SageMakerOpts.as_runopts().resolve({"role": "sm"}))
    doc = json.loads(str(build_request(app(), opts, "0.1.0")))
    assert doc["formatVersion"] == FORMAT_VERSION
    assert doc["CreateTrainingJob"]["RoleArn"] == "sm"


def test_finish_fills_the_role_arn_and_the_default_output_path() -> None:
    opts = SageMakerOpts.from_cfg(
        SageMakerOpts.as_runopts().resolve({"role": "sm", "debugger_hook_config": True})
    )
    req = build_request(app(), opts, "0.1.0")
    finish(req, ROLE_ARN, "123456789012", "us-east-1")
    assert req.params["RoleArn"] == ROLE_ARN
    default = "s3://sagemaker-us-east-1-123456789012/"
    assert req.params["OutputDataConfig"]["S3OutputPath"] == default
    assert req.params["DebugHookConfig"]["S3OutputPath"] == default
    given = SageMakerOpts.from_cfg(
        SageMakerOpts.as_runopts().resolve({"role": "sm", "output_path": "s3://mine/"})
    )
    req = build_request(app(), given, "0.1.0")
    finish(req, ROLE_ARN, "123456789012", "us-east-1")
    assert req.params["OutputDataConfig"]["S3OutputPath"] == "s3://mine/"


@pytest.mark.parametrize(
    ("cfg", "says"),
    [
        ({"source_dir": "."}, "'source_dir' is the SageMaker Python SDK's code upload"),
        ({"container_log_level": 20}, "'container_log_level'"),
        ({"input_mode": "Disk"}, "not one of File, Pipe, FastFile"),
        ({"max_wait": 100}, "applies to spot training only"),
        ({"use_spot_instances": True, "max_run": 600, "max_wait": 60}, "at least max_run (600)"),
        ({"subnets": ["s-1"]}, "go together"),
        ({"max_retry_attempts": 31}, "between 1 and 30"),
        ({"instance_count": 0}, "must be a positive number"),
        ({"training_repository_access_mode": "S3"}, "not one of Platform, Vpc"),
    ],
)
def test_bad_options_are_one_line(cfg: dict[str, Any], says: str) -> None:
    with pytest.raises(InvalidRunConfigException) as err:
        SageMakerOpts.from_cfg(SageMakerOpts.as_runopts().resolve({"role": "sm", **cfg}))
    assert says in str(err.value) and "\n" not in str(err.value)


def test_role_is_required() -> None:
    with pytest.raises(InvalidRunConfigException, match="role"):
        SageMakerOpts.as_runopts().resolve({})


_JOB_NAME = re.compile(r"[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}")


@given(st.text(max_size=200))
def test_job_names_are_always_valid_for_sagemaker(name: str) -> None:
    job = job_name_for(name)
    assert _JOB_NAME.fullmatch(job), job
    assert parse_app_id(job) == (None, job)


@given(st.text(max_size=80))
def test_app_ids_parse_or_fail_in_one_line(text: str) -> None:
    try:
        region, job = parse_app_id(text)
    except InvalidAppIdError as e:
        assert "\n" not in str(e) and "expected a training job name" in str(e)
        assert isinstance(e, ValueError)
    else:
        assert _JOB_NAME.fullmatch(job)
        assert text == (f"{region}:{job}" if region else job)


def test_mounts_are_refused() -> None:
    from torchx.specs import BindMount

    with pytest.raises(SpecError, match=r"role 'trainer' has mounts, which a SageMaker"):
        params(app(mounts=[BindMount(src_path="/data", dst_path="/data")]))


def test_the_appdef_goes_with_the_job_in_hyperparameters() -> None:
    # SageMaker keeps the request, not the AppDef: its document rides in hyperparameters
    # (AWS returns them in DescribeTrainingJob), in pieces of at most 2,500 characters
    a = app(args=["-m", "train", *["x" * 250] * 12])  # SageMaker: 256 per argument
    p = params(a, hyperparameters={"epochs": "3"})
    hp = p["HyperParameters"]
    assert hp["epochs"] == "3"
    keys = sorted(k for k in hp if k.startswith("torchx_appdef_"))
    assert keys == ["torchx_appdef_0", "torchx_appdef_1"]
    assert all(len(hp[k]) <= HYPERPARAMETER_MAX for k in keys)
    assert appdef_of({"HyperParameters": hp}) == a  # as written: every field
    assert appdef_of({}) is None and appdef_of({"HyperParameters": {"epochs": "3"}}) is None
    # one over 8 KiB is left out, and the request says why (the dry run warns)
    opts = SageMakerOpts.from_cfg(SageMakerOpts.as_runopts().resolve({"role": ROLE_ARN}))
    big = build_request(app(args=["x" * 250] * 36), opts, "0.1.0")
    assert "HyperParameters" not in big.params
    assert big.appdef_left_out.startswith("it is 9")
