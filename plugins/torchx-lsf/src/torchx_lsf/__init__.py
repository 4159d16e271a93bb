"""torchx-lsf: the ``lsf`` scheduler of TorchX (IBM Spectrum LSF), as a plugin of torchx-runner.

Installing this distribution registers the ``lsf`` scheduler through the ``torchx``
entry-point group (:mod:`torchx_lsf.plugin`); nothing here is imported until a job goes
to LSF. An app becomes one ``bsub`` job per replica, all tagged with the app id as their
LSF project (``bsub -P``), followed with ``bjobs`` and cancelled with ``bkill``::

    from torchx.runner import get_runner

    with get_runner() as runner:
        handle = runner.run_component(
            "dist.ddp", ["-j", "2x1", "--script", "train.py"], "lsf",
            cfg={"lsf_queue": "normal", "jobdir": "/shared/jobs"},
        )  # lsf://<session>/<app id>

Modules, named as in every TorchX scheduler plugin: :mod:`~torchx_lsf.scheduler` (the
Scheduler: which call does what), :mod:`~torchx_lsf.options` (run options),
:mod:`~torchx_lsf.request` (the bsub commands and replica scripts),
:mod:`~torchx_lsf.status` (LSF's answers as states), :mod:`~torchx_lsf.backend` (every
LSF command), :mod:`~torchx_lsf.logs`; and their helpers :mod:`~torchx_lsf.parse` (``bjobs -o`` output), :mod:`~torchx_lsf.jobdir` (the private
directory of an app's files, where torchx-runner's :mod:`torchx.schedulers.helpers.appstore`
keeps the AppDef for ``describe``) and :mod:`~torchx_lsf.commands` (running the LSF tools with timeouts).
"""

from torchx_lsf._version import __version__

__all__ = ["__version__"]
