"""The ``aws_batch`` scheduler: an app as one AWS Batch job.

``torchx run -s aws_batch -cfg queue=my-queue ...`` registers the job definition
:mod:`torchx_aws.batch.request` describes, submits a job of it to the queue, and returns
the app id ``<queue>:<job id>:<region>:<nodes>``: the queue and region say where the
job is, so ``status``, ``log``, ``list``, ``cancel`` and ``delete`` work from any later
shell; the node count lets ``status`` ask for the job and every node job in one
``DescribeJobs`` call. Upstream TorchX's ``<queue>:<job name>`` ids are accepted too
(the region is then boto3's, and the job is found by name in the queue).

How the contract maps onto Batch:

* ``schedule``: ``RegisterJobDefinition``, then ``SubmitJob``. Neither is idempotent,
  so a transient failure (throttling, 5xx, a timeout: it may have happened) is followed
  by a look-up by the unique name before trying again; a submit that fails deregisters
  the definition it registered, then raises one line.
* ``describe``: one ``DescribeJobs`` call (per 100 ids) for the job and its node jobs;
  see :mod:`torchx_aws.batch.status`. The AppDef comes back from the job's parameters
  (:func:`torchx_aws.batch.request.appdef_of`).
* ``list``: the queues (``-cfg queue=...``, else every queue of the region), every job
  of each whatever its state (``ListJobs`` with a creation-time filter: without a
  filter Batch lists RUNNING jobs only), then ``DescribeJobs`` of those, 100 at a time,
  keeping the jobs with TorchX's tags.
* ``cancel``: ``TerminateJob`` (a job not yet started is cancelled, a running one
  stopped) with :data:`~torchx_aws.batch.status.CANCEL_REASON`, by which ``describe``
  tells CANCELLED from FAILED. ``delete`` cancels a live job and deregisters its job
  definition; Batch keeps the job's own record (for about a week) and has no call to
  remove it.
* ``log_iter``: the node's CloudWatch Logs stream (``/aws/batch/job``, the name from
  its node job's record), read by :mod:`torchx_aws.cwlogs`; Batch merges stdout and
  stderr into one stream.

Every call goes through :class:`torchx_aws.batch.backend.BatchBackend` (retried with
:func:`torchx_aws.errors.classify_error`); a workspace is an image pushed to
``image_repo`` (:mod:`torchx.workspace.pushed_image`). boto3 is imported only when a
client is made (:mod:`torchx_aws.session`): a dry run, ``torchx runopts aws_batch`` and
``torchx --help`` never import it.
"""

from __future__ import annotations

import builtins
import warnings
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from torchx.schedulers.contract.api import DescribeAppResponse, ListAppResponse, Scheduler, Stream
from torchx.schedulers.contract.capabilities import Capability
from torchx.schedulers.contract.errors import SchedulerError, TransientSchedulerError
from torchx.schedulers.helpers.ids import make_app_id
from torchx.schedulers.helpers.labels import VERSION
from torchx.specs import AppDef, AppDryRunInfo, AppState, CfgVal
from torchx.specs.errors import SpecError
from torchx.workspace.pushed_image import PushedImageWorkspaceMixin
from torchx_aws.batch.backend import BatchBackend, Records
from torchx_aws.batch.options import BatchOpts
from torchx_aws.batch.request import (
    BatchRequest,
    app_id_of,
    make_request,
    parse_app_id,
    retry_policy_warnings,
    roles_of,
)
from torchx_aws.batch.status import describe_response, list_response, state_of
from torchx_aws.recent import not_listed_yet, remember

__all__ = ["LOG_GROUP", "AwsBatchScheduler", "create_scheduler"]

#: Where Batch's default log driver (awslogs) writes each container's output.
LOG_GROUP = "/aws/batch/job"


