"""The aws_batch scheduler is registered, and its dry run never imports boto3."""

from __future__ import annotations

from test_plugin import _modules_after
from torchx_aws.batch.scheduler import AwsBatchScheduler

from torchx.specs.plugins import get_registry


def test_aws_batch_creates_the_scheduler() -> None:
    sched = get_registry().scheduler_factory("aws_batch")("sess")
    assert isinstance(sched, AwsBatchScheduler)
    assert sched.session_name == "sess" and sched.backend == "aws_batch"


def test_a_dry_run_never_imports_boto3() -> None:
    code = """
import sys
from torchx.specs import AppDef, Role, Resource
from torchx_aws.batch.scheduler import create_scheduler
r = Resource(cpu=1, gpu=0, memMB=64)
app = AppDef("a", [Role("r", "img", entrypoint="echo", num_replicas=16, resource=r)])
info = create_scheduler("s").prepare(app, {"queue": "q"}, dryrun=True)
assert info.request.num_nodes == 16
"""
    loaded = _modules_after(code)
    assert "torchx_aws.batch.scheduler" in loaded
    assert not [m for m in loaded if m.split(".")[0] in ("boto3", "botocore")]
