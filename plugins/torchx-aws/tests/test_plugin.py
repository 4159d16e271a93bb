"""torchx-aws is found like any plugin, and importing it never imports boto3."""

from __future__ import annotations

import pytest
from torchx_aws.batch.scheduler import AwsBatchScheduler
from torchx_aws.sagemaker.scheduler import AWSSageMakerScheduler

from torchx.schedulers.testing.registration import PluginRegistration


class TestRegistration(PluginRegistration):
    name = "aws"
    plugin_module = "torchx_aws.plugin"
    schedulers = {
        "aws_batch": "torchx_aws.batch.scheduler:create_scheduler",
        "aws_sagemaker": "torchx_aws.sagemaker.scheduler:create_scheduler",
    }
    scheduler_classes = {"aws_batch": AwsBatchScheduler, "aws_sagemaker": AWSSageMakerScheduler}
    heavy = ("boto3", "botocore")


@pytest.mark.parametrize("scheduler", ["aws_batch", "aws_sagemaker"])
def test_the_components_default_image_is_refused_at_dry_run(scheduler: str) -> None:
    """The built-ins' image ``"."`` (the launch directory) is no container image: one line."""
    from torchx.runner import InvalidAppError, get_runner

    with get_runner() as runner, pytest.raises(InvalidAppError) as caught:
        runner.dryrun_component("utils.echo", ["--msg", "hi"], scheduler)
    assert str(caught.value).endswith(
        f"but scheduler '{scheduler}' runs container images: pass one with --image "
        "(e.g. --image python:3.12)"
    )
