"""torchx-lsf's plugin module: the ``lsf`` scheduler by lazy reference, nothing heavy.

TorchX imports this module on every start (the ``torchx`` entry point names it), so it
imports only the ``hookimpl`` marker; the scheduler module is imported the first time a
job goes to LSF.
"""

from __future__ import annotations

from collections.abc import Mapping

from torchx.specs.hookspecs import hookimpl


@hookimpl
def torchx_schedulers() -> Mapping[str, str]:
    """``lsf``: one bsub job per replica (upstream TorchX's name)."""
    return {"lsf": "torchx_lsf.scheduler:create_scheduler"}


@hookimpl
def torchx_quick_handlers() -> Mapping[str, str]:
    """``lsf``: ``torchx status|log|cancel`` of its apps without the spec types (see
    :mod:`torchx_lsf.quick`)."""
    return {"lsf": "torchx_lsf.quick:HANDLER"}
