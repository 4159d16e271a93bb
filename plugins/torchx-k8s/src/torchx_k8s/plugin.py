"""torchx-k8s's plugin module: its schedulers by lazy reference, nothing heavy.

TorchX imports this module on every start (the ``torchx`` entry point names it), so it
imports only the ``hookimpl`` marker; the scheduler module (and the ``kubernetes``
client, which the scheduler imports inside its methods) is loaded the first time a
job goes to Kubernetes.
"""

from __future__ import annotations

from collections.abc import Mapping

from torchx.specs.hookspecs import hookimpl


@hookimpl
def torchx_schedulers() -> Mapping[str, str]:
    """``kubernetes``: apps as Volcano Jobs (or JobSets) on a cluster; ``kubernetes_mcad``:
    apps as AppWrappers (MCAD or the AppWrapper controller)."""
    return {
        "kubernetes": "torchx_k8s.scheduler:create_scheduler",
        "kubernetes_mcad": "torchx_k8s.mcad:create_scheduler",
    }
