"""An app as SageMaker ``CreateTrainingJob`` parameters; app ids. Pure: no AWS call.

**What becomes what.** The app's one role is the training job:

==========================  ==============================================================
torchx                      CreateTrainingJob
==========================  ==============================================================
``role.image``              ``AlgorithmSpecification.TrainingImage``
``role.entrypoint``         ``AlgorithmSpecification.ContainerEntrypoint`` (``[entrypoint]``)
``role.args``               ``AlgorithmSpecification.ContainerArguments``
``role.env``                ``Environment`` (over the ``environment`` option), with
                            ``TORCHX_JOB_ID``, ``TORCHX_APP_NAME``, ``TORCHX_ROLE_NAME``
                            (``describe`` reads the names back from there)
``role.num_replicas``       ``ResourceConfig.InstanceCount`` (or ``instance_count``)
``role.resource``           ``ResourceConfig.InstanceType``: ``ml.`` + the instance type of
                            its AWS named resource (or ``instance_type``)
``role.max_retries``        ignored: SageMaker retries a job after its own internal
                            errors only (``max_retry_attempts``), never after the
                            command fails
``app.metadata``            ``Tags``, with the ``tags`` option and torchx's own tags
the AppDef                  ``HyperParameters`` ``torchx_appdef_0``, ``_1``, ...: its JSON
                            document (:mod:`torchx_aws.appdef_doc`, at most 8 KiB) in
                            pieces of SageMaker's longest value (2,500 characters), so
                            that ``describe`` gives it back; left out, with a dry-run
                            warning, when larger or past SageMaker's 100 hyperparameters
==========================  ==============================================================

Upstream TorchX goes through the SageMaker Python SDK's PyTorch estimator (script mode:
the SDK uploads a source directory and SageMaker's PyTorch image runs a script with
``--key value`` hyperparameters). Here the request names the command directly:
``ContainerEntrypoint`` and ``ContainerArguments`` run the role's own command in its own
image, on every instance, the way every other torchx scheduler runs a role.

**Macros.** ``${app_id}`` is the app id; ``${rank0_env}`` names ``TORCHX_RANK0_HOST``,
which holds ``algo-1``, the host name SageMaker gives the first instance (the others
are ``algo-2`` ...). SageMaker runs the same command on every instance, so a role of
several instances that uses ``${replica_id}`` runs under :data:`REPLICA_WRAPPER` (the
image needs ``sh`` and ``cat``): it reads the instance's host, ``algo-<k>``, from
``/opt/ml/input/config/resourceconfig.json`` (``current_host``, as SageMaker documents
for distributed training), sets ``TORCHX_REPLICA_ID`` to ``k - 1`` and puts it where
``${replica_id}`` stood in the args and in the env (:mod:`torchx_aws.replica_sh`).
The wrapper travels in the environment (``TORCHX_REPLICA_SH``): SageMaker takes no
argument over 256 characters, which :func:`build_request` checks for every argument.

**App ids.** The training job's name, as upstream's; a job submitted with the
``region`` run option carries it: ``us-west-2:trainer-1a2b3c4d5e``, so that ``status``
from any shell asks the right region.

>>> parse_app_id("us-west-2:trainer-1a2b3c4d5e")
('us-west-2', 'trainer-1a2b3c4d5e')
>>> parse_app_id("trainer-1a2b3c4d5e")
(None, 'trainer-1a2b3c4d5e')
>>> job_name_for("My trainer!")[:-10]
'My-trainer-'
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

import attrs

from torchx.schedulers.contract.errors import InvalidAppIdError
from torchx.schedulers.helpers import labels
from torchx.schedulers.helpers.ids import join_app_id, make_app_id, split_app_id
from torchx.schedulers.helpers.scriptroles import require_roles
from torchx.specs import AppDef, Role, macros
from torchx.specs.errors import SpecError
from torchx_aws import appdef_doc
from torchx_aws.replica_sh import REPLICA_MARK, SUBSTITUTE
from torchx_aws.sagemaker.options import SageMakerOpts

#: The format of the printed request (a dry run's output).
FORMAT_VERSION = "torchx-aws.sagemaker/v1"

#: Tag keys torchx puts on every training job it creates (``list`` finds them by the first).
SCHEDULER_TAG = labels.SCHEDULER
APP_NAME_TAG = labels.APP_NAME
ROLE_NAME_TAG = labels.ROLE_NAME
USER_TAG = labels.USER
VERSION_TAG = labels.VERSION

#: The hyperparameters holding the AppDef's document: ``torchx_appdef_0``, ``_1``, ...
APPDEF_HYPERPARAMETER = "torchx_appdef_"
#: SageMaker's longest hyperparameter value, and most hyperparameters of a job.
HYPERPARAMETER_MAX = 2500
HYPERPARAMETERS_MAX = 100

#: The environment variable ``${rank0_env}`` names, and the first instance's host.
RANK0_ENV = "TORCHX_RANK0_HOST"
RANK0_HOST = "algo-1"

#: CreateTrainingJob's limits (API reference, AlgorithmSpecification and
#: CreateTrainingJob): characters per entrypoint item or argument, items of each list,
#: characters per environment value, environment entries.
ARG_MAX = 256
ARGS_MAX = 100
ENV_VALUE_MAX = 512
ENV_MAX = 100

#: The environment variable holding :data:`REPLICA_WRAPPER`, and the env variable naming
#: the role's variables whose values hold the replica id.
WRAPPER_ENV = "TORCHX_REPLICA_SH"
MARKED_ENV = "TORCHX_REPLICA_ENV"
#: The POSIX ``sh`` program each instance of a role using ``${replica_id}`` runs first
#: (see the module): the replica id from the host name ``algo-<k>`` SageMaker gives the
#: instance in resourceconfig.json, then the marked args and env filled in, then the
#: command. Run as ``sh -c 'eval "$TORCHX_REPLICA_SH"' torchx-replica ENTRYPOINT ARGS``.
REPLICA_WRAPPER = (
    "h=$(cat /opt/ml/input/config/resourceconfig.json)||exit\n"
    "h=${h#*current_host};h=${h#*algo-};h=${h%%[!0-9]*}\n"
    ": ${h:?torchx: no algo-k current_host}\n"
    "export TORCHX_REPLICA_ID=$((h-1))\n"
    + SUBSTITUTE
    + f'for v in ${{{MARKED_ENV}-}};do eval "sub \\"\\${{$v}}\\"";export "$v=$out";done\n'
    'n=$#;for a do sub "$a";set -- "$@" "$out";done;shift $n;exec "$@"\n'
)

#: Capability key of AWS named resources holding the EC2 instance type.
INSTANCE_TYPE_CAPABILITY = "node.kubernetes.io/instance-type"

_JOB_NAME = re.compile(r"[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}")
_REGION = re.compile(r"[a-z]{2}(-[a-z]+)+-\d+")
_NAME_MAX = 63
_SUFFIX = 10


def job_name_for(name: str) -> str:
    """A fresh training job name from an app name: cleaned, cut, plus 10 random characters."""
    base = re.sub(r"[^a-zA-Z0-9]+", "-", name).strip("-") or "torchx"
    base = base[: _NAME_MAX - _SUFFIX - 1].rstrip("-")
    return f"{base}-{make_app_id('x')[-_SUFFIX:]}"


_FORM = "region:training-job"


def app_id_of(region: str | None, job_name: str) -> str:
    """The app id of ``job_name``: with ``region:`` when the job was sent to a chosen region."""
    return join_app_id(region, job_name, form=_FORM) if region else job_name


def parse_app_id(app_id: str) -> tuple[str | None, str]:
    """(region or None, job name) of an app id; one line when it is neither form."""
    try:
        region, job = split_app_id(app_id, form=_FORM) if ":" in app_id else (None, app_id)
    except InvalidAppIdError:
        region, job = None, ""
    if _JOB_NAME.fullmatch(job) and (region is None or _REGION.fullmatch(region)):
        return region, job
    raise InvalidAppIdError(
        f"invalid aws_sagemaker app id {app_id!r}: expected a training job name (letters, "
        "digits and '-', at most 63) or REGION:NAME, e.g. 'us-west-2:trainer-1a2b3c4d5e'"
    )


def instance_type(role: Role, opts: SageMakerOpts) -> str:
    """``ml.`` + the instance type the option or the role's AWS named resource names."""
    itype = opts.instance_type or role.resource.capabilities.get(INSTANCE_TYPE_CAPABILITY)
    if not isinstance(itype, str) or not itype:
        raise SpecError(
            f"aws_sagemaker needs an instance type for role '{role.name}': give it an AWS "
            "named resource (-h aws_g5.xlarge) or the run option instance_type=ml.g5.xlarge"
        )
    return itype if itype.startswith("ml.") else f"ml.{itype}"


