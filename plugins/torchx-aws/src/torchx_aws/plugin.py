"""torchx-aws's plugin module: its schedulers by lazy reference, nothing heavy.

TorchX imports this module on every start (the ``torchx`` entry point ``aws`` names
it), so it imports only the ``hookimpl`` marker: neither boto3 nor a scheduler module
is loaded until a job goes to AWS. Each scheduler lives in a sub-package of its own
(``torchx_aws.batch``, ``torchx_aws.sagemaker``) and is named in :data:`SCHEDULERS`.
"""

from __future__ import annotations

from collections.abc import Mapping

from torchx.specs.hookspecs import hookimpl

#: Scheduler name (upstream TorchX's) -> ``"module:factory"``, imported when first used.
SCHEDULERS: Mapping[str, str] = {
    "aws_batch": "torchx_aws.batch.scheduler:create_scheduler",
    "aws_sagemaker": "torchx_aws.sagemaker.scheduler:create_scheduler",
}


@hookimpl
def torchx_schedulers() -> Mapping[str, str]:
    """Every AWS scheduler of this distribution (see :data:`SCHEDULERS`)."""
    return dict(SCHEDULERS)
