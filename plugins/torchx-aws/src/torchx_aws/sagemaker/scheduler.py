"""The ``aws_sagemaker`` scheduler: submit, follow, list and stop SageMaker training jobs.

``torchx run -s aws_sagemaker -cfg role=arn:aws:iam::123456789012:role/sm dist.ddp -h
aws_g5.12xlarge -j 2x4 ...`` makes one training job of the app's role (see
:mod:`torchx_aws.sagemaker.request` for what becomes what) and answers its handle.
Then, by the job's name:

* ``describe``: ``DescribeTrainingJob``; the state from ``TrainingJobStatus`` (and,
  while it is ``InProgress``, ``SecondaryStatus``: PENDING until the instances train),
  the message from ``FailureReason``, a console link. SageMaker has no per-instance
  state: every replica is reported in the job's;
* ``list``: ``Search`` for the training jobs torchx tagged
  (``torchx.pytorch.org/scheduler=aws_sagemaker``), newest first;
* ``log_iter``: the instance's CloudWatch Logs stream,
  ``/aws/sagemaker/TrainingJobs`` / ``{job}/algo-{k+1}-{epoch}`` (stdout and stderr
  together), bounded in time, filtered, followed until the job ends;
* ``cancel``: ``StopTrainingJob`` (the job goes Stopping, then Stopped: CANCELLED).
  Cancelling a job that has already ended does nothing.

Every call goes through :func:`torchx.schedulers.retry.call_with_retries` with
:func:`torchx_aws.errors.classify_error` (throttling and 5xx retried), with clients of
:func:`torchx_aws.session.client` (the standard AWS configuration).

>>> from torchx.specs import AppDef, Role, resource
>>> app = AppDef("trainer", roles=[Role("trainer", image="123.dkr.ecr/train:1",
...     entrypoint="python", args=["-m", "train"], num_replicas=2,
...     resource=resource(h="aws_g5.12xlarge"))])
>>> info = create_scheduler("demo").submit_dryrun(app, {"role": "sm"})
>>> info.request.params["ResourceConfig"]
{'InstanceType': 'ml.g5.12xlarge', 'InstanceCount': 2, 'VolumeSizeInGB': 30}
>>> info.request.params["AlgorithmSpecification"]["ContainerArguments"]
['-m', 'train']
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from datetime import datetime
from typing import Any

from torchx.schedulers.api import DescribeAppResponse, ListAppResponse, Scheduler, Stream
from torchx.schedulers.capabilities import Capability
from torchx.schedulers.errors import SchedulerError
from torchx.schedulers.retry import call_with_retries
from torchx.schedulers.states import replicas_in_app_state
from torchx.specs import AppDef, AppDryRunInfo, AppState, CfgVal, runopts
from torchx.specs.errors import SpecError
from torchx_aws._version import __version__
from torchx_aws.errors import classify_error
from torchx_aws.sagemaker.options import read, sagemaker_runopts
from torchx_aws.sagemaker.request import (
    APP_NAME_TAG,
    ROLE_NAME_TAG,
    SCHEDULER_TAG,
    TrainingJobRequest,
    build_request,
    finish,
    join_app_id,
    split_app_id,
    to_state,
)
from torchx_aws.workspace import AwsImageWorkspaceMixin

#: The CloudWatch Logs group SageMaker writes training jobs' output to.
LOG_GROUP = "/aws/sagemaker/TrainingJobs"

#: ``SecondaryStatus`` values of an ``InProgress`` job whose command is not running yet.
_NOT_YET_TRAINING = frozenset(
    {
        "Starting",
        "Pending",
        "LaunchingMLInstances",
        "PreparingTrainingStack",
        "Downloading",
        "DownloadingTrainingImage",
        "Restarting",
        "Interrupted",
    }
)

#: Makes a boto3 client: (service, region, profile) -> client. Tests pass their own.
ClientFactory = Callable[[str, "str | None", "str | None"], Any]


def _default_factory(service: str, region: str | None, profile: str | None) -> Any:
    from torchx_aws.session import client

    return client(service, region=region, profile=profile)


def _not_found(e: BaseException) -> bool:
    """True for SageMaker's answer about a training job that does not exist."""
    for err in (e, e.__cause__):
        response = getattr(err, "response", None)
        if isinstance(response, dict):
            error = response.get("Error") or {}
            message = str(error.get("Message") or "").lower()
            if error.get("Code") in ("ValidationException", "ResourceNotFound") and (
                "not found" in message or "could not find" in message
            ):
                return True
    return False


