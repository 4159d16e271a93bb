"""Integration tests against a real Kubernetes API server (``dev/k8s up``).

Collected only when TORCHX_K8S_INTEGRATION=1 (``nox -s integration_k8s`` sets it after
``dev/k8s up``, which exports KUBECONFIG), so the plugin's unit session never runs them.
They hold without a kubelet or controllers (pods then never appear, objects stay
without status) and with the project's stand-in for them: every check here is about
what the API server itself does with the scheduler's requests. Each test deletes the
objects it made (``made`` tracks them and checks that none is left).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if os.environ.get("TORCHX_K8S_INTEGRATION") != "1":
    collect_ignore_glob = ["test_*.py"]
else:
    sys.path.append(str(Path(__file__).parent))

if TYPE_CHECKING:
    from k8scmd import Made

    from torchx.runner import Runner
    from torchx.schedulers.testing.cli import TorchxCli


@pytest.fixture(scope="session")
def kube() -> Iterator[Any]:
    """The real client's ApiClient for KUBECONFIG (fails in one line without a server)."""
    from kubernetes import client, config

    try:
        api = config.new_client_from_config()
        client.VersionApi(api).get_code()
    except Exception as e:
        pytest.fail(f'no Kubernetes API server at KUBECONFIG: run `eval "$(dev/k8s up)"` ({e})')
    yield api
    api.close()


@pytest.fixture
def made(kube: Any) -> Iterator[Made]:
    from k8scmd import Made

    m = Made(kube)
    yield m
    m.delete_all()
    assert all(m.get(i) is None for i in m.ids)


@pytest.fixture
def cli(tmp_path: Path) -> Iterator[TorchxCli]:
    """The real ``torchx`` command (the kit's) on ``kubernetes``, in this test's own HOME."""
    from torchx.schedulers.testing.cli import TorchxCli

    c = TorchxCli(tmp_path, scheduler="kubernetes")
    yield c
    c.cleanup()


@pytest.fixture
def runner() -> Iterator[Runner]:
    """A Runner (session ``it``), closed afterwards."""
    from torchx.runner import get_runner

    with get_runner("it") as r:
        yield r
