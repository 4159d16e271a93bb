"""torchx.functions on the Docker engine of ``dev/docker``: submit and map_array as
containers of the python image, the call in the role's environment and the result in
the replica's log (the kit's checks, :mod:`torchx.schedulers.testing.functions`)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest

from torchx.schedulers.testing.functions import LogChannelChecks

LABEL = "torchx.pytorch.org/app-id"


class TestDockerFunctions(LogChannelChecks):
    scheduler = "docker"
    node_var = "HOSTNAME"  # the container's: the replica's name
    image = os.environ.get("TORCHX_DEV_DOCKER_PYTHON_IMAGE", "torchx-dev/python:2")

    @pytest.fixture(autouse=True)
    def _remove_apps(self, api: Any) -> Iterator[None]:
        """A docker app stays (exited) until deleted, as `torchx log` needs: the calls'
        apps are removed after each check, before the conftest checks the engine is clean."""
        before = {c["Id"] for c in api.containers(all=True, filters={"label": [LABEL]})}
        yield
        for c in api.containers(all=True, filters={"label": [LABEL]}):
            if c["Id"] not in before:
                api.remove_container(c["Id"], force=True)
