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

>>> opts = sagemaker_runopts()
>>> cfg = read(opts.resolve({"role": "arn:aws:iam::123456789012:role/sm", "max_run": 600}))
>>> cfg.max_run, cfg.volume_size, cfg.input_mode
(600, 30, 'File')
>>> read(opts.resolve({"role": "sm", "source_dir": "."}))
Traceback (most recent call last):
 ...
torchx.specs.errors.InvalidRunConfigException: run option 'source_dir' is the SageMaker Python SDK's code upload, which aws_sagemaker does not use: it runs the role's entrypoint in the role's image, so put the code in the image
"""

from __future__ import annotations

import getpass
from collections.abc import Mapping
from dataclasses import dataclass, field

from torchx.specs.errors import InvalidRunConfigException
from torchx.specs.options import CfgVal, runopts

#: SageMaker's defaults for what CreateTrainingJob requires and upstream left to the SDK.
DEFAULT_MAX_RUN = 24 * 60 * 60
DEFAULT_VOLUME_SIZE = 30
DEFAULT_INPUT_MODE = "File"

#: Upstream's options that only steer the SDK's code upload (refused when set).
SDK_UPLOAD_OPTIONS = ("source_dir", "git_config", "code_location", "dependencies")


def sagemaker_runopts() -> runopts:
    """The run options of ``aws_sagemaker`` (see ``torchx runopts aws_sagemaker``)."""
    opts = runopts()
    add = opts.add
    add(
        "role",
        type_=str,
        required=True,
        help="the IAM role the training job runs as: its ARN, or its name (looked up in IAM)",
    )
    add(
        "instance_type",
        type_=str,
        default=None,
        help="the instance type, e.g. ml.p4d.24xlarge (or p4d.24xlarge); default: the one "
        "the role's named resource stands for (-h aws_p4d.24xlarge)",
    )
    add(
        "instance_count",
        type_=int,
        default=None,
        help="number of instances; default: the role's num_replicas",
    )
    add("user", type_=str, default=_user(), help="the user name the job is tagged with")
    add(
        "image_repo",
        type_=str,
        default=None,
        help="the image repository a workspace image is pushed to (e.g. an ECR repository, "
        "123456789012.dkr.ecr.us-east-1.amazonaws.com/team); needed with --workspace "
        "(built by torchx-docker: pip install 'torchx-aws[docker]')",
    )
    add(
        "region",
        type_=str,
        default=None,
        help="the AWS region (default: AWS_REGION / AWS_DEFAULT_REGION / the profile's); "
        "a job submitted with it carries it in its handle",
    )
    add("profile", type_=str, default=None, help="the AWS profile (default: AWS_PROFILE)")
    add(
        "base_job_name",
        type_=str,
        default=None,
        help="prefix of the training job's name (default: the app's name)",
    )
    add(
        "max_run",
        type_=int,
        default=DEFAULT_MAX_RUN,
        help="seconds the job may run before SageMaker stops it",
    )
    add(
        "use_spot_instances",
        type_=bool,
        default=False,
        help="train on managed spot instances (then max_wait applies)",
    )
    add(
        "max_wait",
        type_=int,
        default=None,
        help="seconds to wait for spot capacity and run, at least max_run (default with "
        "spot: max_run)",
    )
    add(
        "checkpoint_s3_uri",
        type_=str,
        default=None,
        help="S3 URI SageMaker syncs the checkpoint directory with (resumes spot jobs)",
    )
    add(
        "checkpoint_local_path",
        type_=str,
        default=None,
        help="the checkpoint directory in the container (default: /opt/ml/checkpoints)",
    )
    add(
        "output_path",
        type_=str,
        default=None,
        help="S3 URI of the job's output; default: s3://sagemaker-{region}-{account}/, the "
        "bucket SageMaker's SDK uses (it must exist)",
    )
    add("output_kms_key", type_=str, default=None, help="KMS key of the output")
    add(
        "disable_output_compression",
        type_=bool,
        default=False,
        help="upload the output without compressing it",
    )
    add(
        "volume_size",
        type_=int,
        default=DEFAULT_VOLUME_SIZE,
        help="GB of storage attached to each instance",
    )
    add("volume_kms_key", type_=str, default=None, help="KMS key of the storage volume")
    add(
        "keep_alive_period_in_seconds",
        type_=int,
        default=None,
        help="seconds the instances stay in a warm pool for the next job",
    )
    add(
        "input_mode",
        type_=str,
        default=DEFAULT_INPUT_MODE,
        help="how input data reaches the container: File, Pipe or FastFile",
    )
    add(
        "model_uri",
        type_=str,
        default=None,
        help="S3 URI of a pre-trained model, given to the job as an input channel",
    )
    add("model_channel_name", type_=str, default="model", help="that channel's name")
    add(
        "environment",
        type_=dict[str, str],
        default=None,
        help="environment variables of the job (KEY:VALUE,...); the role's env wins",
    )
    add(
        "hyperparameters",
        type_=dict[str, str],
        default=None,
        help="hyperparameters of the job (written to /opt/ml/input/config/hyperparameters.json)",
    )
    add(
        "tags",
        type_=dict[str, str],
        default=None,
        help="tags of the training job (KEY:VALUE,...), beside the app's metadata",
    )
    add(
        "metric_definitions",
        type_=dict[str, str],
        default=None,
        help="metrics SageMaker reads from the log: NAME:REGEX,...",
    )
    add(
        "enable_sagemaker_metrics",
        type_=bool,
        default=None,
        help="record the metrics as a time series",
    )
    add(
        "subnets",
        type_=list[str],
        default=None,
        help="subnet ids of the VPC the job runs in (with security_group_ids)",
    )
    add(
        "security_group_ids",
        type_=list[str],
        default=None,
        help="security group ids of the VPC the job runs in (with subnets)",
    )
    add(
        "enable_network_isolation",
        type_=bool,
        default=False,
        help="run the container without network access",
    )
    add(
        "encrypt_inter_container_traffic",
        type_=bool,
        default=False,
        help="encrypt the traffic between the instances",
    )
    add(
        "max_retry_attempts",
        type_=int,
        default=None,
        help="times SageMaker retries the job after an internal error of its own (1-30)",
    )
    add(
        "training_repository_access_mode",
        type_=str,
        default=None,
        help="how SageMaker reaches the image: Platform (ECR) or Vpc (a private registry)",
    )
    add(
        "training_repository_credentials_provider_arn",
        type_=str,
        default=None,
        help="Lambda function giving the private registry's credentials (access mode Vpc)",
    )
    add(
        "enable_infra_check",
        type_=bool,
        default=None,
        help="run SageMaker's infrastructure health check before training",
    )
    add(
        "debugger_hook_config",
        type_=bool,
        default=None,
        help="true: SageMaker Debugger saves tensors under output_path",
    )
    add("disable_profiler", type_=bool, default=None, help="turn SageMaker's profiler off")
    for name in SDK_UPLOAD_OPTIONS:
        add(
            name,
            type_=str,
            default=None,
            help="upstream's SDK code upload: refused (the role's image carries the code)",
        )
    add(
        "container_log_level",
        type_=int,
        default=None,
        help="upstream's SDK log level: refused (set it in the role's env)",
    )
    return opts  # fmt: skip


def _user() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no passwd entry (a container with a numeric uid)
        return "unknown"


@dataclass(frozen=True)
class SageMakerOpts:
    """The run options, checked and typed (read them with :func:`read`)."""

    role: str
    instance_type: str | None = None
    instance_count: int | None = None
    user: str = "unknown"
    region: str | None = None
    profile: str | None = None
    base_job_name: str | None = None
    max_run: int = DEFAULT_MAX_RUN
    use_spot_instances: bool = False
    max_wait: int | None = None
    checkpoint_s3_uri: str | None = None
    checkpoint_local_path: str | None = None
    output_path: str | None = None
    output_kms_key: str | None = None
    disable_output_compression: bool = False
    volume_size: int = DEFAULT_VOLUME_SIZE
    volume_kms_key: str | None = None
    keep_alive_period_in_seconds: int | None = None
    input_mode: str = DEFAULT_INPUT_MODE
    model_uri: str | None = None
    model_channel_name: str = "model"
    environment: dict[str, str] = field(default_factory=dict)
    hyperparameters: dict[str, str] = field(default_factory=dict)
    tags: dict[str, str] = field(default_factory=dict)
    metric_definitions: dict[str, str] = field(default_factory=dict)
    enable_sagemaker_metrics: bool | None = None
    subnets: list[str] = field(default_factory=list)
    security_group_ids: list[str] = field(default_factory=list)
    enable_network_isolation: bool = False
    encrypt_inter_container_traffic: bool = False
    max_retry_attempts: int | None = None
    training_repository_access_mode: str | None = None
    training_repository_credentials_provider_arn: str | None = None
    enable_infra_check: bool | None = None
    debugger_hook_config: bool | None = None
    disable_profiler: bool | None = None


_INPUT_MODES = ("File", "Pipe", "FastFile")
_ACCESS_MODES = ("Platform", "Vpc")


def _positive(cfg: Mapping[str, CfgVal], name: str) -> int | None:
    value = cfg.get(name)
    if value is None:
        return None
    assert isinstance(value, int)
    if value <= 0:
        raise InvalidRunConfigException(f"run option {name!r}={value} must be a positive number")
    return value


def read(cfg: Mapping[str, CfgVal]) -> SageMakerOpts:
    """The resolved run options as a :class:`SageMakerOpts`; one line for each bad value."""
    for name in (*SDK_UPLOAD_OPTIONS, "container_log_level"):
        if cfg.get(name) is not None:
            raise InvalidRunConfigException(
                f"run option {name!r} is the SageMaker Python SDK's code upload, which "
                "aws_sagemaker does not use: it runs the role's entrypoint in the role's "
                "image, so put the code in the image"
            )
    input_mode = str(cfg.get("input_mode") or DEFAULT_INPUT_MODE)
    if input_mode not in _INPUT_MODES:
        raise InvalidRunConfigException(
            f"run option 'input_mode'={input_mode!r} is not one of {', '.join(_INPUT_MODES)}"
        )
    access = cfg.get("training_repository_access_mode")
    if access is not None and access not in _ACCESS_MODES:
        raise InvalidRunConfigException(
            f"run option 'training_repository_access_mode'={access!r} is not one of "
            f"{', '.join(_ACCESS_MODES)}"
        )
    retries = _positive(cfg, "max_retry_attempts")
    if retries is not None and retries > 30:
        raise InvalidRunConfigException(
            f"run option 'max_retry_attempts'={retries} must be between 1 and 30"
        )
    max_run = _positive(cfg, "max_run") or DEFAULT_MAX_RUN
    max_wait = _positive(cfg, "max_wait")
    spot = bool(cfg.get("use_spot_instances"))
    if max_wait is not None and not spot:
        raise InvalidRunConfigException(
            "run option 'max_wait' applies to spot training only: add use_spot_instances=True"
        )
    if max_wait is not None and max_wait < max_run:
        raise InvalidRunConfigException(
            f"run option 'max_wait'={max_wait} must be at least max_run ({max_run}): it "
            "counts the wait for spot capacity and the run together"
        )
    subnets = list(_strs(cfg.get("subnets")))
    groups = list(_strs(cfg.get("security_group_ids")))
    if bool(subnets) != bool(groups):
        raise InvalidRunConfigException(
            "run options 'subnets' and 'security_group_ids' go together: give both or neither"
        )

    def opt_str(name: str) -> str | None:
        value = cfg.get(name)
        return None if value is None else str(value)

    def opt_bool(name: str) -> bool | None:
        value = cfg.get(name)
        return None if value is None else bool(value)

    return SageMakerOpts(
        role=str(cfg["role"]),
        instance_type=opt_str("instance_type"),
        instance_count=_positive(cfg, "instance_count"),
        user=str(cfg.get("user") or "unknown"),
        region=opt_str("region"),
        profile=opt_str("profile"),
        base_job_name=opt_str("base_job_name"),
        max_run=max_run,
        use_spot_instances=spot,
        max_wait=max_wait,
        checkpoint_s3_uri=opt_str("checkpoint_s3_uri"),
        checkpoint_local_path=opt_str("checkpoint_local_path"),
        output_path=opt_str("output_path"),
        output_kms_key=opt_str("output_kms_key"),
        disable_output_compression=bool(cfg.get("disable_output_compression")),
        volume_size=_positive(cfg, "volume_size") or DEFAULT_VOLUME_SIZE,
        volume_kms_key=opt_str("volume_kms_key"),
        keep_alive_period_in_seconds=_positive(cfg, "keep_alive_period_in_seconds"),
        input_mode=input_mode,
        model_uri=opt_str("model_uri"),
        model_channel_name=str(cfg.get("model_channel_name") or "model"),
        environment=_mapping(cfg.get("environment")),
        hyperparameters=_mapping(cfg.get("hyperparameters")),
        tags=_mapping(cfg.get("tags")),
        metric_definitions=_mapping(cfg.get("metric_definitions")),
        enable_sagemaker_metrics=opt_bool("enable_sagemaker_metrics"),
        subnets=subnets,
        security_group_ids=groups,
        enable_network_isolation=bool(cfg.get("enable_network_isolation")),
        encrypt_inter_container_traffic=bool(cfg.get("encrypt_inter_container_traffic")),
        max_retry_attempts=retries,
        training_repository_access_mode=None if access is None else str(access),
        training_repository_credentials_provider_arn=opt_str(
            "training_repository_credentials_provider_arn"
        ),
        enable_infra_check=opt_bool("enable_infra_check"),
        debugger_hook_config=opt_bool("debugger_hook_config"),
        disable_profiler=opt_bool("disable_profiler"),
    )


def _strs(value: CfgVal) -> list[str]:
    return [str(v) for v in value] if isinstance(value, list) else []


def _mapping(value: CfgVal) -> dict[str, str]:
    return {str(k): str(v) for k, v in value.items()} if isinstance(value, dict) else {}