def _error_code(e: BaseException) -> str:
    for err in (e, e.__cause__):
        response = getattr(err, "response", None)
        if isinstance(response, dict):
            return str((response.get("Error") or {}).get("Code") or "")
    return ""


def _seconds(when: Any) -> float | None:
    return when.timestamp() if isinstance(when, datetime) else None


def job_state(job: Mapping[str, Any]) -> AppState:
    """The AppState of a training job: its status, PENDING while its instances get ready."""
    state = to_state(str(job.get("TrainingJobStatus", "")))
    if state == AppState.RUNNING and job.get("SecondaryStatus") in _NOT_YET_TRAINING:
        return AppState.PENDING
    return state


class AWSSageMakerScheduler(AwsImageWorkspaceMixin, Scheduler[Mapping[str, CfgVal]]):
    """TorchX on SageMaker training jobs (see the module).

    A workspace (``--workspace .``) is built into an image on the role's and pushed to
    ``image_repo`` (:mod:`torchx_aws.workspace`, extra ``docker``), as upstream's
    scheduler did; the training job runs that image.
    """

    puller = "SageMaker"

    missing_capabilities = {
        Capability.REPLICA_STATUS: "SageMaker reports one status per training job, none per "
        "instance",
        Capability.EXIT_CODES: "DescribeTrainingJob gives a failure reason, not the "
        "instances' exit codes",
        Capability.SEPARATE_STREAMS: "SageMaker writes an instance's stdout and stderr into "
        "one CloudWatch Logs stream",
        Capability.RETRIES: "SageMaker retries a training job only after an internal error "
        "of its own, never after the command fails",
        Capability.DELETE: "SageMaker keeps every training job's record: there is no API to "
        "delete one",
        Capability.DESCRIBE_APPDEF: "SageMaker keeps the training job's request, not the "
        "AppDef it was made from",
    }

    def __init__(self, session_name: str, client_factory: ClientFactory | None = None) -> None:
        super().__init__("aws_sagemaker", session_name)
        self._factory = client_factory or _default_factory
        self._clients: dict[tuple[str, str | None, str | None], Any] = {}

    def _client(self, service: str, region: str | None = None, profile: str | None = None) -> Any:
        key = (service, region, profile)
        if key not in self._clients:
            self._clients[key] = self._factory(service, region, profile)
        return self._clients[key]

    def classify_error(self, e: BaseException) -> SchedulerError | None:
        return classify_error(e)

    def _call(self, what: str, fn: Callable[[], Any]) -> Any:
        return call_with_retries(fn, what, classify=self.classify_error)

    # -- submitting -------------------------------------------------------------------------

    def _run_opts(self) -> runopts:
        return sagemaker_runopts()

    def _submit_dryrun(
        self, app: AppDef, cfg: Mapping[str, CfgVal]
    ) -> AppDryRunInfo[TrainingJobRequest]:
        request = build_request(app, read(cfg), __version__)
        return AppDryRunInfo(request, str)

    def schedule(self, dryrun_info: AppDryRunInfo[Any]) -> str:
        req = dryrun_info.request
        if not isinstance(req, TrainingJobRequest):
            raise SpecError("aws_sagemaker schedules only the request of its own dry run")
        sagemaker = self._client("sagemaker", req.region, req.profile)
        role_arn = str(req.params["RoleArn"])
        if not role_arn.startswith("arn:"):
            iam = self._client("iam", req.region, req.profile)
            answer = self._call(
                f"look up IAM role {role_arn!r}", lambda: iam.get_role(RoleName=role_arn)
            )
            role_arn = str(answer["Role"]["Arn"])
        account = role_arn.split(":")[4] if role_arn.count(":") >= 5 else ""
        finish(req, role_arn, account, str(sagemaker.meta.region_name))
        attempts = 0

        def create() -> None:
            nonlocal attempts
            attempts += 1
            try:
                sagemaker.create_training_job(**req.params)
            except Exception as e:
                # a retry after an answer that was lost: SageMaker refuses the name twice,
                # and the name is this submit's own (random), so the job is ours
                if attempts > 1 and _error_code(e) == "ResourceInUse":
                    return
                raise

        self._call(f"create training job {req.job_name}", create)
        return req.app_id

    # -- following --------------------------------------------------------------------------

    def _job(self, app_id: str) -> tuple[str | None, dict[str, Any] | None]:
        region, name = split_app_id(app_id)
        sagemaker = self._client("sagemaker", region)
        try:
            job = self._call(
                f"describe training job {name}",
                lambda: sagemaker.describe_training_job(TrainingJobName=name),
            )
        except Exception as e:
            if _not_found(e):
                return region, None
            raise
        return str(sagemaker.meta.region_name), dict(job)

    def describe(self, app_id: str) -> DescribeAppResponse | None:
        region, job = self._job(app_id)
        if job is None:
            return None
        state = job_state(job)
        names = self._names(app_id, job)
        role = names.get(ROLE_NAME_TAG) or job["TrainingJobName"]
        count = int((job.get("ResourceConfig") or {}).get("InstanceCount") or 1)
        msg = str(job.get("FailureReason") or "")
        if not msg:
            transitions = job.get("SecondaryStatusTransitions") or []
            if transitions:
                msg = str(transitions[-1].get("StatusMessage") or "")
        name = job["TrainingJobName"]
        return DescribeAppResponse(
            app_id=app_id,
            state=state,
            num_restarts=0,
            msg=msg,
            ui_url=(
                f"https://{region}.console.aws.amazon.com/sagemaker/home?region={region}"
                f"#/jobs/{name}"
            ),
            roles_statuses=replicas_in_app_state({role: count}, state),
            name=names.get(APP_NAME_TAG) or name,
            start_time=_seconds(job.get("TrainingStartTime") or job.get("CreationTime")),
            end_time=_seconds(job.get("TrainingEndTime")) if state.is_terminal() else None,
        )

    def _names(self, app_id: str, job: Mapping[str, Any]) -> dict[str, str]:
        """The app's and role's names: from the job's environment, else from its tags.

        AWS returns ``Environment`` in DescribeTrainingJob, where the request put
        ``TORCHX_APP_NAME``/``TORCHX_ROLE_NAME``; an endpoint that leaves it out (the
        emulator) costs one ``ListTags`` call.
        """
        env = job.get("Environment") or {}
        if env.get("TORCHX_ROLE_NAME"):
            return {
                ROLE_NAME_TAG: str(env["TORCHX_ROLE_NAME"]),
                APP_NAME_TAG: str(env.get("TORCHX_APP_NAME") or ""),
            }
        region, _ = split_app_id(app_id)
        sagemaker = self._client("sagemaker", region)
        arn = job["TrainingJobArn"]
        answer = self._call(
            f"tags of training job {job['TrainingJobName']}",
            lambda: sagemaker.list_tags(ResourceArn=arn),
        )
        return {str(t["Key"]): str(t["Value"]) for t in answer.get("Tags") or []}

    def list(self, cfg: Mapping[str, CfgVal] | None = None) -> list[ListAppResponse]:
        cfg = cfg or {}
        region = cfg.get("region")
        region = str(region) if region else None
        profile = str(cfg["profile"]) if cfg.get("profile") else None
        sagemaker = self._client("sagemaker", region, profile)
        search: dict[str, Any] = {
            "Resource": "TrainingJob",
            "SearchExpression": {
                "Filters": [
                    {
                        "Name": f"Tags.{SCHEDULER_TAG}",
                        "Operator": "Equals",
                        "Value": "aws_sagemaker",
                    }
                ]
            },
            "SortBy": "CreationTime",
            "SortOrder": "Descending",
            "MaxResults": 100,
        }
        apps: list[ListAppResponse] = []
        token: str | None = None

        def page_after(token: str | None) -> Any:
            kwargs = {**search, **({"NextToken": token} if token else {})}
            return self._call(
                "search training jobs tagged by torchx", lambda: sagemaker.search(**kwargs)
            )

        while True:
            page = page_after(token)
            for result in page.get("Results") or []:
                job = result.get("TrainingJob") or {}
                tags = {t.get("Key"): t.get("Value") for t in job.get("Tags") or []}
                state = job_state(job)
                apps.append(
                    ListAppResponse(
                        app_id=join_app_id(region, str(job["TrainingJobName"])),
                        state=state,
                        name=str(tags.get(APP_NAME_TAG) or job["TrainingJobName"]),
                        start_time=_seconds(
                            job.get("TrainingStartTime") or job.get("CreationTime")
                        ),
                        end_time=_seconds(job.get("TrainingEndTime"))
                        if state.is_terminal()
                        else None,
                    )
                )
            token = page.get("NextToken")
            if not token:
                return apps

    def cancel(self, app_id: str) -> None:
        """Stops the job if it is still going; an ended (or unknown) job is left alone.

        AWS refuses ``StopTrainingJob`` for a job that is not ``InProgress``; asking
        ``describe`` first keeps a cancel of an ended job from calling it at all.
        """
        described = self.describe(app_id)
        if described is not None and not described.state.is_terminal():
            self._cancel_existing(app_id)

    def _cancel_existing(self, app_id: str) -> None:
        region, name = split_app_id(app_id)
        sagemaker = self._client("sagemaker", region)

        def stop() -> None:
            try:
                sagemaker.stop_training_job(TrainingJobName=name)
            except Exception as e:
                # AWS refuses to stop a job that is not InProgress (it has ended, or is
                # stopping already): the cancel has nothing left to do
                if _error_code(e) == "ValidationException" and not _not_found(e):
                    return
                raise

        self._call(f"stop training job {name}", stop)

    def log_iter(
        self,
        app_id: str,
        role_name: str,
        k: int = 0,
        regex: str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        should_tail: bool = False,
        streams: Stream | None = None,
    ) -> Iterable[str]:
        if streams not in (None, Stream.COMBINED):
            raise SpecError(
                "aws_sagemaker logs hold stdout and stderr together (one CloudWatch Logs "
                "stream per instance): use streams=combined"
            )
        region, name = split_app_id(app_id)
        logs = self._client("logs", region)
        prefix = f"{name}/algo-{k + 1}-"

        def stream_name() -> str | None:
            answer = self._call(
                f"find the log stream of {name} instance {k + 1}",
                lambda: _log_streams(logs, prefix),
            )
            found = sorted(s["logStreamName"] for s in answer if "logStreamName" in s)
            return found[0] if found else None

        def done() -> bool:
            described = self.describe(app_id)
            return described is None or described.state.is_terminal()

        from torchx_aws.cwlogs import stream_log

        return stream_log(
            logs,
            LOG_GROUP,
            stream_name,
            since=since,
            until=until,
            regex=regex,
            should_tail=should_tail,
            is_done=done,
            classify=self.classify_error,
        )


def _log_streams(logs: Any, prefix: str) -> list[dict[str, Any]]:
    """The streams of :data:`LOG_GROUP` named ``prefix...``; none while the group is absent."""
    try:
        answer = logs.describe_log_streams(logGroupName=LOG_GROUP, logStreamNamePrefix=prefix)
    except Exception as e:
        if _error_code(e) == "ResourceNotFoundException":
            return []
        raise
    return list(answer.get("logStreams") or [])


def create_scheduler(session_name: str, **kwargs: Any) -> AWSSageMakerScheduler:
    """The factory the ``torchx_schedulers`` hook names (``client_factory`` for tests)."""
    factory = kwargs.get("client_factory")
    return AWSSageMakerScheduler(
        session_name, client_factory=factory if callable(factory) else None
    )
