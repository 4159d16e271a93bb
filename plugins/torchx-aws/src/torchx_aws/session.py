"""boto3 clients made from the standard AWS configuration, with retries left to TorchX.

Every AWS scheduler of this distribution gets its clients here::

    from torchx_aws.session import client

    batch = client("batch", region=opts.region, profile=opts.profile)

What the client honours is boto3's own configuration, so a user's existing setup works
unchanged: ``AWS_PROFILE`` and the shared config/credentials files, credentials from the
environment or an instance role, the region from ``AWS_DEFAULT_REGION`` (or
``AWS_REGION``, which other AWS SDKs read) or the profile, and ``AWS_ENDPOINT_URL`` /
``AWS_ENDPOINT_URL_<SERVICE>`` to send the calls to another endpoint (an AWS API
emulator on loopback, a VPC endpoint). ``region`` and ``profile`` (the run options of
the same names) override the first two.

Two things differ from a default boto3 client, on purpose:

* botocore's own retries are off (one attempt per call): transient failures
  (throttling, 5xx, a connection refused) are retried in one place,
  :func:`torchx.schedulers.helpers.retry.call_with_retries`, with the scheduler's
  ``classify_error`` (:func:`torchx_aws.errors.classify_error`), so that the budget and
  the "state unknown, not failed" rule are TorchX's;
* connecting times out after :data:`CONNECT_TIMEOUT` seconds, and an answer after
  :data:`READ_TIMEOUT` more: one call answers or fails within 15 s (an endpoint that is
  down or frozen is reported within seconds, not after botocore's 60 and 60).

A missing region or missing credentials raise one-line
:class:`~torchx.schedulers.contract.errors.SchedulerError` s that say how to give them, before
any call is made. boto3 is imported inside :func:`client`, never at import time.
"""

from __future__ import annotations

import os
from typing import Any

from torchx.schedulers.contract.errors import SchedulerError

__all__ = ["CONNECT_TIMEOUT", "READ_TIMEOUT", "client", "resolve_region"]

#: Seconds to connect to an endpoint before the call fails (and is retried as transient).
CONNECT_TIMEOUT = 5.0
#: Seconds to wait for an answer once connected (the calls made answer in well under a
#: second; with :data:`CONNECT_TIMEOUT`, one call is bounded by the 15 s the README says).
READ_TIMEOUT = 10.0


def resolve_region(session: Any, region: str | None) -> str:
    """The region a client of ``session`` uses: ``region``, else boto3's, else ``AWS_REGION``.

    Raises one line saying how to set it when none is found.
    """
    found = region or session.region_name or os.environ.get("AWS_REGION")
    if not found:
        raise SchedulerError(
            "no AWS region: set AWS_DEFAULT_REGION (or AWS_REGION), a region in your AWS "
            "profile, or the run option region=us-east-1"
        )
    return str(found)


def client(service: str, *, region: str | None = None, profile: str | None = None) -> Any:
    """A boto3 client of ``service`` (``"batch"``, ``"logs"``, ``"sagemaker"``, ...).

    See the module for what it reads and what it changes. Raises a one-line
    :class:`SchedulerError` for a profile that does not exist, no region, or no
    credentials.
    """
    import boto3
    import botocore.config
    import botocore.exceptions

    try:
        session = boto3.session.Session(profile_name=profile or None)
    except botocore.exceptions.ProfileNotFound:
        raise SchedulerError(
            f"AWS profile {profile!r} is not in your AWS config files (~/.aws/config): "
            "name an existing one with the run option profile=... or AWS_PROFILE"
        ) from None
    where = resolve_region(session, region)
    if session.get_credentials() is None:
        raise SchedulerError(
            "no AWS credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, a profile "
            "(AWS_PROFILE or the run option profile=...) with credentials, or run where an "
            "instance role provides them"
        )
    config = botocore.config.Config(
        region_name=where,
        connect_timeout=CONNECT_TIMEOUT,
        read_timeout=READ_TIMEOUT,
        retries={"total_max_attempts": 1, "mode": "standard"},
        user_agent_extra="torchx-aws",
    )
    return session.client(service, config=config)
