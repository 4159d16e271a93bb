"""The ``aws_batch`` scheduler's run options, checked before AWS is asked anything.

The names are upstream TorchX's (``queue``, ``user``, ``image_repo``, ``privileged``,
``share_id``, ``priority``, ``job_role_arn``, ``execution_role_arn``, ``ulimits``), so an
existing ``[aws_batch]`` section of ``.torchxconfig`` works unchanged; ``region`` and
``profile`` are ours (boto3's configuration otherwise, see :mod:`torchx_aws.session`).

>>> opts = batch_runopts()
>>> cfg = opts.resolve({"queue": "gpu", "ulimits": ["nofile:65536:65536", "memlock:-1:-1"]})
>>> read(cfg).ulimits
({'name': 'nofile', 'softLimit': 65536, 'hardLimit': 65536}, {'name': 'memlock', 'softLimit': -1, 'hardLimit': -1})
>>> read(opts.resolve({"queue": "gpu", "ulimits": ["nofile=1"]}))
Traceback (most recent call last):
 ...
torchx.specs.errors.InvalidRunConfigException: run option 'ulimits' has 'nofile=1': give NAME:SOFT:HARD (e.g. nofile:65536:65536), limits as integers (-1: unlimited)
"""

from __future__ import annotations

import getpass
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from torchx.specs.errors import InvalidRunConfigException
from torchx.specs.options import CfgVal, runopts

# a queue's or share's name as AWS allows it (letters, digits, '-', '_', up to 128)
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,127}")
_ARN = re.compile(r"arn:aws[a-z-]*:iam::\d{12}:role/\S+")
_REGION = re.compile(r"[a-z]{2}(-[a-z]+)+-\d")


def _user() -> str:
    try:
        return getpass.getuser()
    except Exception:
        return "unknown"


def batch_runopts() -> runopts:
    """The run options of ``aws_batch`` (see ``torchx runopts aws_batch``)."""
    opts = runopts()
    opts.add("queue", type_=str, required=True, help="the job queue to submit to")
    opts.add(
        "user",
        type_=str,
        default=_user(),
        help="the user the job is tagged with (torchx.pytorch.org/user)",
    )
    opts.add(
        "image_repo",
        type_=str,
        default=None,
        help="the image repository a workspace image is pushed to (e.g. an ECR "
        "repository, 123456789012.dkr.ecr.us-east-1.amazonaws.com/team); needed with "
        "--workspace (built by torchx-docker: pip install 'torchx-aws[docker]')",
    )
    opts.add("privileged", type_=bool, default=False, help="run every container privileged")
    opts.add(
        "share_id",
        type_=str,
        default=None,
        help="the share identifier of a fair-share queue",
    )
    opts.add(
        "priority",
        type_=int,
        default=0,
        help="the scheduling priority in a fair-share queue (0 to 9999; needs share_id)",
    )
    opts.add(
        "job_role_arn",
        type_=str,
        default=None,
        help="the IAM role the containers act as (their AWS credentials)",
    )
    opts.add(
        "execution_role_arn",
        type_=str,
        default=None,
        help="the IAM role the container agent uses (image pulls, logs)",
    )
    opts.add(
        "ulimits",
        type_=list[str],
        default=None,
        help="ulimits of every container, NAME:SOFT:HARD,... (e.g. nofile:65536:65536; "
        "-1: unlimited)",
    )
    opts.add(
        "region",
        type_=str,
        default=None,
        help="the AWS region (default: AWS_DEFAULT_REGION, AWS_REGION or the profile's)",
    )
    opts.add(
        "profile",
        type_=str,
        default=None,
        help="the AWS profile of ~/.aws/config to use (default: AWS_PROFILE, else the "
        "default chain)",
    )
    return opts


@dataclass(frozen=True)
class BatchOpts:
    """The run options, checked and typed (read them with :func:`read`)."""

    queue: str
    user: str = "unknown"
    privileged: bool = False
    share_id: str | None = None
    priority: int = 0
    job_role_arn: str | None = None
    execution_role_arn: str | None = None
    ulimits: tuple[dict[str, Any], ...] = ()
    region: str | None = None
    profile: str | None = None
    image_repo: str | None = None


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


def _opt_str(cfg: Mapping[str, CfgVal], key: str) -> str | None:
    value = cfg.get(key)
    if value is None:
        return None
    text = str(value).strip()
    if not text:
        raise InvalidRunConfigException(
            f"run option {key!r} is empty: give a value or leave it out"
        )
    return text


def _queue(cfg: Mapping[str, CfgVal], required: bool) -> str | None:
    queue = _opt_str(cfg, "queue")
    if (queue is None and required) or (queue is not None and not _NAME.fullmatch(queue)):
        raise InvalidRunConfigException(
            f"run option 'queue'={queue!r} is not a job queue name: 1 to 128 letters, "
            "digits, '-' or '_' (e.g. queue=gpu-queue)"
        )
    return queue


def _region(cfg: Mapping[str, CfgVal]) -> str | None:
    region = _opt_str(cfg, "region")
    if region is not None and not _REGION.fullmatch(region):
        raise InvalidRunConfigException(
            f"run option 'region'={region!r} is not an AWS region (e.g. us-east-1)"
        )
    return region


def read_scope(cfg: Mapping[str, CfgVal]) -> tuple[str | None, str | None, str | None]:
    """(queue, region, profile) of ``cfg`` for ``list``, checked as :func:`read` checks
    them for a submit; the queue may be left out (``list`` then reads every queue)."""
    return _queue(cfg, required=False), _region(cfg), _opt_str(cfg, "profile")


def read(cfg: Mapping[str, CfgVal]) -> BatchOpts:
    """The resolved run options ``cfg`` as :class:`BatchOpts`, each value checked."""
    queue = _queue(cfg, required=True)
    assert queue is not None  # required
    share_id = _opt_str(cfg, "share_id")
    priority = int(cfg.get("priority") or 0)  # type: ignore[arg-type]
    if not 0 <= priority <= 9999:
        raise InvalidRunConfigException(
            f"run option 'priority'={priority} is out of range: 0 to 9999"
        )
    if priority and share_id is None:
        raise InvalidRunConfigException(
            "run option 'priority' needs 'share_id': scheduling priorities apply only in "
            "fair-share queues (give share_id=..., or leave priority out)"
        )
    roles = {}
    for key in ("job_role_arn", "execution_role_arn"):
        arn = _opt_str(cfg, key)
        if arn is not None and not _ARN.fullmatch(arn):
            raise InvalidRunConfigException(
                f"run option {key!r}={arn!r} is not an IAM role ARN (e.g. "
                "arn:aws:iam::123456789012:role/my-role)"
            )
        roles[key] = arn
    region = _region(cfg)
    ulimits = tuple(_ulimit(str(u)) for u in (cfg.get("ulimits") or []))  # type: ignore[union-attr]
    return BatchOpts(
        queue=queue,
        user=_opt_str(cfg, "user") or "unknown",
        privileged=bool(cfg.get("privileged")),
        share_id=share_id,
        priority=priority,
        job_role_arn=roles["job_role_arn"],
        execution_role_arn=roles["execution_role_arn"],
        ulimits=ulimits,
        region=region,
        profile=_opt_str(cfg, "profile"),
        image_repo=_opt_str(cfg, "image_repo"),
    )
