"""torchx-aws is found like any plugin, and importing it never imports boto3."""

from __future__ import annotations

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
