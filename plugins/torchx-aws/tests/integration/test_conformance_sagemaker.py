"""The Scheduler contract's conformance kit against aws_sagemaker, with jobs running in containers.

The emulator (moto, with dev/aws_moto_sagemaker.py) runs each training job's instances
as containers of the busybox image on the Docker engine, with SageMaker's statuses,
``FailureReason``, ``StopTrainingJob`` and a CloudWatch Logs stream per instance. Only
what SageMaker itself lacks (the scheduler's ``missing_capabilities``) is declared:
nothing for the emulator.

What SageMaker forces on the kit's apps: ``CreateTrainingJob`` takes no argument over
256 characters and at most 100 of them (API reference, AlgorithmSpecification), and
the scheduler's dry run refuses more, as AWS would. The kit's ``sh`` program and its
steps (hundreds of lines, one of 5,000 characters) are longer, so
:class:`SageMakerAppBuilder` carries them in the role's env instead (values of at most
512 characters, SageMaker's limit), and the one argument evaluates them.
"""

from __future__ import annotations

import re
import shlex
import uuid
from collections.abc import Iterator, Sequence
from typing import Any

import pytest
from awsenv import busybox
from torchx_aws.replica_sh import REPLICA_MARK
from torchx_aws.sagemaker.scheduler import AWSSageMakerScheduler, create_scheduler

from torchx.schedulers.testing import AppBuilder, SchedulerConformance
from torchx.schedulers.testing.apps import SH_PROGRAM, Step
from torchx.specs import Resource, Role, macros

#: Characters per env piece: SageMaker's longest value is 512.
PIECE = 500


def pieces(text: str, size: int = PIECE) -> list[str]:
    """``text`` cut into pieces of at most ``size`` characters once submitted, never inside
    ``${replica_id}`` (the scheduler submits it as a longer mark, filled in where it stands
    in one env value on each instance).

    >>> pieces("ab${replica_id}cd", 23)
    ['ab${replica_id}', 'cd']
    """
    out = [""]
    cost = 0
    for token in re.split(r"(\$\{replica_id\})", text):
        if token == macros.replica_id:
            if cost + len(REPLICA_MARK) > size:
                out.append("")
                cost = 0
            out[-1] += token
            cost += len(REPLICA_MARK)
            continue
        while token:
            if cost >= size:
                out.append("")
                cost = 0
            part = token[: size - cost]
            out[-1] += part
            cost += len(part)
            token = token[len(part) :]
    return [p for p in out if p]


class SageMakerAppBuilder(AppBuilder):
    """The kit's ``sh`` program and steps in the role's env, within SageMaker's limits."""

    def role(
        self, name: str, steps: Sequence[Step], num_replicas: int = 1, max_retries: int = 0
    ) -> Role:
        script = "set -- " + " ".join(map(shlex.quote, self.step_args(steps))) + "\n"
        parts = pieces(script + SH_PROGRAM)
        env = {f"K{i}": part for i, part in enumerate(parts)}
        run = 'eval "' + "".join(f"${k}" for k in env) + '"'
        assert len(run) <= 256, f"{len(parts)} pieces make an argument SageMaker refuses"
        role = super().role(name, [], num_replicas, max_retries)
        role.args = ["-c", run]
        role.env.update(env)
        return role


@pytest.fixture(scope="session")
def sagemaker_role(endpoint: str) -> Iterator[str]:
    """An IAM role of the emulator's account for the training jobs (its name)."""
    import boto3

    iam = boto3.client("iam")
    name = f"torchx-kit-{uuid.uuid4().hex[:8]}"
    iam.create_role(RoleName=name, AssumeRolePolicyDocument="{}")
    yield name
    iam.delete_role(RoleName=name)


class TestAwsSageMakerConformance(SchedulerConformance):
    timeout = 120
    cancel_timeout = 60

    @pytest.fixture
    def scheduler(self, sagemaker_role: str) -> AWSSageMakerScheduler:
        return create_scheduler("kit")

    @pytest.fixture
    def cfg(self, sagemaker_role: str) -> dict[str, Any]:
        return {"role": sagemaker_role, "max_run": 600}

    @pytest.fixture
    def app_builder(self) -> AppBuilder:
        return SageMakerAppBuilder(
            image=busybox(),
            shell="sh",
            resource=Resource(
                cpu=1,
                gpu=0,
                memMB=128,
                capabilities={"node.kubernetes.io/instance-type": "m5.large"},
            ),
        )


def test_pieces_keep_every_macro_whole() -> None:
    text = ("a" * 7 + macros.replica_id) * 40
    for size in (21, 30, 100, 500):
        got = pieces(text, size)
        assert "".join(got) == text
        assert all(p.count("${") == p.count("}") for p in got), got
        assert all(len(p.replace(macros.replica_id, REPLICA_MARK)) <= size for p in got), got
