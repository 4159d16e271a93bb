"""botocore's exceptions in the Scheduler contract's terms: the one map, shared by the AWS schedulers.

Each scheduler's ``classify_error`` is :func:`classify_error`, and every call to AWS
goes through :func:`torchx.schedulers.helpers.retry.call_with_retries` with it, so:

* throttling (``ThrottlingException``, ``TooManyRequestsException``, ... or HTTP 429),
  the transient HTTP answers (:func:`~torchx.schedulers.contract.errors.transient_http_status`:
  a 5xx but 501 and 505, 408), and an endpoint that cannot be reached or timed out are
  :class:`~torchx.schedulers.contract.errors.TransientSchedulerError` s: retried with backoff,
  and never a failed app;
* credentials that AWS does not accept (or none at all) are one-line
  :class:`~torchx.schedulers.contract.errors.AuthenticationError` s, and any other refusal a
  one-line :class:`~torchx.schedulers.contract.errors.SchedulerError`, naming the operation,
  AWS's error code and its message. Credentials refused while an app is followed
  (``run --wait``) leave its state unknown (exit 4): they say nothing of the app.

>>> from types import SimpleNamespace
>>> throttled = {"Error": {"Code": "ThrottlingException", "Message": "Rate exceeded"},
...              "ResponseMetadata": {"HTTPStatusCode": 400, "HTTPHeaders": {}}}
>>> describe_client_error(throttled, "DescribeJobs")
('AWS throttled DescribeJobs: ThrottlingException: Rate exceeded', True, None)
>>> refused = {"Error": {"Code": "ClientException", "Message": "queue not found"},
...            "ResponseMetadata": {"HTTPStatusCode": 400}}
>>> describe_client_error(refused, "SubmitJob")[:2]
('AWS refused SubmitJob: ClientException: queue not found', False)
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from torchx.schedulers.contract.errors import (
    AuthenticationError,
    SchedulerError,
    TransientSchedulerError,
    transient_http_status,
)

__all__ = ["BAD_CREDENTIALS", "THROTTLING", "classify_error", "describe_client_error"]

#: AWS error codes that mean "slow down" (retried, as botocore's own retry handler does).
THROTTLING = frozenset(
    {
        "Throttling",
        "ThrottlingException",
        "ThrottledException",
        "RequestThrottledException",
        "TooManyRequestsException",
        "ProvisionedThroughputExceededException",
        "TransactionInProgressException",
        "RequestLimitExceeded",
        "BandwidthLimitExceeded",
        "RequestThrottled",
        "SlowDown",
        "PriorRequestNotComplete",
        "EC2ThrottledException",
    }
)

#: AWS error codes that mean the credentials were not accepted.
BAD_CREDENTIALS = frozenset(
    {
        "UnrecognizedClientException",
        "InvalidClientTokenId",
        "InvalidSignatureException",
        "SignatureDoesNotMatch",
        "ExpiredToken",
        "ExpiredTokenException",
        "AuthFailure",
        "InvalidAccessKeyId",
    }
)


def describe_client_error(
    response: Mapping[str, Any], operation: str
) -> tuple[str, bool, float | None]:
    """(one-line message, transient?, seconds to wait) for an AWS error answer."""
    error = response.get("Error") or {}
    meta = response.get("ResponseMetadata") or {}
    code = str(error.get("Code") or "")
    message = " ".join(str(error.get("Message") or "").split())
    status = int(meta.get("HTTPStatusCode") or 0)
    headers = meta.get("HTTPHeaders") or {}
    wait: float | None = None
    retry_after = headers.get("retry-after") if isinstance(headers, Mapping) else None
    if retry_after:
        from torchx.schedulers.helpers.retry import parse_retry_after

        wait = parse_retry_after(str(retry_after))
    detail = f"{code}: {message}" if code and message else (code or message or f"HTTP {status}")
    if code in THROTTLING or status == 429:
        return f"AWS throttled {operation}: {detail}", True, wait
    if transient_http_status(status):
        return f"AWS failed {operation} (HTTP {status}): {detail}", True, wait
    if code in BAD_CREDENTIALS:
        return (
            f"AWS did not accept the credentials for {operation}: {detail} (check "
            "AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY or the profile)",
            False,
            None,
        )
    return f"AWS refused {operation}: {detail}", False, None


def classify_error(e: BaseException) -> SchedulerError | None:
    """The contract's error for an exception of botocore (None for any other)."""
    if isinstance(e, SchedulerError):
        return e
    module = type(e).__module__
    if not module.startswith("botocore"):
        return None
    import botocore.exceptions as bx

    if isinstance(e, bx.ClientError):
        operation = getattr(e, "operation_name", "") or "a call"
        text, transient, wait = describe_client_error(e.response, operation)
        if transient:
            return TransientSchedulerError(text, retry_after=wait)
        code = str((e.response.get("Error") or {}).get("Code") or "")
        return AuthenticationError(text) if code in BAD_CREDENTIALS else SchedulerError(text)
    if isinstance(
        e,
        bx.EndpointConnectionError
        | bx.ConnectTimeoutError
        | bx.ReadTimeoutError
        | bx.ConnectionClosedError,
    ):
        where = getattr(e, "kwargs", {}).get("endpoint_url")
        said = f"cannot reach the AWS endpoint {where}" if where else "cannot reach AWS"
        return TransientSchedulerError(f"{said}: {type(e).__name__}")
    if isinstance(e, bx.NoCredentialsError | bx.PartialCredentialsError):
        return AuthenticationError(
            f"no usable AWS credentials ({e}): set AWS_ACCESS_KEY_ID and "
            "AWS_SECRET_ACCESS_KEY, or a profile with credentials"
        )
    if isinstance(e, bx.NoRegionError):
        return SchedulerError(
            "no AWS region: set AWS_DEFAULT_REGION (or AWS_REGION), or the run option region=..."
        )
    if isinstance(e, bx.ParamValidationError):
        return SchedulerError(" ".join(f"invalid request to AWS: {e}".split()))
    if isinstance(e, bx.BotoCoreError):
        return SchedulerError(" ".join(f"AWS: {e}".split()))
    return None
