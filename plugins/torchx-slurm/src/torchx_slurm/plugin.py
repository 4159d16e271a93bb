"""torchx-slurm's plugin module: the ``slurm`` scheduler by lazy reference, nothing heavy.

TorchX imports this module on every start (the ``torchx`` entry point names it), so
it imports only the ``hookimpl`` marker; the scheduler module is imported the first
time a job goes to Slurm.
"""

from __future__ import annotations

from collections.abc import Mapping

from torchx.specs.hookspecs import hookimpl


@hookimpl
def torchx_schedulers() -> Mapping[str, str]:
    """``slurm``: apps as heterogeneous sbatch jobs (upstream TorchX's name)."""
    return {"slurm": "torchx_slurm.scheduler:create_scheduler"}


@hookimpl
def torchx_quick_handlers() -> Mapping[str, str]:
    """``slurm``: ``torchx status|log|cancel`` of its apps without the spec types (see
    :mod:`torchx_slurm.quick`)."""
    return {"slurm": "torchx_slurm.quick:HANDLER"}