class AwsBatchScheduler(PushedImageWorkspaceMixin, Scheduler[Mapping[str, CfgVal]]):
    """Apps as AWS Batch jobs (see the module docstring).

    Args:
        session_name: the session the handles carry
        backend: the Batch calls (tests: a :class:`~torchx_aws.batch.backend.BatchBackend`
            of stubbed clients); default: clients of the standard AWS configuration
    """

    runs_container_images = True

    #: A workspace's image (:mod:`torchx.workspace.pushed_image`): torchx-docker's builder
    #: (this distribution's ``docker`` extra), pulled by Batch from ``image_repo``.
    image_builder = "torchx_docker.images"
    distribution = "torchx-aws"
    puller = "Batch"
    example_repo = "123456789012.dkr.ecr.us-east-1.amazonaws.com/team"

    #: the run options, declared once
    opts_class = BatchOpts
    #: What Batch itself lacks, on AWS as on an emulator.
    missing_capabilities: Mapping[Capability, str] = {
        Capability.SEPARATE_STREAMS: "Batch sends stdout and stderr to one CloudWatch Logs stream",
        Capability.DELETE: "Batch keeps every job's record (about a week) and has no call "
        "to remove one; delete deregisters the job definition",
    }

    def __init__(self, session_name: str, backend: BatchBackend | None = None) -> None:
        super().__init__("aws_batch", session_name)
        self._aws = backend if backend is not None else BatchBackend()

    def close(self) -> None:
        self._aws.close()

    def classify_error(self, e: BaseException) -> SchedulerError | None:
        """botocore's errors in contract terms (:func:`torchx_aws.errors.classify_error`)."""
        return self._aws.classify_error(e)

    # -- submitting -----------------------------------------------------------------------

    def _submit_dryrun(self, app: AppDef, cfg: Mapping[str, CfgVal]) -> AppDryRunInfo[BatchRequest]:
        request = make_request(app, make_app_id(app.name), BatchOpts.of(cfg))
        for warning in retry_policy_warnings(app):
            warnings.warn(warning, stacklevel=2)
        if request.appdef_left_out:
            warnings.warn(
                f"the AppDef of app '{app.name}' is not kept with the AWS Batch job: "
                f"{request.appdef_left_out}; describe and `torchx status` will show no roles",
                stacklevel=2,
            )
        return AppDryRunInfo(request, lambda r: str(r))

    def schedule(self, dryrun_info: AppDryRunInfo[BatchRequest]) -> str:
        req = dryrun_info.request
        batch = self._aws.batch(req.region, req.profile)
        region = str(batch.meta.region_name)
        name = req.name
        try:
            job_def_arn = self._aws.register(batch, req)
        except BaseException as e:
            raise self._one_line(e, f"registering job definition {name}") from e
        try:
            job_id = self._aws.submit(batch, req, job_def_arn)
        except BaseException as e:
            try:
                self._aws.deregister(batch, job_def_arn)
            except Exception:
                pass  # the submit's error is the one to tell
            raise self._one_line(e, f"submitting job {name} to queue {req.queue}") from e
        app_id = app_id_of(req.queue, job_id, region, req.num_nodes)
        remember(self.backend, app_id)
        return app_id

    def _one_line(self, e: BaseException, doing: str) -> BaseException:
        """``e`` as the one-line error a failed submit raises (AWS's errors mapped)."""
        if isinstance(e, SpecError):
            return e
        mapped = self.classify_error(e) if not isinstance(e, SchedulerError) else e
        if isinstance(mapped, TransientSchedulerError):
            return SchedulerError(f"{doing}: {mapped}")
        if mapped is not None:
            return mapped if doing in str(mapped) else SchedulerError(f"{doing}: {mapped}")
        return e

    # -- following ------------------------------------------------------------------------

    def _locate(self, app_id: str) -> tuple[Any, str, str, str, int | None]:
        """(batch client, region, queue, job id, nodes) of an app id."""
        queue, job, region, nodes = parse_app_id(app_id)
        batch = self._aws.batch(region)
        where = region or str(batch.meta.region_name)
        if region is None:  # upstream's queue:job-name: find the job by name
            job = self._aws.find_job(batch, queue, job) or job
        return batch, where, queue, job, nodes

    def _describe_raw(self, app_id: str) -> tuple[str, dict[str, Any] | None, Records]:
        """(region, the job's record or None, its node jobs' records)."""
        batch, region, _, job_id, nodes = self._locate(app_id)
        ids = [job_id]
        if nodes is not None and nodes > 1:
            ids += [f"{job_id}#{i}" for i in range(nodes)]
        jobs = self._aws.jobs(batch, ids)
        parent = next((j for j in jobs if j.get("jobId") == job_id), None)
        if parent is not None and nodes is None and parent.get("nodeProperties"):
            count = int(parent["nodeProperties"].get("numNodes") or 0)
            jobs += self._aws.jobs(batch, [f"{job_id}#{i}" for i in range(count)])
        if parent is not None:
            check_handle(app_id, parent)
        node_jobs = [j for j in jobs if j is not parent]
        return region, parent, node_jobs

    def describe(self, app_id: str) -> DescribeAppResponse | None:
        region, job, nodes = self._describe_raw(app_id)
        if job is None:
            return not_listed_yet(self.backend, app_id)
        desc = describe_response(app_id, region, job, nodes)
        if desc.state.is_terminal():
            self._release(app_id, job)
        return desc

    def _release(self, app_id: str, job: Mapping[str, Any]) -> None:
        """Deregisters the job definition of a job that has ended: one is registered per
        run, and an ended job needs it no more (its record stays readable: DescribeJobs
        does not read its definition). Best effort: a definition deregistered already,
        or a refusal, changes nothing of the status."""
        job_def = job.get("jobDefinition")
        if not job_def:
            return
        try:
            batch, _, _, _, _ = self._locate(app_id)
            self._aws.deregister(batch, str(job_def))
        except Exception:
            pass

    def list(self, cfg: Mapping[str, CfgVal] | None = None) -> builtins.list[ListAppResponse]:
        # the queue, region and profile given, through submit's checks (no defaults)
        given = BatchOpts.given(cfg)
        queue_given = given.get("queue")
        batch = self._aws.batch(given.get("region"), given.get("profile"))
        where = str(batch.meta.region_name)
        if queue_given:
            queues = [queue_given]
        else:
            queues = [
                str(q["jobQueueName"])
                for q in self._aws.pages(batch, "describe_job_queues", {}, "jobQueues")
            ]
        out: builtins.list[ListAppResponse] = []
        for queue in queues:
            summaries = self._aws.pages(
                batch,
                "list_jobs",
                # any filter makes Batch list every state; creation after the epoch is all
                {"jobQueue": queue, "filters": [{"name": "AFTER_CREATED_AT", "values": ["0"]}]},
                "jobSummaryList",
            )
            ids = [str(s["jobId"]) for s in summaries if "#" not in str(s.get("jobId"))]
            for job in self._aws.jobs(batch, ids):
                tags = job.get("tags") or {}
                if VERSION not in tags:
                    continue
                count = int((job.get("nodeProperties") or {}).get("numNodes") or 1)
                app_id = app_id_of(queue, str(job["jobId"]), where, count)
                out.append(list_response(app_id, job))
        out.sort(key=lambda r: r.start_time or 0, reverse=True)
        return out

    def cancel(self, app_id: str) -> None:
        """Terminates the job unless it has ended (one DescribeJobs, one TerminateJob):
        a job that ended keeps its own state and reason."""
        batch, _, _, job_id, _ = self._locate(app_id)
        jobs = self._aws.jobs(batch, [job_id])
        if jobs:
            check_handle(app_id, jobs[0])
        if jobs and not state_of(jobs[0]).is_terminal():
            self._cancel_existing(app_id)
        elif not jobs and not_listed_yet(self.backend, app_id) is not None:
            self._cancel_existing(app_id)  # AWS takes the terminate of a job it lists not yet

    def _cancel_existing(self, app_id: str) -> None:
        batch, _, _, job_id, _ = self._locate(app_id)
        self._aws.terminate(batch, job_id)

    def _delete_existing(self, app_id: str) -> None:
        batch, _, _, job_id, _ = self._locate(app_id)
        [job] = self._aws.jobs(batch, [job_id]) or [{}]
        if job:
            check_handle(app_id, job)
        if job and not AppState(state_of(job)).is_terminal():
            self._aws.terminate(batch, job_id)
        job_def = job.get("jobDefinition")
        if job_def:
            self._aws.deregister(batch, str(job_def))

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
                f"scheduler 'aws_batch' cannot read {streams.value} alone: Batch sends stdout "
                "and stderr to one CloudWatch Logs stream; leave --streams out (combined)"
            )
        region, job, nodes = self._describe_raw(app_id)
        if job is None:
            raise SchedulerError(f"aws_batch app {app_id} does not exist")
        node = _node_index(job, role_name, k)
        logs = self._aws.client("logs", region)
        state: dict[str, Any] = {
            "done": state_of(job).is_terminal(),
            "stream": _stream_of(job, nodes, node),
        }

        def refresh() -> None:
            _, parent, nodes = self._describe_raw(app_id)
            if parent is None:
                state["done"] = True
                return
            state["done"] = state_of(parent).is_terminal()
            state["stream"] = _stream_of(parent, nodes, node)

        def stream() -> str | None:
            if state["stream"] is None:
                refresh()
            return state["stream"]  # type: ignore[no-any-return]

        def is_done() -> bool:
            if not state["done"]:
                refresh()
            return bool(state["done"])

        from torchx_aws.cwlogs import stream_log

        return stream_log(
            logs,
            LOG_GROUP,
            stream,
            since=since,
            until=until,
            regex=regex,
            should_tail=should_tail,
            is_done=is_done,
            classify=self.classify_error,
        )


