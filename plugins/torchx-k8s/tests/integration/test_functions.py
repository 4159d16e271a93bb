"""torchx.functions on the real node of ``dev/k8s``: submit and map_array as Volcano
Jobs (``kubernetes``) and as AppWrappers (``kubernetes_mcad``, dispatched by the
stand-in's controller) of the python image, the call in the role's environment and the
result in the pod's log (the kit's checks, :mod:`torchx.schedulers.testing.functions`)."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from torchx.runner import get_runner
from torchx.schedulers.testing.functions import LogChannelChecks


class TestK8sFunctions(LogChannelChecks):
    scheduler = "kubernetes"
    node_var = "HOSTNAME"  # the pod's name
    image = os.environ.get("TORCHX_DEV_DOCKER_PYTHON_IMAGE", "torchx-dev/python:2")

    @pytest.fixture(autouse=True)
    def _delete_apps(self) -> Iterator[None]:
        """The calls' Volcano Jobs stay once ended (``torchx log`` reads their pods):
        each check deletes the ones it made."""
        with get_runner() as runner:
            before = {a.app_handle for a in runner.list(self.scheduler)}
        yield
        with get_runner() as runner:
            for app in runner.list(self.scheduler):
                if app.app_handle not in before:
                    runner.delete(app.app_handle)


class TestMcadFunctions(TestK8sFunctions):
    """The same on ``kubernetes_mcad``: each call an AppWrapper (the stand-in's controller
    dispatches it and makes its pod), the result in that pod's log."""

    scheduler = "kubernetes_mcad"
