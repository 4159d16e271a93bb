"""Clients come from the standard AWS configuration; what is missing is one line."""

from __future__ import annotations

from pathlib import Path

import pytest
from torchx_aws.errors import classify_error
from torchx_aws.session import CONNECT_TIMEOUT, client

from torchx.schedulers.contract.errors import (
    AuthenticationError,
    SchedulerError,
    TransientSchedulerError,
)


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> pytest.MonkeyPatch:
    for name in (
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_SESSION_TOKEN",
        "AWS_PROFILE",
        "AWS_DEFAULT_REGION",
        "AWS_REGION",
        "AWS_ENDPOINT_URL",
        "AWS_DEFAULT_PROFILE",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "credentials"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")  # no instance role to ask for
    return monkeypatch


def test_no_region_is_one_line(clean_env: pytest.MonkeyPatch) -> None:
    clean_env.setenv("AWS_ACCESS_KEY_ID", "k")
    clean_env.setenv("AWS_SECRET_ACCESS_KEY", "s")
    with pytest.raises(SchedulerError, match=r"^no AWS region: set AWS_DEFAULT_REGION") as e:
        client("batch")
    assert "\n" not in str(e.value)


def test_no_credentials_is_one_line(clean_env: pytest.MonkeyPatch) -> None:
    clean_env.setenv("AWS_DEFAULT_REGION", "us-east-1")
    with pytest.raises(SchedulerError, match=r"^no AWS credentials: set AWS_ACCESS_KEY_ID"):
        client("batch")


def test_an_unknown_profile_is_one_line(clean_env: pytest.MonkeyPatch) -> None:
    with pytest.raises(SchedulerError, match="AWS profile 'nope' is not in your AWS config"):
        client("batch", profile="nope")


def test_profiles_env_endpoint_and_aws_region_are_honoured(
    clean_env: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    (tmp_path / "config").write_text("[profile team]\nregion = eu-west-1\n")
    (tmp_path / "credentials").write_text(
        "[team]\naws_access_key_id = k\naws_secret_access_key = s\n"
    )
    c = client("batch", profile="team")
    assert c.meta.region_name == "eu-west-1"
    assert c.meta.config.retries["total_max_attempts"] == 1  # retries are TorchX's
    assert c.meta.config.connect_timeout == CONNECT_TIMEOUT
    # one call answers or fails within the 15 s the README says
    assert c.meta.config.connect_timeout + c.meta.config.read_timeout <= 15
    clean_env.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:5999")
    clean_env.setenv("AWS_REGION", "ap-south-1")
    clean_env.setenv("AWS_ACCESS_KEY_ID", "k")
    clean_env.setenv("AWS_SECRET_ACCESS_KEY", "s")
    c = client("logs")
    assert c.meta.region_name == "ap-south-1" and c.meta.endpoint_url == "http://127.0.0.1:5999"
    assert client("logs", region="us-west-2").meta.region_name == "us-west-2"


def test_an_endpoint_that_is_down_is_transient_and_says_where(
    clean_env: pytest.MonkeyPatch,
) -> None:
    import botocore.exceptions as bx

    e = bx.EndpointConnectionError(endpoint_url="http://127.0.0.1:1/")
    mapped = classify_error(e)
    assert isinstance(mapped, TransientSchedulerError)
    assert (
        str(mapped) == "cannot reach the AWS endpoint http://127.0.0.1:1/: EndpointConnectionError"
    )
    assert classify_error(ValueError("x")) is None
    assert isinstance(classify_error(bx.NoCredentialsError()), SchedulerError)
    # no credentials: not the app's fault (a command following it says its state is unknown)
    assert isinstance(classify_error(bx.NoCredentialsError()), AuthenticationError)


@pytest.mark.parametrize(
    ("code", "status", "auth"),
    [
        ("ExpiredTokenException", 400, True),
        ("UnrecognizedClientException", 403, True),
        ("AccessDeniedException", 403, False),
        ("ClientException", 400, False),
    ],
)
def test_refused_credentials_are_an_authentication_error(
    code: str, status: int, auth: bool
) -> None:
    import botocore.exceptions as bx

    response = {
        "Error": {"Code": code, "Message": "no"},
        "ResponseMetadata": {"HTTPStatusCode": status},
    }
    mapped = classify_error(bx.ClientError(response, "DescribeJobs"))  # type: ignore[arg-type]
    assert isinstance(mapped, SchedulerError) and not isinstance(mapped, TransientSchedulerError)
    assert isinstance(mapped, AuthenticationError) is auth
