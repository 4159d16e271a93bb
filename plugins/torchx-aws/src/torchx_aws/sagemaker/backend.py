"""SageMaker, as the ``aws_sagemaker`` scheduler calls it: every AWS call is made here.

:class:`SageMakerBackend` is a :class:`torchx_aws.backend.AwsBackend` (boto3 clients
made once, closed together, every call retried through ``classify_error``) with the
calls the scheduler's operations are made of: ``CreateTrainingJob`` made once
(:func:`torchx.schedulers.helpers.retry.create_once`: SageMaker refuses a name twice, and the
name is the submit's own, so a retry's ``ResourceInUse`` means the first attempt made
it), ``GetRole`` (a role given by name), ``DescribeTrainingJob`` (None for a job that
does not exist), ``ListTags``, ``Search``, ``StopTrainingJob`` (nothing to do for a job
that is no longer ``InProgress``) and the job's CloudWatch Logs streams.
"""

from __future__ import annotations

from typing import Any

from torchx.schedulers.helpers.retry import create_once
from torchx_aws.backend import AwsBackend

__all__ = ["LOG_GROUP", "SageMakerBackend"]

#: The CloudWatch Logs group SageMaker writes training jobs' output to.
LOG_GROUP = "/aws/sagemaker/TrainingJobs"


class SageMakerBackend(AwsBackend):
    """The AWS calls of the ``aws_sagemaker`` scheduler (see the module).

    Args:
        client_factory: makes the boto3 clients (tests); default:
            :func:`torchx_aws.session.client`
    """

    def sagemaker(self, region: str | None, profile: str | None = None) -> Any:
        """The SageMaker client of ``region`` (None: boto3's)."""
        return self.client("sagemaker", region, profile)

    def role_arn(self, role: str, region: str | None, profile: str | None) -> str:
        """The ARN of IAM role ``role`` (an ARN is given back as it is)."""
        if role.startswith("arn:"):
            return role
        iam = self.client("iam", region, profile)
        answer = self.call(f"look up IAM role {role!r}", lambda: iam.get_role(RoleName=role))
        return str(answer["Role"]["Arn"])

    def create(self, sagemaker: Any, params: dict[str, Any]) -> None:
        """``CreateTrainingJob`` of ``params``, once (see the module)."""
        create_once(
            lambda: sagemaker.create_training_job(**params),
            f"create training job {params['TrainingJobName']}",
            self.backoff,
            classify=self.classify_error,
            exists=lambda e: _error_code(e) == "ResourceInUse",
        )

    def describe(self, region: str | None, name: str) -> tuple[str | None, dict[str, Any] | None]:
        """(the client's region, the job's record) of training job ``name``; the record is
        None if there is no such job."""
        sagemaker = self.sagemaker(region)
        try:
            job = self.call(
                f"describe training job {name}",
                lambda: sagemaker.describe_training_job(TrainingJobName=name),
            )
        except Exception as e:
            if _not_found(e):
                return region, None
            raise
        return str(sagemaker.meta.region_name), dict(job)

    def tags(self, region: str | None, job: dict[str, Any]) -> dict[str, str]:
        """The tags of a training job (one ``ListTags``)."""
        sagemaker = self.sagemaker(region)
        arn = job["TrainingJobArn"]
        answer = self.call(
            f"tags of training job {job['TrainingJobName']}",
            lambda: sagemaker.list_tags(ResourceArn=arn),
        )
        return {str(t["Key"]): str(t["Value"]) for t in answer.get("Tags") or []}

    def search(self, sagemaker: Any, search: dict[str, Any], token: str | None) -> Any:
        """One page of ``Search`` (after ``token``)."""
        kwargs = {**search, **({"NextToken": token} if token else {})}
        return self.call(
            "search training jobs tagged by torchx", lambda: sagemaker.search(**kwargs)
        )

    def stop(self, region: str | None, name: str) -> None:
        """``StopTrainingJob``; a job that is not ``InProgress`` (ended, or stopping
        already) has nothing left to stop."""
        sagemaker = self.sagemaker(region)

        def stop() -> None:
            try:
                sagemaker.stop_training_job(TrainingJobName=name)
            except Exception as e:
                if _error_code(e) == "ValidationException" and not _not_found(e):
                    return
                raise

        self.call(f"stop training job {name}", stop)

    def log_stream(self, logs: Any, name: str, instance: int) -> str | None:
        """The log stream of instance ``instance`` (1, 2, ...) of job ``name``, if any yet."""
        prefix = f"{name}/algo-{instance}-"
        answer = self.call(
            f"find the log stream of {name} instance {instance}",
            lambda: _log_streams(logs, prefix),
        )
        found = sorted(s["logStreamName"] for s in answer if "logStreamName" in s)
        return found[0] if found else None


def _log_streams(logs: Any, prefix: str) -> list[dict[str, Any]]:
    """The streams of :data:`LOG_GROUP` named ``prefix...``; none while the group is absent."""
    try:
        answer = logs.describe_log_streams(logGroupName=LOG_GROUP, logStreamNamePrefix=prefix)
    except Exception as e:
        if _error_code(e) == "ResourceNotFoundException":
            return []
        raise
    return list(answer.get("logStreams") or [])


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
