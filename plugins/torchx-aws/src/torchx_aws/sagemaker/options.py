"""The ``aws_sagemaker`` scheduler's run options, and the checks made before AWS is asked.

The names are upstream TorchX's (``role``, ``instance_type``, ``instance_count``,
``max_run``, ``use_spot_instances``, ``checkpoint_s3_uri``, ...), so an existing
``[aws_sagemaker]`` section of ``.torchxconfig`` keeps working, with these differences:

* upstream hands its options to the SageMaker Python SDK's PyTorch estimator, which
  uploads a local ``source_dir`` and runs an entry-point script in SageMaker's own
  PyTorch image. This scheduler calls ``CreateTrainingJob`` itself and runs the role's
  ``entrypoint`` and ``args`` in the role's image (the image carries the code), so the
  options that only steer the upload (``source_dir``, ``git_config``,
  ``code_location``, ``dependencies``, ``container_log_level``) are refused with one
  line saying so, rather than silently ignored;
* ``tags`` and ``metric_definitions`` are mappings (``-cfg tags=team:ml,env:dev``,
  ``metric_definitions=loss:loss=(\\S+)``), not upstream's lists of dicts;
* ``instance_type`` is not required: the role's named resource gives it
  (``aws_p4d.24xlarge`` is ``ml.p4d.24xlarge``); ``instance_count`` defaults to the
  role's ``num_replicas``;
* ``region`` and ``profile`` choose the AWS configuration, as for ``aws_batch``.

Every option is declared once, as a field of :class:`SageMakerOpts` (its type, default,
help and check): ``run_opts()``, a submit (``SageMakerOpts.of(cfg)``) and ``list``
(``SageMakerOpts.given(cfg)``) read it.

>>> opts = SageMakerOpts.as_runopts()
>>> cfg = SageMakerOpts.from_cfg(opts.resolve({"role": "arn:aws:iam::123456789012:role/sm", "max_run": 600}))
>>> cfg.max_run, cfg.volume_size, cfg.input_mode
(600, 30, 'File')
>>> SageMakerOpts.from_cfg(opts.resolve({"role": "sm", "source_dir": "."}))
Traceback (most recent call last):
 ...
torchx.specs.errors.InvalidRunConfigException: run option 'source_dir' is the SageMaker Python SDK's code upload, which aws_sagemaker does not use: it runs the role's entrypoint in the role's image, so put the code in the image
"""

from __future__ import annotations

import getpass
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from torchx.specs.errors import InvalidRunConfigException
from torchx.specs.structured_opts import StructuredOpts, opt

#: SageMaker's defaults for what CreateTrainingJob requires and upstream left to the SDK.
DEFAULT_MAX_RUN = 24 * 60 * 60
DEFAULT_VOLUME_SIZE = 30
DEFAULT_INPUT_MODE = "File"

#: Upstream's options that only steer the SDK's code upload (refused when set).
SDK_UPLOAD_OPTIONS = ("source_dir", "git_config", "code_location", "dependencies")

_INPUT_MODES = ("File", "Pipe", "FastFile")
_ACCESS_MODES = ("Platform", "Vpc")


def _user() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no passwd entry (a container with a numeric uid)
        return "unknown"


# -- the checks ---------------------------------------------------------------------------


def _or(default: str) -> Callable[[str], str]:
    """An empty value is the default."""

    def check(value: str) -> str:
        return str(value) or default

    return check


def _positive(name: str) -> Callable[[int], int]:
    def check(value: int) -> int:
        if value <= 0:
            raise InvalidRunConfigException(
                f"run option {name!r}={value} must be a positive number"
            )
        return value

    return check


def _retries(value: int) -> int:
    _positive("max_retry_attempts")(value)
    if value > 30:
        raise InvalidRunConfigException(
            f"run option 'max_retry_attempts'={value} must be between 1 and 30"
        )
    return value


def _one_of(name: str, allowed: Sequence[str]) -> Callable[[str], str]:
    def check(value: str) -> str:
        if value not in allowed:
            raise InvalidRunConfigException(
                f"run option {name!r}={value!r} is not one of {', '.join(allowed)}"
            )
        return value

    return check


def _refused(name: str) -> Callable[[object], object]:
    def check(value: object) -> object:
        raise InvalidRunConfigException(
            f"run option {name!r} is the SageMaker Python SDK's code upload, which "
            "aws_sagemaker does not use: it runs the role's entrypoint in the role's "
            "image, so put the code in the image"
        )

    return check