def check_handle(app_id: str, job: Mapping[str, Any]) -> None:
    """Refuses (one line) an app id whose queue or node count is not its job's.

    The id names the job by its id, and the queue and nodes beside it: a hand-made or
    stale handle naming another queue would show, and cancel, a job of another.
    Upstream's ``queue:job-name`` found the job in that queue already.
    """
    from torchx.schedulers.contract.errors import InvalidAppIdError

    queue, job_id, region, nodes = parse_app_id(app_id)
    actual_queue = str(job.get("jobQueue") or "").rsplit("/", 1)[-1]
    actual_nodes = int((job.get("nodeProperties") or {}).get("numNodes") or 1)
    wrong = []
    if actual_queue and actual_queue != queue:
        wrong.append(f"is in queue {actual_queue}, not {queue}")
    if nodes is not None and actual_nodes != nodes:
        wrong.append(f"has {actual_nodes} nodes, not {nodes}")
    if wrong:
        jid = str(job.get("jobId") or job_id)
        right = ""
        if region and actual_queue:
            right = f"; its app id is {app_id_of(actual_queue, jid, region, actual_nodes)}"
        raise InvalidAppIdError(
            f"aws_batch app id {app_id} does not match its job: job {jid} "
            f"{' and '.join(wrong)}{right}"
        )


