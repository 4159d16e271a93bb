"""Helpers of the integration tests: the test image (the ``torchx`` command is the kit's
:class:`torchx.schedulers.testing.cli.TorchxCli`)."""

from __future__ import annotations

import os


def busybox() -> str:
    return os.environ.get("TORCHX_DEV_DOCKER_BUSYBOX_IMAGE", "torchx-dev/busybox:1")