def _uses(role: Role, name: str) -> bool:
    texts = [role.entrypoint, *role.args, *role.env.values()]
    return any(f"${{{name}}}" in t or f"${name}" in t for t in texts)


@attrs.define
class TrainingJobRequest:
    """What ``schedule`` sends: ``CreateTrainingJob(**params)`` in ``region`` with ``profile``.

    Two values are finished by ``schedule``, as they need AWS to answer: ``RoleArn``
    when the ``role`` option is a name (looked up in IAM), and the default output path
    (it names the account). The dry run shows them as given.
    """

    app_id: str
    job_name: str
    role_name: str
    params: dict[str, Any]
    region: str | None = None
    profile: str | None = None
    #: Why the AppDef is not kept with the job ("" when it is): the dry run warns.
    appdef_left_out: str = ""

    def __str__(self) -> str:
        doc = {
            "formatVersion": FORMAT_VERSION,
            "region": self.region,
            "profile": self.profile,
            "CreateTrainingJob": self.params,
        }
        return json.dumps(doc, indent=2)


def _check_limits(role: str, command: list[str], args: list[str], env: Mapping[str, str]) -> None:
    """One line for what CreateTrainingJob would refuse: an argument or env value too long.

    Checked here, so the dry run says it, and a user learns it before a job is made.
    """
    where = "docs.aws.amazon.com/sagemaker/latest/APIReference/API_AlgorithmSpecification.html"
    for what, items in (("entrypoint", command), ("args", args)):
        if len(items) > ARGS_MAX:
            raise SpecError(
                f"role '{role}' has {len(items)} {what} items; SageMaker takes at most "
                f"{ARGS_MAX} ({where})"
            )
        for i, item in enumerate(items):
            if len(item) > ARG_MAX:
                raise SpecError(
                    f"role '{role}': {what}[{i}] is {len(item)} characters; SageMaker takes at "
                    f"most {ARG_MAX} per argument ({where}): put a long script in the image "
                    "or in the role's env"
                )
    if len(env) > ENV_MAX:
        raise SpecError(
            f"role '{role}' has {len(env)} environment variables with torchx's; SageMaker "
            f"takes at most {ENV_MAX} (CreateTrainingJob Environment)"
        )
    for key, value in env.items():
        if len(value) > ENV_VALUE_MAX:
            raise SpecError(
                f"role '{role}': env {key} is {len(value)} characters; SageMaker takes at "
                f"most {ENV_VALUE_MAX} per value (CreateTrainingJob Environment)"
            )