@dataclass(frozen=True, kw_only=True)
class SageMakerOpts(StructuredOpts):
    """The run options of ``aws_sagemaker`` (``torchx runopts aws_sagemaker``), each checked."""

    role: str = opt(
        required=True,
        help="the IAM role the training job runs as: its ARN, or its name (looked up in IAM)",
    )
    instance_type: str | None = opt(
        help=(
            "the instance type, e.g. ml.p4d.24xlarge (or p4d.24xlarge); default: the one the "
            "role's named resource stands for (-h aws_p4d.24xlarge)"
        )
    )
    instance_count: int | None = opt(
        help="number of instances; default: the role's num_replicas",
        check=_positive("instance_count"),
    )
    user: str = opt(_user(), help="the user name the job is tagged with", check=_or("unknown"))
    image_repo: str | None = opt(
        help=(
            "the image repository a workspace image is pushed to (e.g. an ECR repository, "
            "123456789012.dkr.ecr.us-east-1.amazonaws.com/team); needed with --workspace "
            "(built by torchx-docker: pip install 'torchx-aws[docker]')"
        )
    )
    region: str | None = opt(
        help=(
            "the AWS region (default: AWS_REGION / AWS_DEFAULT_REGION / the profile's); a job"
            " submitted with it carries it in its handle"
        )
    )
    profile: str | None = opt(help="the AWS profile (default: AWS_PROFILE)")
    base_job_name: str | None = opt(
        help="prefix of the training job's name (default: the app's name)"
    )
    max_run: int = opt(
        DEFAULT_MAX_RUN,
        help="seconds the job may run before SageMaker stops it",
        check=_positive("max_run"),
    )
    use_spot_instances: bool = opt(
        False, help="train on managed spot instances (then max_wait applies)"
    )
    max_wait: int | None = opt(
        help=(
            "seconds to wait for spot capacity and run, at least max_run (default with spot: "
            "max_run)"
        ),
        check=_positive("max_wait"),
    )
    checkpoint_s3_uri: str | None = opt(
        help="S3 URI SageMaker syncs the checkpoint directory with (resumes spot jobs)"
    )
    checkpoint_local_path: str | None = opt(
        help="the checkpoint directory in the container (default: /opt/ml/checkpoints)"
    )
    output_path: str | None = opt(
        help=(
            "S3 URI of the job's output; default: s3://sagemaker-{region}-{account}/, the "
            "bucket SageMaker's SDK uses (it must exist)"
        )
    )
    output_kms_key: str | None = opt(help="KMS key of the output")
    disable_output_compression: bool = opt(False, help="upload the output without compressing it")
    volume_size: int = opt(
        DEFAULT_VOLUME_SIZE,
        help="GB of storage attached to each instance",
        check=_positive("volume_size"),
    )
    volume_kms_key: str | None = opt(help="KMS key of the storage volume")
    keep_alive_period_in_seconds: int | None = opt(
        help="seconds the instances stay in a warm pool for the next job",
        check=_positive("keep_alive_period_in_seconds"),
    )
    input_mode: str = opt(
        DEFAULT_INPUT_MODE,
        help="how input data reaches the container: File, Pipe or FastFile",
        check=_one_of("input_mode", _INPUT_MODES),
    )
    model_uri: str | None = opt(
        help="S3 URI of a pre-trained model, given to the job as an input channel"
    )
    model_channel_name: str = opt("model", help="that channel's name", check=_or("model"))
    environment: dict[str, str] | None = opt(
        help="environment variables of the job (KEY:VALUE,...); the role's env wins"
    )
    hyperparameters: dict[str, str] | None = opt(
        help=("hyperparameters of the job (written to /opt/ml/input/config/hyperparameters.json)")
    )
    tags: dict[str, str] | None = opt(
        help="tags of the training job (KEY:VALUE,...), beside the app's metadata"
    )
    metric_definitions: dict[str, str] | None = opt(
        help="metrics SageMaker reads from the log: NAME:REGEX,..."
    )
    enable_sagemaker_metrics: bool | None = opt(help="record the metrics as a time series")
    subnets: list[str] | None = opt(
        help="subnet ids of the VPC the job runs in (with security_group_ids)"
    )
    security_group_ids: list[str] | None = opt(
        help="security group ids of the VPC the job runs in (with subnets)"
    )
    enable_network_isolation: bool = opt(False, help="run the container without network access")
    encrypt_inter_container_traffic: bool = opt(
        False, help="encrypt the traffic between the instances"
    )
    max_retry_attempts: int | None = opt(
        help="times SageMaker retries the job after an internal error of its own (1-30)",
        check=_retries,
    )
    training_repository_access_mode: str | None = opt(
        help="how SageMaker reaches the image: Platform (ECR) or Vpc (a private registry)",
        check=_one_of("training_repository_access_mode", _ACCESS_MODES),
    )
    training_repository_credentials_provider_arn: str | None = opt(
        help="Lambda function giving the private registry's credentials (access mode Vpc)"
    )
    enable_infra_check: bool | None = opt(
        help="run SageMaker's infrastructure health check before training"
    )
    debugger_hook_config: bool | None = opt(
        help="true: SageMaker Debugger saves tensors under output_path"
    )
    disable_profiler: bool | None = opt(help="turn SageMaker's profiler off")
    source_dir: str | None = opt(
        help="upstream's SDK code upload: refused (the role's image carries the code)",
        check=_refused("source_dir"),
    )
    git_config: str | None = opt(
        help="upstream's SDK code upload: refused (the role's image carries the code)",
        check=_refused("git_config"),
    )
    code_location: str | None = opt(
        help="upstream's SDK code upload: refused (the role's image carries the code)",
        check=_refused("code_location"),
    )
    dependencies: str | None = opt(
        help="upstream's SDK code upload: refused (the role's image carries the code)",
        check=_refused("dependencies"),
    )
    container_log_level: int | None = opt(
        help="upstream's SDK log level: refused (set it in the role's env)",
        check=_refused("container_log_level"),
    )

    def __post_init__(self) -> None:
        if self.max_wait is not None and not self.use_spot_instances:
            raise InvalidRunConfigException(
                "run option 'max_wait' applies to spot training only: add use_spot_instances=True"
            )
        if self.max_wait is not None and self.max_wait < self.max_run:
            raise InvalidRunConfigException(
                f"run option 'max_wait'={self.max_wait} must be at least max_run "
                f"({self.max_run}): it counts the wait for spot capacity and the run together"
            )
        if bool(self.subnets) != bool(self.security_group_ids):
            raise InvalidRunConfigException(
                "run options 'subnets' and 'security_group_ids' go together: give both or neither"
            )
