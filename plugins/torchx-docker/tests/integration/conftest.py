"""Integration tests against a real Docker engine (``dev/docker up``).

Collected only when TORCHX_DOCKER_INTEGRATION=1 (``nox -s integration_docker`` sets it
after ``dev/docker up``), so the plugin's unit session never runs them. Every test talks
to the engine ``DOCKER_HOST`` names, with the busybox image of
``TORCHX_DEV_DOCKER_BUSYBOX_IMAGE``; each removes every container and network it made
(``engine_clean`` checks that nothing labelled by the scheduler is left).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if os.environ.get("TORCHX_DOCKER_INTEGRATION") != "1":
    collect_ignore_glob = ["test_*.py"]
else:
    sys.path.append(str(Path(__file__).parent))

LABEL = "torchx.pytorch.org/app-id"

if TYPE_CHECKING:
    from torchx.schedulers.testing.cli import TorchxCli


@pytest.fixture(scope="session")
def api() -> Iterator[Any]:
    """A docker-py low-level client of the engine under test (to check what is there)."""
    import docker

    try:
        client = docker.APIClient(**docker.utils.kwargs_from_env())
        from dockercmd import busybox

        client.inspect_image(busybox())
    except Exception as e:
        pytest.fail(
            f"no Docker engine with the busybox image at DOCKER_HOST={os.environ.get('DOCKER_HOST')!r}: "
            f'run `eval "$(dev/docker up)"` first ({e})'
        )
    yield client
    client.close()


def _ours(api: Any) -> tuple[set[str], set[str]]:
    apps = {c["Labels"][LABEL] for c in api.containers(all=True, filters={"label": [LABEL]})}
    nets = {n["Name"] for n in api.networks(filters={"label": [LABEL]})}
    return apps, nets


@pytest.fixture(autouse=True)
def engine_clean(api: Any) -> Iterator[None]:
    """Every test leaves the engine as it found it: no container or network of its own."""
    before = _ours(api)
    yield
    after = _ours(api)
    left_apps, left_nets = after[0] - before[0], after[1] - before[1]
    for app in left_apps:  # remove them anyway, then fail
        for c in api.containers(all=True, filters={"label": [f"{LABEL}={app}"]}):
            api.remove_container(c["Id"], force=True)
    for net in left_nets:
        api.remove_network(net)
    assert not left_apps and not left_nets, f"left behind: apps {left_apps}, networks {left_nets}"


@pytest.fixture
def cli(tmp_path: Path) -> Iterator[TorchxCli]:
    """The real ``torchx`` command (the kit's) on ``docker``; what it started is deleted
    (containers and network removed) when the test ends."""
    from torchx.schedulers.testing.cli import TorchxCli

    c = TorchxCli(tmp_path, scheduler="docker", timeout=120, ending="delete")
    yield c
    c.cleanup()