def build_request(app: AppDef, opts: SageMakerOpts, version: str) -> TrainingJobRequest:
    """The ``CreateTrainingJob`` request of ``app`` (its one role) with the run options."""
    require_roles(app)  # every scheduler's refusal, and the Runner's
    if len(app.roles) != 1:
        names = ", ".join(r.name for r in app.roles)
        raise SpecError(
            f"aws_sagemaker runs one role as one training job; app '{app.name}' has "
            f"{len(app.roles)} ({names}): submit each role as its own app"
        )
    role = app.roles[0]
    if role.mounts:
        raise SpecError(
            f"role '{role.name}' has mounts, which a SageMaker training job cannot have: give "
            "it its data through S3 (model_uri, checkpoint_s3_uri) or put it in the image"
        )
    count = opts.instance_count or role.num_replicas
    wrapped = count > 1 and _uses(role, "replica_id")
    job_name = job_name_for(opts.base_job_name or app.name)
    app_id = app_id_of(opts.region, job_name)
    values = macros.Values(
        img_root="",
        app_id=app_id,
        replica_id=REPLICA_MARK if wrapped else "0",
        rank0_env=RANK0_ENV,
    )
    role = values.apply(role)
    entrypoint = values.substitute(role.entrypoint)

    env = {
        **(opts.environment or {}),
        **role.env,
        RANK0_ENV: RANK0_HOST,
        "TORCHX_APP_NAME": app.name,
        "TORCHX_ROLE_NAME": role.name,
    }
    command = [entrypoint]
    if wrapped:
        command = ["sh", "-c", f'eval "${WRAPPER_ENV}"', "torchx-replica", entrypoint]
        marked = [k for k, v in env.items() if REPLICA_MARK in v]
        if marked:
            env[MARKED_ENV] = " ".join(marked)
        env[WRAPPER_ENV] = REPLICA_WRAPPER
    _check_limits(role.name, command, list(role.args), env)
    algorithm: dict[str, Any] = {
        "TrainingImage": role.image,
        "TrainingInputMode": opts.input_mode,
        "ContainerEntrypoint": command,
    }
    if role.args:
        algorithm["ContainerArguments"] = list(role.args)
    if opts.metric_definitions:
        algorithm["MetricDefinitions"] = [
            {"Name": k, "Regex": v} for k, v in (opts.metric_definitions or {}).items()
        ]
    if opts.enable_sagemaker_metrics is not None:
        algorithm["EnableSageMakerMetricsTimeSeries"] = opts.enable_sagemaker_metrics
    if opts.training_repository_access_mode:
        image_config: dict[str, Any] = {
            "TrainingRepositoryAccessMode": opts.training_repository_access_mode
        }
        if opts.training_repository_credentials_provider_arn:
            image_config["TrainingRepositoryAuthConfig"] = {
                "TrainingRepositoryCredentialsProviderArn": (
                    opts.training_repository_credentials_provider_arn
                )
            }
        algorithm["TrainingImageConfig"] = image_config

    resources: dict[str, Any] = {
        "InstanceType": instance_type(role, opts),
        "InstanceCount": count,
        "VolumeSizeInGB": opts.volume_size,
    }
    if opts.volume_kms_key:
        resources["VolumeKmsKeyId"] = opts.volume_kms_key
    if opts.keep_alive_period_in_seconds is not None:
        resources["KeepAlivePeriodInSeconds"] = opts.keep_alive_period_in_seconds

    output: dict[str, Any] = {"S3OutputPath": opts.output_path}
    if opts.output_kms_key:
        output["KmsKeyId"] = opts.output_kms_key
    if opts.disable_output_compression:
        output["CompressionType"] = "NONE"

    stopping: dict[str, Any] = {"MaxRuntimeInSeconds": opts.max_run}
    if opts.use_spot_instances:
        stopping["MaxWaitTimeInSeconds"] = opts.max_wait or opts.max_run

    tags = {
        **(opts.tags or {}),
        **{k: str(v) for k, v in app.metadata.items()},
        SCHEDULER_TAG: "aws_sagemaker",
        APP_NAME_TAG: app.name,
        ROLE_NAME_TAG: role.name,
        USER_TAG: opts.user,
        VERSION_TAG: version,
    }
    params: dict[str, Any] = {
        "TrainingJobName": job_name,
        "RoleArn": opts.role,
        "AlgorithmSpecification": algorithm,
        "OutputDataConfig": output,
        "ResourceConfig": resources,
        "StoppingCondition": stopping,
        "Environment": env,
        "Tags": [{"Key": k, "Value": v} for k, v in tags.items()],
        "EnableNetworkIsolation": opts.enable_network_isolation,
        "EnableInterContainerTrafficEncryption": opts.encrypt_inter_container_traffic,
        "EnableManagedSpotTraining": opts.use_spot_instances,
    }
    hyperparameters = dict(opts.hyperparameters or {})
    document, left_out = appdef_doc.document(app, opts)
    if document is not None:
        kept = {
            f"{APPDEF_HYPERPARAMETER}{i}": piece
            for i, piece in enumerate(appdef_doc.pieces(document, HYPERPARAMETER_MAX))
        }
        if len(hyperparameters) + len(kept) > HYPERPARAMETERS_MAX:
            left_out = (
                f"with the {len(hyperparameters)} hyperparameters given, its "
                f"{len(kept)} pieces exceed SageMaker's {HYPERPARAMETERS_MAX}"
            )
        else:
            hyperparameters.update(kept)
    if hyperparameters:
        params["HyperParameters"] = hyperparameters
    if opts.max_retry_attempts:
        params["RetryStrategy"] = {"MaximumRetryAttempts": opts.max_retry_attempts}
    if opts.checkpoint_s3_uri:
        checkpoint = {"S3Uri": opts.checkpoint_s3_uri}
        if opts.checkpoint_local_path:
            checkpoint["LocalPath"] = opts.checkpoint_local_path
        params["CheckpointConfig"] = checkpoint
    if opts.subnets:
        params["VpcConfig"] = {
            "Subnets": list(opts.subnets),
            "SecurityGroupIds": list(opts.security_group_ids or []),
        }
    if opts.model_uri:
        params["InputDataConfig"] = [
            {
                "ChannelName": opts.model_channel_name,
                "DataSource": {
                    "S3DataSource": {
                        "S3DataType": "S3Prefix",
                        "S3Uri": opts.model_uri,
                        "S3DataDistributionType": "FullyReplicated",
                    }
                },
            }
        ]
    if opts.debugger_hook_config:
        params["DebugHookConfig"] = {"S3OutputPath": opts.output_path}
    if opts.disable_profiler:
        params["ProfilerConfig"] = {"DisableProfiler": True}
    if opts.enable_infra_check is not None:
        params["InfraCheckConfig"] = {"EnableInfraCheck": opts.enable_infra_check}
    return TrainingJobRequest(
        app_id=app_id,
        job_name=job_name,
        role_name=role.name,
        params=params,
        region=opts.region,
        profile=opts.profile,
        appdef_left_out=left_out,
    )


def appdef_of(job: Mapping[str, Any]) -> AppDef | None:
    """The AppDef a training job made here carries (its ``HyperParameters``); None: none."""
    return appdef_and_options_of(job)[0]


def appdef_and_options_of(job: Mapping[str, Any]) -> tuple[AppDef | None, dict[str, Any]]:
    """:func:`appdef_of` and the masked run options kept with it (empty if none)."""
    params = job.get("HyperParameters") or {}
    found: list[str] = []
    while f"{APPDEF_HYPERPARAMETER}{len(found)}" in params:
        found.append(str(params[f"{APPDEF_HYPERPARAMETER}{len(found)}"]))
    return appdef_doc.read_with_options("".join(found))


def finish(request: TrainingJobRequest, role_arn: str, account: str, region: str) -> None:
    """Fills in what needed AWS: the role's ARN and, if none was given, the output path."""
    request.params["RoleArn"] = role_arn
    default = f"s3://sagemaker-{region}-{account}/"
    if request.params["OutputDataConfig"].get("S3OutputPath") is None:
        request.params["OutputDataConfig"]["S3OutputPath"] = default
    hook = request.params.get("DebugHookConfig")
    if hook is not None and hook.get("S3OutputPath") is None:
        hook["S3OutputPath"] = default
