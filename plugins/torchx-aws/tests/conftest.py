"""Unit tests of torchx-aws need no AWS endpoint; ``integration/`` (an emulator) gates itself.

:func:`stubbed` gives real boto3 clients whose answers the test scripts with botocore's
``Stubber`` (requests are checked against AWS's API model, nothing leaves the process),
which is how AWS's documented behaviour is tested where the emulator lacks it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest


class Stubs:
    """One stubbed client per service; ``factory`` is a backend's ``client_factory``."""

    def __init__(self) -> None:
        import boto3
        from botocore.stub import Stubber

        session = boto3.session.Session(
            aws_access_key_id="k", aws_secret_access_key="s", region_name="us-east-1"
        )
        self.clients: dict[str, Any] = {}
        self.stubbers: dict[str, Stubber] = {}
        for service in ("batch", "logs"):
            c = session.client(service, endpoint_url="http://127.0.0.1:9")
            self.clients[service] = c
            self.stubbers[service] = Stubber(c)
            self.stubbers[service].activate()

    def factory(self, service: str, region: str | None, profile: str | None) -> Any:
        del region, profile
        return self.clients[service]

    def add(
        self,
        service: str,
        method: str,
        answer: dict[str, Any],
        expected: dict[str, Any] | None = None,
    ) -> None:
        self.stubbers[service].add_response(method, answer, expected)

    def error(
        self,
        service: str,
        method: str,
        code: str,
        status: int = 400,
        expected: dict[str, Any] | None = None,
    ) -> None:
        self.stubbers[service].add_client_error(
            method,
            service_error_code=code,
            service_message=f"{code} said",
            http_status_code=status,
            expected_params=expected,
        )

    def done(self) -> None:
        for s in self.stubbers.values():
            s.assert_no_pending_responses()


@pytest.fixture(autouse=True)
def private_cache(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test's own cache directory: the apps a test submits (``torchx_aws.recent``)
    are not another test's."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))


@pytest.fixture
def stubs(monkeypatch: pytest.MonkeyPatch) -> Iterator[Stubs]:
    # retries in these tests must not sleep
    import torchx.schedulers.helpers.retry as retry

    monkeypatch.setattr(retry.time, "sleep", lambda s: None)
    yield Stubs()
