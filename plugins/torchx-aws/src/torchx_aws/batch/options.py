"""The ``aws_batch`` scheduler's run options, checked before AWS is asked anything.

The names are upstream TorchX's (``queue``, ``user``, ``image_repo``, ``privileged``,
``share_id``, ``priority``, ``job_role_arn``, ``execution_role_arn``, ``ulimits``), so an
existing ``[aws_batch]`` section of ``.torchxconfig`` works unchanged; ``region`` and
``profile`` are ours (boto3's configuration otherwise, see :mod:`torchx_aws.session`).

Every option is declared once, as a field of :class:`BatchOpts` (its type, default, help
and check): ``run_opts()``, a submit (``BatchOpts.of(cfg)``) and ``list``
(``BatchOpts.given(cfg)``: the queue, region and profile given, held to the same checks)
all read it.

>>> opts = BatchOpts.as_runopts()
>>> cfg = opts.resolve({"queue": "gpu", "ulimits": ["nofile:65536:65536", "memlock:-1:-1"]})
>>> BatchOpts.from_cfg(cfg).ulimit_specs
({'name': 'nofile', 'softLimit': 65536, 'hardLimit': 65536}, {'name': 'memlock', 'softLimit': -1, 'hardLimit': -1})
>>> BatchOpts.from_cfg(opts.resolve({"queue": "gpu", "ulimits": ["nofile=1"]}))
Traceback (most recent call last):
 ...
torchx.specs.errors.InvalidRunConfigException: run option 'ulimits' has 'nofile=1': give NAME:SOFT:HARD (e.g. nofile:65536:65536), limits as integers (-1: unlimited)
"""

from __future__ import annotations

import getpass
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from torchx.specs.errors import InvalidRunConfigException
from torchx.specs.structured_opts import StructuredOpts, opt

# a queue's or share's name as AWS allows it (letters, digits, '-', '_', up to 128)
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,127}")
_ARN = re.compile(r"arn:aws[a-z-]*:iam::\d{12}:role/\S+")
_REGION = re.compile(r"[a-z]{2}(-[a-z]+)+-\d")


def _user() -> str:
    try:
        return getpass.getuser()
    except Exception:
        return "unknown"


def _text(key: str) -> Callable[[str], str]:
    """The check of a text option: stripped, never empty."""

    def check(value: str) -> str:
        text = str(value).strip()
        if not text:
            raise InvalidRunConfigException(
                f"run option {key!r} is empty: give a value or leave it out"
            )
        return text

    return check


def _queue(value: str) -> str:
    queue = _text("queue")(value)
    if not _NAME.fullmatch(queue):
        raise InvalidRunConfigException(
            f"run option 'queue'={queue!r} is not a job queue name: 1 to 128 letters, "
            "digits, '-' or '_' (e.g. queue=gpu-queue)"
        )
    return queue


def _priority(value: int) -> int:
    if not 0 <= value <= 9999:
        raise InvalidRunConfigException(f"run option 'priority'={value} is out of range: 0 to 9999")
    return value


def _role_arn(key: str) -> Callable[[str], str]:
    def check(value: str) -> str:
        arn = _text(key)(value)
        if not _ARN.fullmatch(arn):
            raise InvalidRunConfigException(
                f"run option {key!r}={arn!r} is not an IAM role ARN (e.g. "
                "arn:aws:iam::123456789012:role/my-role)"
            )
        return arn

    return check


def _region(value: str) -> str:
    region = _text("region")(value)
    if not _REGION.fullmatch(region):
        raise InvalidRunConfigException(
            f"run option 'region'={region!r} is not an AWS region (e.g. us-east-1)"
        )
    return region


def _ulimits(value: list[str]) -> list[str]:
    for text in value:
        _ulimit(str(text))
    return [str(text) for text in value]


@dataclass(frozen=True, kw_only=True)
class BatchOpts(StructuredOpts):
    """The run options of ``aws_batch`` (``torchx runopts aws_batch``), each checked."""

    queue: str = opt(required=True, help="the job queue to submit to", check=_queue)
    user: str = opt(
        _user(),
        help="the user the job is tagged with (torchx.pytorch.org/user)",
        check=_text("user"),
    )
    image_repo: str | None = opt(
        help="the image repository a workspace image is pushed to (e.g. an ECR "
        "repository, 123456789012.dkr.ecr.us-east-1.amazonaws.com/team); needed with "
        "--workspace (built by torchx-docker: pip install 'torchx-aws[docker]')",
        check=_text("image_repo"),
    )
    privileged: bool = opt(False, help="run every container privileged")
    share_id: str | None = opt(
        help="the share identifier of a fair-share queue", check=_text("share_id")
    )
    priority: int = opt(
        0,
        help="the scheduling priority in a fair-share queue (0 to 9999; needs share_id)",
        check=_priority,
    )
    job_role_arn: str | None = opt(
        help="the IAM role the containers act as (their AWS credentials)",
        check=_role_arn("job_role_arn"),
    )
    execution_role_arn: str | None = opt(
        help="the IAM role the container agent uses (image pulls, logs)",
        check=_role_arn("execution_role_arn"),
    )
    ulimits: list[str] | None = opt(
        help="ulimits of every container, NAME:SOFT:HARD,... (e.g. nofile:65536:65536; "
        "-1: unlimited)",
        check=_ulimits,
    )
    region: str | None = opt(
        help="the AWS region (default: AWS_DEFAULT_REGION, AWS_REGION or the profile's)",
        check=_region,
    )
    profile: str | None = opt(
        help="the AWS profile of ~/.aws/config to use (default: AWS_PROFILE, else the "
        "default chain)",
        check=_text("profile"),
    )

    def __post_init__(self) -> None:
        if self.priority and self.share_id is None:
            raise InvalidRunConfigException(
                "run option 'priority' needs 'share_id': scheduling priorities apply only in "
                "fair-share queues (give share_id=..., or leave priority out)"
            )

    @property
    def ulimit_specs(self) -> tuple[dict[str, Any], ...]:
        """``ulimits`` as the job definition's ``ulimits`` entries."""
        return tuple(_ulimit(u) for u in self.ulimits or ())


def _ulimit(text: str) -> dict[str, Any]:
    parts = text.split(":")
    try:
        if len(parts) != 3 or not parts[0]:
            raise ValueError
        return {"name": parts[0], "softLimit": int(parts[1]), "hardLimit": int(parts[2])}
    except ValueError:
        raise InvalidRunConfigException(
            f"run option 'ulimits' has {text!r}: give NAME:SOFT:HARD (e.g. "
            "nofile:65536:65536), limits as integers (-1: unlimited)"
        ) from None
