"""AWS, as the schedulers call it: boto3 clients made once, closed together, errors mapped.

:class:`AwsBackend` is what the ``aws_batch`` and ``aws_sagemaker`` backends
(:mod:`torchx_aws.batch.backend`, :mod:`torchx_aws.sagemaker.backend`) build on: one
boto3 client per (service, region, profile), made on first use by
:func:`torchx_aws.session.client` (the standard AWS configuration, botocore's own
retries off) and closed by ``close()``; botocore's exceptions in the Scheduler
contract's terms (:func:`torchx_aws.errors.classify_error`); and :meth:`AwsBackend.call`,
through which every call to AWS goes (:func:`torchx.schedulers.helpers.retry.call_with_retries`
with that map: throttling, the transient HTTP answers and an endpoint out of reach are
retried). boto3 is imported when the first client is made, never at import time.

Tests give a backend a ``client_factory`` (``(service, region, profile) -> client``:
botocore stubs) and the scheduler that backend (its ``backend=`` keyword).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from torchx.schedulers.contract.errors import SchedulerError
from torchx.schedulers.helpers.clients import ClientCache
from torchx.schedulers.helpers.retry import Backoff, call_with_retries
from torchx_aws.errors import classify_error

__all__ = ["BACKOFF", "AwsBackend", "ClientFactory"]

T = TypeVar("T")

#: The retry budget of one call to AWS (both schedulers): an endpoint that is down is
#: reported within seconds, as the README promises (at most 15 s of retries per call),
#: not after TorchX's general 60 s. The error it ends in is not transient, so a status
#: poll of the Runner does not retry it again on top.
BACKOFF = Backoff(attempts=5, initial=0.25, max_delay=2.0, deadline=15.0)

#: ``client_factory(service, region, profile)``: makes a boto3 client (tests give stubs).
ClientFactory = Callable[[str, "str | None", "str | None"], Any]


def _session_client(service: str, region: str | None, profile: str | None) -> Any:
    from torchx_aws.session import client

    return client(service, region=region, profile=profile)


class AwsBackend:
    """boto3 clients per (service, region, profile), the errors' map, the retried call.

    Args:
        client_factory: makes the clients (tests); default: :func:`torchx_aws.session.client`
        backoff: the retry budget of :meth:`call` (None: :data:`BACKOFF`)
    """

    def __init__(
        self, client_factory: ClientFactory | None = None, backoff: Backoff | None = None
    ) -> None:
        make = client_factory or _session_client
        self._clients: ClientCache[tuple[str, str | None, str | None], Any] = ClientCache(
            lambda key: make(*key)
        )
        self.backoff = backoff or BACKOFF

    def client(self, service: str, region: str | None = None, profile: str | None = None) -> Any:
        """The client of ``service`` in ``region`` (None: boto3's) as ``profile``."""
        return self._clients.get((service, region, profile))

    def close(self) -> None:
        """Closes every client made so far."""
        self._clients.close()

    def classify_error(self, e: BaseException) -> SchedulerError | None:
        """botocore's errors in contract terms (:func:`torchx_aws.errors.classify_error`)."""
        return classify_error(e)

    def call(self, what: str, fn: Callable[[], T]) -> T:
        """``fn()``, its transient failures retried (``what`` names it in messages)."""
        return call_with_retries(fn, what, self.backoff, classify=self.classify_error)
