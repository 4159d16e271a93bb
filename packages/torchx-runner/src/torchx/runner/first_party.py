"""Which first-party distribution provides each well-known scheduler, for "not installed" hints.

A user who types ``-s slurm`` without the Slurm plugin installed needs to hear which
distribution to install, not only that no scheduler has that name. These are the names
upstream TorchX ships and the distribution of this project that provides each
(``plugins/<distribution>`` in a clone of the repository).

>>> install_hint("slurm")
"scheduler 'slurm' is provided by torchx-slurm, which is not installed: pip install torchx-slurm (from a clone of the repository: pip install ./plugins/torchx-slurm)"
>>> install_hint("nope")
''
"""

from __future__ import annotations

__all__ = ["SCHEDULER_DISTRIBUTIONS", "install_hint"]

#: Scheduler name -> the first-party distribution that provides it.
SCHEDULER_DISTRIBUTIONS: dict[str, str] = {
    "slurm": "torchx-slurm",
    "docker": "torchx-docker",
    "local_docker": "torchx-docker",
    "kubernetes": "torchx-k8s",
    "kubernetes_mcad": "torchx-k8s",
    "aws_batch": "torchx-aws",
    "aws_sagemaker": "torchx-aws",
    "lsf": "torchx-lsf",
}


def install_hint(scheduler: str) -> str:
    """What to install for ``scheduler``, in one line; ``""`` if no first-party one has the name."""
    dist = SCHEDULER_DISTRIBUTIONS.get(scheduler)
    if dist is None:
        return ""
    return (
        f"scheduler {scheduler!r} is provided by {dist}, which is not installed: "
        f"pip install {dist} (from a clone of the repository: pip install ./plugins/{dist})"
    )
