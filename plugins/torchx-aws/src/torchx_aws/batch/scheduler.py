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

Every call goes through :func:`torchx.schedulers.retry.call_with_retries` with
:func:`torchx_aws.errors.classify_error`. boto3 is imported only when a client is made
(:mod:`torchx_aws.session`): a dry run, ``torchx runopts aws_batch`` and ``torchx
--help`` never import it.
"""

from __future__ import annotations

import builtins
import warnings
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime
from typing import Any, TypeVar

from torchx.schedulers.api import DescribeAppResponse, ListAppResponse, Scheduler, Stream
from torchx.schedulers.capabilities import Capability
from torchx.schedulers.errors import SchedulerError, TransientSchedulerError
from torchx.schedulers.ids import join_app_id, make_app_id
from torchx.schedulers.retry import Backoff, call_with_retries
from torchx.specs import AppDef, AppDryRunInfo, AppState, CfgVal, runopts
from torchx.specs.errors import SpecError
from torchx_aws.batch.options import batch_runopts, read
from torchx_aws.batch.request import (
    BatchRequest,
    make_request,
    retry_policy_warnings,
    roles_of,
)
from torchx_aws.batch.status import CANCEL_REASON, describe_response, list_response
from torchx_aws.errors import classify_error
from torchx_aws.workspace import AwsImageWorkspaceMixin

__all__ = ["LOG_GROUP", "AwsBatchScheduler", "create_scheduler", "parse_app_id"]

T = TypeVar("T")

#: Where Batch's default log driver (awslogs) writes each container's output.
LOG_GROUP = "/aws/batch/job"
#: ``DescribeJobs`` takes at most this many ids per call.
DESCRIBE_MAX = 100
#: The retry budget of this scheduler's own calls: an endpoint that is down is reported
#: within seconds (a status poll of the Runner retries again on top, with its own).
BACKOFF = Backoff(attempts=5, initial=0.25, max_delay=2.0, deadline=15.0)
_FORM = "queue:job-id:region:nodes"

#: Batch's records of jobs (DescribeJobs, ListJobs answers).
Records = list[dict[str, Any]]

#: ``client_factory(service, region, profile)``: makes a boto3 client (tests give stubs).
ClientFactory = Callable[[str, "str | None", "str | None"], Any]


def parse_app_id(app_id: str) -> tuple[str, str, str | None, int | None]:
    """(queue, job id or name, region, nodes) of an app id; region and nodes None when
    the id is upstream's two-part ``queue:job-name``.

    >>> parse_app_id("gpu:2dc82baf-d5bf:us-east-1:4")
    ('gpu', '2dc82baf-d5bf', 'us-east-1', 4)
    >>> parse_app_id("gpu:trainer-x1")
    ('gpu', 'trainer-x1', None, None)
    >>> parse_app_id("trainer")
    Traceback (most recent call last):
     ...
    torchx.schedulers.errors.InvalidAppIdError: invalid aws_batch app id 'trainer': expected queue:job-id:region:nodes (e.g. gpu-queue:6f1c2a9e-3b1d-4c1e-9d0a-1f2e3d4c5b6a:us-east-1:2) or upstream's queue:job-name
    """
    import re

    from torchx.schedulers.errors import InvalidAppIdError

    parts = app_id.split(":") if isinstance(app_id, str) else []
    part = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,252}")
    ok = len(parts) in (2, 4) and all(part.fullmatch(p) for p in parts)
    if ok and len(parts) == 4 and not parts[3].isdigit():
        ok = False
    if not ok:
        raise InvalidAppIdError(
            f"invalid aws_batch app id {app_id!r}: expected {_FORM} (e.g. "
            "gpu-queue:6f1c2a9e-3b1d-4c1e-9d0a-1f2e3d4c5b6a:us-east-1:2) or upstream's "
            "queue:job-name"
        )
    if len(parts) == 2:
        return parts[0], parts[1], None, None
    return parts[0], parts[1], parts[2], int(parts[3])


def _default_clients(service: str, region: str | None, profile: str | None) -> Any:
    from torchx_aws.session import client

    return client(service, region=region, profile=profile)


class AwsBatchScheduler(AwsImageWorkspaceMixin, Scheduler[Mapping[str, CfgVal]]):
    """Apps as AWS Batch jobs (see the module docstring).

    Args:
        session_name: the session the handles carry
        client_factory: makes the boto3 clients (tests); default:
            :func:`torchx_aws.session.client`
    """

    #: Who pulls a workspace's image (see :class:`~torchx_aws.workspace.AwsImageWorkspaceMixin`).
    puller = "Batch"

    #: What Batch itself lacks, on AWS as on an emulator.
    missing_capabilities: Mapping[Capability, str] = {
        Capability.SEPARATE_STREAMS: "Batch sends stdout and stderr to one CloudWatch Logs stream",
        Capability.DELETE: "Batch keeps every job's record (about a week) and has no call "
        "to remove one; delete deregisters the job definition",
    }

    def __init__(self, session_name: str, client_factory: ClientFactory | None = None) -> None:
        super().__init__("aws_batch", session_name)
        self._factory = client_factory or _default_clients
        self._clients: dict[tuple[str, str | None, str | None], Any] = {}
        self._profile: str | None = None

    # -- AWS ------------------------------------------------------------------------------

    def _client(self, service: str, region: str | None, profile: str | None = None) -> Any:
        key = (service, region, profile or self._profile)
        found = self._clients.get(key)
        if found is None:
            found = self._factory(service, region, profile or self._profile)
            self._clients[key] = found
        return found

    def close(self) -> None:
        clients, self._clients = self._clients, {}
        for c in clients.values():
            try:
                c.close()
            except Exception:
                pass

    def classify_error(self, e: BaseException) -> SchedulerError | None:
        """botocore's errors in contract terms (:func:`torchx_aws.errors.classify_error`)."""
        return classify_error(e)

    def _call(self, what: str, fn: Callable[[], T]) -> T:
        return call_with_retries(fn, what, BACKOFF, classify=self.classify_error)

    # -- submitting -----------------------------------------------------------------------

    def _run_opts(self) -> runopts:
        return batch_runopts()

    def _submit_dryrun(self, app: AppDef, cfg: Mapping[str, CfgVal]) -> AppDryRunInfo[BatchRequest]:
        request = make_request(app, make_app_id(app.name), read(cfg))
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
        batch = self._client("batch", req.region, req.profile)
        region = str(batch.meta.region_name)
        name = req.name
        job_def_arn = self._register(batch, req)
        try:
            job_id = self._submit(batch, req, job_def_arn)
        except BaseException as e:
            try:
                self._call(
                    f"deregister job definition {name}",
                    lambda: batch.deregister_job_definition(jobDefinition=job_def_arn),
                )
            except Exception:
                pass  # the submit's error is the one to tell
            raise _one_line(e, f"submitting job {name} to queue {req.queue}") from e
        return join_app_id(req.queue, job_id, region, str(req.num_nodes), form=_FORM)

    def _register(self, batch: Any, req: BatchRequest) -> str:
        name = req.name
        registered: list[str] = []

        def register() -> str:
            if registered:  # an earlier attempt may have registered it: look first
                found = batch.describe_job_definitions(jobDefinitionName=name, status="ACTIVE")
                for jd in found.get("jobDefinitions") or []:
                    return str(jd["jobDefinitionArn"])
            registered.append(name)
            answer = batch.register_job_definition(**req.job_def)
            return str(answer["jobDefinitionArn"])

        try:
            return self._call(f"register job definition {name}", register)
        except BaseException as e:
            raise _one_line(e, f"registering job definition {name}") from e

    def _submit(self, batch: Any, req: BatchRequest, job_def_arn: str) -> str:
        tried: list[bool] = []

        def submit() -> str:
            if tried:  # it may have been submitted: find it by its unique name
                found = batch.list_jobs(
                    jobQueue=req.queue, filters=[{"name": "JOB_NAME", "values": [req.name]}]
                )
                for summary in found.get("jobSummaryList") or []:
                    if summary.get("jobName") == req.name:
                        return str(summary["jobId"])
            tried.append(True)
            answer = batch.submit_job(jobDefinition=job_def_arn, **req.job)
            return str(answer["jobId"])

        return self._call(f"submit job {req.name}", submit)

    # -- following ------------------------------------------------------------------------

    def _locate(self, app_id: str) -> tuple[Any, str, str, str, int | None]:
        """(batch client, region, queue, job id, nodes) of an app id."""
        queue, job, region, nodes = parse_app_id(app_id)
        batch = self._client("batch", region)
        where = region or str(batch.meta.region_name)
        if region is None:  # upstream's queue:job-name: find the job by name
            answer = self._call(
                f"find job {job} in queue {queue}",
                lambda: batch.list_jobs(
                    jobQueue=queue, filters=[{"name": "JOB_NAME", "values": [job]}]
                ),
            )
            found = [s for s in answer.get("jobSummaryList") or [] if s.get("jobName") == job]
            if found:
                found.sort(key=lambda s: s.get("createdAt") or 0, reverse=True)
                job = str(found[0]["jobId"])
        return batch, where, queue, job, nodes

    def _jobs(self, batch: Any, ids: builtins.list[str]) -> Records:
        out: Records = []
        for start in range(0, len(ids), DESCRIBE_MAX):
            chunk = ids[start : start + DESCRIBE_MAX]
            answer = self._call(
                f"describe jobs {chunk[0]}...",
                lambda chunk=chunk: batch.describe_jobs(jobs=chunk),  # type: ignore[misc]
            )
            out += answer.get("jobs") or []
        return out

    def _describe_raw(self, app_id: str) -> tuple[str, dict[str, Any] | None, Records]:
        """(region, the job's record or None, its node jobs' records)."""
        batch, region, _, job_id, nodes = self._locate(app_id)
        ids = [job_id]
        if nodes is not None and nodes > 1:
            ids += [f"{job_id}#{i}" for i in range(nodes)]
        jobs = self._jobs(batch, ids)
        parent = next((j for j in jobs if j.get("jobId") == job_id), None)
        if parent is not None and nodes is None and parent.get("nodeProperties"):
            count = int(parent["nodeProperties"].get("numNodes") or 0)
            jobs += self._jobs(batch, [f"{job_id}#{i}" for i in range(count)])
        node_jobs = [j for j in jobs if j is not parent]
        return region, parent, node_jobs

    def describe(self, app_id: str) -> DescribeAppResponse | None:
        region, job, nodes = self._describe_raw(app_id)
        if job is None:
            return None
        return describe_response(app_id, region, job, nodes)

    def list(self, cfg: Mapping[str, CfgVal] | None = None) -> builtins.list[ListAppResponse]:
        cfg = cfg or {}
        region = cfg.get("region")
        batch = self._client(
            "batch", None if region is None else str(region), _opt(cfg.get("profile"))
        )
        where = str(batch.meta.region_name)
        if cfg.get("queue"):
            queues = [str(cfg["queue"])]
        else:
            queues = [
                str(q["jobQueueName"])
                for q in self._pages(batch, "describe_job_queues", {}, "jobQueues")
            ]
        out: builtins.list[ListAppResponse] = []
        for queue in queues:
            summaries = self._pages(
                batch,
                "list_jobs",
                # any filter makes Batch list every state; creation after the epoch is all
                {"jobQueue": queue, "filters": [{"name": "AFTER_CREATED_AT", "values": ["0"]}]},
                "jobSummaryList",
            )
            ids = [str(s["jobId"]) for s in summaries if "#" not in str(s.get("jobId"))]
            for job in self._jobs(batch, ids):
                tags = job.get("tags") or {}
                if "torchx.pytorch.org/version" not in tags:
                    continue
                count = int((job.get("nodeProperties") or {}).get("numNodes") or 1)
                app_id = join_app_id(queue, str(job["jobId"]), where, str(count), form=_FORM)
                out.append(list_response(app_id, job))
        out.sort(key=lambda r: r.start_time or 0, reverse=True)
        return out

    def _pages(self, batch: Any, method: str, kwargs: dict[str, Any], key: str) -> Records:
        items: Records = []
        token: str | None = None
        seen: set[str] = set()
        while True:
            args = dict(kwargs, **({"nextToken": token} if token else {}))
            answer = self._call(
                f"{method} {kwargs.get('jobQueue', '')}".strip(),
                lambda args=args: getattr(batch, method)(**args),  # type: ignore[misc]
            )
            items += answer.get(key) or []
            token = answer.get("nextToken")
            if not token or token in seen:
                return items
            seen.add(token)

    def cancel(self, app_id: str) -> None:
        """Terminates the job unless it has ended (one DescribeJobs, one TerminateJob):
        a job that ended keeps its own state and reason."""
        batch, _, _, job_id, _ = self._locate(app_id)
        jobs = self._jobs(batch, [job_id])
        if jobs and not describe_state(jobs[0]).is_terminal():
            self._cancel_existing(app_id)

    def _cancel_existing(self, app_id: str) -> None:
        batch, _, _, job_id, _ = self._locate(app_id)
        self._call(
            f"terminate job {job_id}",
            lambda: batch.terminate_job(jobId=job_id, reason=CANCEL_REASON),
        )

    def _delete_existing(self, app_id: str) -> None:
        batch, _, _, job_id, _ = self._locate(app_id)
        [job] = self._jobs(batch, [job_id]) or [{}]
        if job and not AppState(describe_state(job)).is_terminal():
            self._call(
                f"terminate job {job_id}",
                lambda: batch.terminate_job(jobId=job_id, reason=CANCEL_REASON),
            )
        job_def = job.get("jobDefinition")
        if job_def:
            self._call(
                f"deregister job definition {job_def}",
                lambda: batch.deregister_job_definition(jobDefinition=job_def),
            )

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
        logs = self._client("logs", region)
        state: dict[str, Any] = {
            "done": describe_state(job).is_terminal(),
            "stream": _stream_of(job, nodes, node),
        }

        def refresh() -> None:
            _, parent, nodes = self._describe_raw(app_id)
            if parent is None:
                state["done"] = True
                return
            state["done"] = describe_state(parent).is_terminal()
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


def describe_state(job: Mapping[str, Any]) -> AppState:
    from torchx_aws.batch.status import state_of

    return state_of(job)


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


def _opt(value: CfgVal | None) -> str | None:
    return None if value is None else str(value)


def _one_line(e: BaseException, doing: str) -> BaseException:
    """``e`` as the one-line error a failed submit raises (AWS's errors mapped)."""
    if isinstance(e, SpecError):
        return e
    mapped = classify_error(e) if not isinstance(e, SchedulerError) else e
    if isinstance(mapped, TransientSchedulerError):
        return SchedulerError(f"{doing}: {mapped}")
    if mapped is not None:
        return mapped if doing in str(mapped) else SchedulerError(f"{doing}: {mapped}")
    return e


def create_scheduler(session_name: str, **kwargs: Any) -> AwsBatchScheduler:
    """The ``aws_batch`` scheduler (the factory the plugin registers)."""
    factory = kwargs.get("client_factory")
    return AwsBatchScheduler(session_name, client_factory=factory)
