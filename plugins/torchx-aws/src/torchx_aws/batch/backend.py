"""AWS Batch, as the ``aws_batch`` scheduler calls it: every Batch call is made here.

:class:`BatchBackend` is a :class:`torchx_aws.backend.AwsBackend` (boto3 clients made
once, closed together, every call retried through ``classify_error``) with the Batch
calls the scheduler's operations are made of:

* :meth:`~BatchBackend.register` and :meth:`~BatchBackend.submit`: neither
  ``RegisterJobDefinition`` nor ``SubmitJob`` is idempotent, so each is made once
  (:func:`torchx.schedulers.helpers.retry.create_once`): a transient failure (throttling, a
  5xx, a timeout: it may have happened) is followed by a look-up by the unique name
  before trying again;
* :meth:`~BatchBackend.jobs`: ``DescribeJobs``, 100 ids per call;
* :meth:`~BatchBackend.pages`: a listing call read to its last page;
* :meth:`~BatchBackend.find_job`, :meth:`~BatchBackend.terminate`,
  :meth:`~BatchBackend.deregister`.
"""

from __future__ import annotations

from typing import Any

from torchx.schedulers.helpers.retry import create_once
from torchx_aws.backend import BACKOFF, AwsBackend, ClientFactory
from torchx_aws.batch.request import BatchRequest
from torchx_aws.batch.status import CANCEL_REASON

__all__ = ["BACKOFF", "DESCRIBE_MAX", "BatchBackend", "Records"]

#: ``DescribeJobs`` takes at most this many ids per call.
DESCRIBE_MAX = 100

#: Batch's records of jobs (DescribeJobs, ListJobs answers).
Records = list[dict[str, Any]]


class BatchBackend(AwsBackend):
    """The Batch calls of the ``aws_batch`` scheduler (see the module).

    Args:
        client_factory: makes the boto3 clients (tests); default:
            :func:`torchx_aws.session.client`
    """

    def __init__(self, client_factory: ClientFactory | None = None) -> None:
        super().__init__(client_factory, BACKOFF)

    def batch(self, region: str | None, profile: str | None = None) -> Any:
        """The Batch client of ``region`` (None: boto3's)."""
        return self.client("batch", region, profile)

    def register(self, batch: Any, req: BatchRequest) -> str:
        """Registers the request's job definition once; its ARN."""
        name = req.name

        def find() -> str | None:
            found = batch.describe_job_definitions(jobDefinitionName=name, status="ACTIVE")
            for jd in found.get("jobDefinitions") or []:
                return str(jd["jobDefinitionArn"])
            return None

        return create_once(
            lambda: str(batch.register_job_definition(**req.job_def)["jobDefinitionArn"]),
            f"register job definition {name}",
            self.backoff,
            classify=self.classify_error,
            find=find,
        )

    def submit(self, batch: Any, req: BatchRequest, job_def_arn: str) -> str:
        """Submits the request's job once (a job of ``job_def_arn``); its id."""
        return create_once(
            lambda: str(batch.submit_job(jobDefinition=job_def_arn, **req.job)["jobId"]),
            f"submit job {req.name}",
            self.backoff,
            classify=self.classify_error,
            # it may have been submitted: find it by its unique name
            find=lambda: self._job_named(batch, req.queue, req.name),
        )

    def _job_named(self, batch: Any, queue: str, name: str) -> str | None:
        found = batch.list_jobs(jobQueue=queue, filters=[{"name": "JOB_NAME", "values": [name]}])
        for summary in found.get("jobSummaryList") or []:
            if summary.get("jobName") == name:
                return str(summary["jobId"])
        return None

    def find_job(self, batch: Any, queue: str, name: str) -> str | None:
        """The id of the newest job named ``name`` in ``queue`` (upstream's ids name jobs)."""
        answer = self.call(
            f"find job {name} in queue {queue}",
            lambda: batch.list_jobs(
                jobQueue=queue, filters=[{"name": "JOB_NAME", "values": [name]}]
            ),
        )
        found = [s for s in answer.get("jobSummaryList") or [] if s.get("jobName") == name]
        if not found:
            return None
        found.sort(key=lambda s: s.get("createdAt") or 0, reverse=True)
        return str(found[0]["jobId"])

    def jobs(self, batch: Any, ids: list[str]) -> Records:
        """The records of the jobs ``ids`` (one ``DescribeJobs`` per 100)."""
        out: Records = []
        for start in range(0, len(ids), DESCRIBE_MAX):
            chunk = ids[start : start + DESCRIBE_MAX]
            answer = self.call(
                f"describe jobs {chunk[0]}...",
                lambda chunk=chunk: batch.describe_jobs(jobs=chunk),  # type: ignore[misc]
            )
            out += answer.get("jobs") or []
        return out

    def pages(self, batch: Any, method: str, kwargs: dict[str, Any], key: str) -> Records:
        """Every item (under ``key``) of a listing call, page after page."""
        items: Records = []
        token: str | None = None
        seen: set[str] = set()
        while True:
            args = dict(kwargs, **({"nextToken": token} if token else {}))
            answer = self.call(
                f"{method} {kwargs.get('jobQueue', '')}".strip(),
                lambda args=args: getattr(batch, method)(**args),  # type: ignore[misc]
            )
            items += answer.get(key) or []
            token = answer.get("nextToken")
            if not token or token in seen:
                return items
            seen.add(token)

    def terminate(self, batch: Any, job_id: str) -> None:
        """``TerminateJob`` with :data:`~torchx_aws.batch.status.CANCEL_REASON`."""
        self.call(
            f"terminate job {job_id}",
            lambda: batch.terminate_job(jobId=job_id, reason=CANCEL_REASON),
        )

    def deregister(self, batch: Any, job_def: str) -> None:
        """Deregisters a job definition."""
        self.call(
            f"deregister job definition {job_def}",
            lambda: batch.deregister_job_definition(jobDefinition=job_def),
        )
