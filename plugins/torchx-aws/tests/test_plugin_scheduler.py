"""The aws_batch scheduler is registered, and its dry run never imports boto3."""

from __future__ import annotations

from pathlib import Path

import pytest
from torchx_aws.batch.scheduler import AwsBatchScheduler

from torchx.schedulers.testing.registration import modules_after
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
    loaded = modules_after(code)
    assert "torchx_aws.batch.scheduler" in loaded
    assert not [m for m in loaded if m.split(".")[0] in ("boto3", "botocore")]


def test_a_workspace_without_torchx_docker_is_one_line(tmp_path: Path) -> None:
    # torchx-docker (the extra ``docker``) is not installed with torchx-aws alone
    from torchx_aws.batch.scheduler import create_scheduler

    from torchx.specs import AppDef, Resource, Role
    from torchx.specs.errors import SpecError

    app = AppDef(
        "a", [Role("r", "img", entrypoint="echo", resource=Resource(cpu=1, gpu=0, memMB=64))]
    )
    import importlib.util

    assert importlib.util.find_spec("torchx_docker") is None  # tested without the extra
    with pytest.raises(SpecError) as e:
        create_scheduler("s").prepare(
            app,
            {"queue": "q", "image_repo": "registry.example/team"},
            workspace=str(tmp_path),
            dryrun=True,
        )
    text = str(e.value)
    assert "pip install 'torchx-aws[docker]'" in text and "\n" not in text
