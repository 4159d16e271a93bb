"""torchx-docker's plugin module: the ``docker`` scheduler by lazy reference, nothing heavy.

TorchX imports this module on every start (the ``torchx`` entry point names it), so it
imports only the ``hookimpl`` marker; the scheduler module (and the ``docker`` SDK,
which the scheduler imports inside its methods) is loaded the first time a job goes
to Docker.
"""

from __future__ import annotations

from collections.abc import Mapping

from torchx.specs.hookspecs import hookimpl


@hookimpl
def torchx_schedulers() -> Mapping[str, str]:
    """``docker``, and ``local_docker`` (upstream TorchX's name) for the same scheduler."""
    factory = "torchx_docker.scheduler:create_scheduler"
    return {"docker": factory, "local_docker": factory}
