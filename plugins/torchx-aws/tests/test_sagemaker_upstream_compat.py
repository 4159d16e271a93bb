"""What upstream TorchX users already have keeps working: an ``[aws_sagemaker]`` section."""

from __future__ import annotations

from pathlib import Path

import pytest

from torchx.runner import get_runner
from torchx.specs import AppDef, Role, resource

# a .torchxconfig as an upstream user writes it (upstream's option names)
UPSTREAM_CONFIG = """\
[aws_sagemaker]
role = arn:aws:iam::123456789012:role/sm
instance_type = ml.p4d.24xlarge
instance_count = 2
user = alice
max_run = 7200
use_spot_instances = True
max_wait = 10800
checkpoint_s3_uri = s3://bucket/ckpt
output_path = s3://bucket/out
volume_size = 100
base_job_name = nightly
input_mode = FastFile
enable_network_isolation = True
"""


def test_an_upstream_section_configures_the_training_job(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / ".torchxconfig"
    config.write_text(UPSTREAM_CONFIG)
    monkeypatch.setenv("TORCHXCONFIG", str(config))
    monkeypatch.chdir(tmp_path)
    role = Role(
        "trainer", image="train:1", entrypoint="python", resource=resource(cpu=8, gpu=0, memMB=1024)
    )
    with get_runner() as runner:
        info = runner.dryrun(AppDef("trainer", roles=[role]), "aws_sagemaker")
    p = info.request.params
    assert p["RoleArn"] == "arn:aws:iam::123456789012:role/sm"
    assert p["TrainingJobName"].startswith("nightly-")
    assert p["ResourceConfig"] == {
        "InstanceType": "ml.p4d.24xlarge",
        "InstanceCount": 2,
        "VolumeSizeInGB": 100,
    }
    assert p["StoppingCondition"] == {"MaxRuntimeInSeconds": 7200, "MaxWaitTimeInSeconds": 10800}
    assert p["EnableManagedSpotTraining"] is True
    assert p["CheckpointConfig"] == {"S3Uri": "s3://bucket/ckpt"}
    assert p["OutputDataConfig"] == {"S3OutputPath": "s3://bucket/out"}
    assert p["AlgorithmSpecification"]["TrainingInputMode"] == "FastFile"
    assert p["EnableNetworkIsolation"] is True
    assert {"Key": "torchx.pytorch.org/user", "Value": "alice"} in p["Tags"]


def test_an_upstream_source_dir_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / ".torchxconfig"
    config.write_text("[aws_sagemaker]\nrole = sm\nsource_dir = /home/me/project\n")
    monkeypatch.setenv("TORCHXCONFIG", str(config))
    monkeypatch.chdir(tmp_path)
    role = Role(
        "trainer", image="train:1", entrypoint="python", resource=resource(h="aws_m5.2xlarge")
    )
    with get_runner() as runner, pytest.raises(ValueError) as err:
        runner.dryrun(AppDef("trainer", roles=[role]), "aws_sagemaker")
    assert "source_dir" in str(err.value) and "put the code in the image" in str(err.value)
    assert "\n" not in str(err.value)
