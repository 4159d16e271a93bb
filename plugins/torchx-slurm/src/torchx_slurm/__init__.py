"""torchx-slurm: the ``slurm`` scheduler of TorchX, as a plugin of torchx-runner.

Installing this distribution registers the ``slurm`` scheduler through the
``torchx`` entry-point group (:mod:`torchx_slurm.plugin`); nothing here is imported
until a job goes to Slurm. An app becomes one heterogeneous ``sbatch`` job (one
group, so one node, per replica) that the scheduler follows with ``squeue`` and
``sacct``::

    from torchx.runner import get_runner

    with get_runner() as runner:
        handle = runner.run_component(
            "dist.ddp", ["-j", "2x1", "--script", "train.py"], "slurm",
            cfg={"partition": "gpu", "time": "1:00:00"},
        )  # slurm://<session>/<job id>

Modules, named as in every TorchX scheduler plugin: :mod:`~torchx_slurm.scheduler`
(the Scheduler: which call does what), :mod:`~torchx_slurm.options` (run options and
their checks), :mod:`~torchx_slurm.request` (the sbatch script),
:mod:`~torchx_slurm.status` (Slurm's answers as states), :mod:`~torchx_slurm.backend`
(every Slurm command) and :mod:`~torchx_slurm.logs`; with their helpers
:mod:`~torchx_slurm.parse` (squeue/sacct output, text and JSON),
:mod:`~torchx_slurm.commands` (running the Slurm tools with timeouts),
:mod:`~torchx_slurm.jobdir` and :mod:`~torchx_slurm.jobfiles` (the job directory).
"""

from torchx_slurm._version import __version__

__all__ = ["__version__"]