def _node_index(job: Mapping[str, Any], role_name: str, k: int) -> int:
    props = job.get("nodeProperties")
    if not props:
        if k != 0:
            raise SpecError(f"aws_batch app has 1 replica: replica {k} does not exist")
        return 0
    for role, first, count in roles_of(props):
        if role == role_name:
            if not 0 <= k < count:
                raise SpecError(
                    f"role '{role_name}' has {count} replicas: replica {k} does not exist"
                )
            return first + k
    known = ", ".join(r for r, _, _ in roles_of(props))
    raise SpecError(f"the app has no role '{role_name}': its roles are {known}")


def _stream_of(
    job: Mapping[str, Any], nodes: Iterable[Mapping[str, Any]], index: int
) -> str | None:
    """The log stream of node ``index``: its node job's, else (single node, or an emulator
    without node jobs) the job's own."""
    for node in nodes:
        details = node.get("nodeDetails") or {}
        suffix = str(node.get("jobId", "")).rpartition("#")[2]
        if details.get("nodeIndex") == index or suffix == str(index):
            name = (node.get("container") or {}).get("logStreamName")
            if name:
                return str(name)
    name = (job.get("container") or {}).get("logStreamName")
    return str(name) if name else None


def create_scheduler(session_name: str, **kwargs: Any) -> AwsBatchScheduler:
    """The ``aws_batch`` scheduler (the factory the plugin registers)."""
    return AwsBatchScheduler(session_name, backend=kwargs.get("backend"))
