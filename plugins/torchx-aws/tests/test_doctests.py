"""The examples in the modules' docstrings run as shown (docs as a test)."""

from __future__ import annotations

from torchx.schedulers.testing import DocstringExamples


class TestExamples(DocstringExamples):
    package = "torchx_aws"
    #: The modules whose docstrings show examples; each must have at least one.
    modules = [
        "torchx_aws.appdef_doc",
        "torchx_aws.batch.options",
        "torchx_aws.batch.request",
        "torchx_aws.batch.status",
        "torchx_aws.errors",
        "torchx_aws.recent",
        "torchx_aws.replica_sh",
        "torchx_aws.sagemaker.options",
        "torchx_aws.sagemaker.request",
        "torchx_aws.sagemaker.scheduler",
        "torchx_aws.sagemaker.status",
    ]
