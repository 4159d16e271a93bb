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

Every call goes through :class:`torchx_aws.sagemaker.backend.SageMakerBackend`
(throttling and the transient HTTP answers retried, clients of the standard AWS
configuration); the answers become states in :mod:`torchx_aws.sagemaker.status`.

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

from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from torchx.schedulers.contract.api import DescribeAppResponse, ListAppResponse, Scheduler, Stream
from torchx.schedulers.contract.capabilities import Capability
from torchx.schedulers.contract.errors import SchedulerError
from torchx.specs import AppDef, AppDryRunInfo, CfgVal
from torchx.specs.errors import SpecError
from torchx.workspace.pushed_image import PushedImageWorkspaceMixin
from torchx_aws._version import __version__
from torchx_aws.recent import not_listed_yet, remember
from torchx_aws.sagemaker.backend import LOG_GROUP, SageMakerBackend
from torchx_aws.sagemaker.options import SageMakerOpts
from torchx_aws.sagemaker.request import (
    APP_NAME_TAG,
    ROLE_NAME_TAG,
    SCHEDULER_TAG,
    TrainingJobRequest,
    app_id_of,
    build_request,
    finish,
    parse_app_id,
)
from torchx_aws.sagemaker.status import describe_response, list_response

__all__ = ["LOG_GROUP", "AWSSageMakerScheduler", "create_scheduler"]


class AWSSageMakerScheduler(PushedImageWorkspaceMixin, Scheduler[Mapping[str, CfgVal]]):
    """TorchX on SageMaker training jobs (see the module).

    A workspace (``--workspace .``) is built into an image on the role's and pushed to
    ``image_repo`` (:mod:`torchx.workspace.pushed_image`, extra ``docker``), as
    upstream's scheduler did; the training job runs that image.

    Args:
        session_name: the session the handles carry
        backend: the AWS calls (tests: a
            :class:`~torchx_aws.sagemaker.backend.SageMakerBackend` of stubbed clients);
            default: clients of the standard AWS configuration
    """

    runs_container_images = True

    #: the run options, declared once
    opts_class = SageMakerOpts
    image_builder = "torchx_docker.images"
    distribution = "torchx-aws"
    puller = "SageMaker"
    example_repo = "123456789012.dkr.ecr.us-east-1.amazonaws.com/team"

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
        Capability.MULTI_ROLE: "a training job runs one image and one command on all its "
        "instances (a heterogeneous cluster's too), and instances of two jobs cannot find "
        "each other: submit each role as an app of its own",
    }

    def __init__(self, session_name: str, backend: SageMakerBackend | None = None) -> None:
        super().__init__("aws_sagemaker", session_name)
        self._aws = backend if backend is not None else SageMakerBackend()

    def close(self) -> None:
        self._aws.close()

    def classify_error(self, e: BaseException) -> SchedulerError | None:
        return self._aws.classify_error(e)

    # -- submitting -------------------------------------------------------------------------

    def _submit_dryrun(
        self, app: AppDef, cfg: Mapping[str, CfgVal]
    ) -> AppDryRunInfo[TrainingJobRequest]:
        request = build_request(app, SageMakerOpts.of(cfg), __version__)
        if request.appdef_left_out:
            import warnings

            warnings.warn(
                f"the AppDef of app '{app.name}' is not kept with the training job: "
                f"{request.appdef_left_out}; describe and `torchx status` will show no roles",
                stacklevel=2,
            )
        return AppDryRunInfo(request, str)

    def schedule(self, dryrun_info: AppDryRunInfo[Any]) -> str:
        req = dryrun_info.request
        if not isinstance(req, TrainingJobRequest):
            raise SpecError("aws_sagemaker schedules only the request of its own dry run")
        sagemaker = self._aws.sagemaker(req.region, req.profile)
        role_arn = self._aws.role_arn(str(req.params["RoleArn"]), req.region, req.profile)
        account = role_arn.split(":")[4] if role_arn.count(":") >= 5 else ""
        finish(req, role_arn, account, str(sagemaker.meta.region_name))
        self._aws.create(sagemaker, req.params)
        remember(self.backend, req.app_id)
        return req.app_id

    # -- following --------------------------------------------------------------------------

    def describe(self, app_id: str) -> DescribeAppResponse | None:
        region, name = parse_app_id(app_id)
        where, job = self._aws.describe(region, name)
        if job is None:
            return not_listed_yet(self.backend, app_id)
        return describe_response(app_id, where, job, self._names(app_id, job))

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
        region, _ = parse_app_id(app_id)
        return self._aws.tags(region, dict(job))

    def list(self, cfg: Mapping[str, CfgVal] | None = None) -> list[ListAppResponse]:
        # the region and profile given, through submit's checks (no defaults)
        given = SageMakerOpts.given(cfg)
        region = given.get("region") or None
        profile = given.get("profile") or None
        sagemaker = self._aws.sagemaker(region, profile)
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
        while True:
            page = self._aws.search(sagemaker, search, token)
            for result in page.get("Results") or []:
                job = result.get("TrainingJob") or {}
                app_id = app_id_of(region, str(job["TrainingJobName"]))
                apps.append(list_response(app_id, job))
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
        region, name = parse_app_id(app_id)
        self._aws.stop(region, name)

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
        region, name = parse_app_id(app_id)
        logs = self._aws.client("logs", region)

        def done() -> bool:
            described = self.describe(app_id)
            return described is None or described.state.is_terminal()

        from torchx_aws.cwlogs import stream_log

        return stream_log(
            logs,
            LOG_GROUP,
            lambda: self._aws.log_stream(logs, name, k + 1),
            since=since,
            until=until,
            regex=regex,
            should_tail=should_tail,
            is_done=done,
            classify=self.classify_error,
        )


def create_scheduler(session_name: str, **kwargs: Any) -> AWSSageMakerScheduler:
    """The factory the ``torchx_schedulers`` hook names (``backend`` for tests)."""
    return AWSSageMakerScheduler(session_name, backend=kwargs.get("backend"))
